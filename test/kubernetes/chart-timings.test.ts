/**
 * The chart refuses, at `helm template`, the timings the sidecar would refuse at start: without
 * that check the chart renders and every pod's sidecar exits 2 in a crash loop. Each case is
 * also put to the CLI's own rules (parseDuration, validateTimings), so the two cannot drift.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, tempDir } from '../support/cli.js';
import { buildTool } from '../support/build-tool.js';
import { durationRangeError, parseDuration } from '../../src/config/duration.js';
import { validateTimings } from '../../src/config/election-options.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
const DEFAULTS = { leaseDuration: '15s', renewDeadline: '10s', retryPeriod: '2s' };
type Timings = Partial<typeof DEFAULTS>;

/** What the CLI says of these timings: null when it accepts them. */
function cliRefusal(t: Timings): string | null {
  const all = { ...DEFAULTS, ...t };
  const ms = { leaseDurationMs: 0, renewDeadlineMs: 0, retryPeriodMs: 0 };
  for (const key of ['leaseDuration', 'renewDeadline', 'retryPeriod'] as const) {
    const v = parseDuration(all[key]);
    if (v === null) return `${key} is not a duration`;
    const why = durationRangeError(v);
    if (why) return `${key} ${why}`;
    ms[`${key}Ms`] = v;
  }
  try {
    validateTimings(ms);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

describe('the chart refuses timings the sidecar would refuse', () => {
  let helmBin = '';
  const dir = tempDir('leasehold-chart-timings-');
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });
  after(() => dir.cleanup());

  function template(t: Timings, extra: string[] = []) {
    const home = join(dir.path, 'helm');
    const set = [...Object.entries(t).map(([k, v]) => `leasehold.${k}=${v}`), ...extra];
    return spawnSync(helmBin, ['template', 'demo', CHART, '--namespace', 'apps', '--kube-version', '1.31.0', ...set.flatMap((s) => ['--set', s])], {
      encoding: 'utf8',
      env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home },
    });
  }

  const refused: [Timings, RegExp][] = [
    [{ renewDeadline: '15s' }, /leasehold\.leaseDuration must be greater than leasehold\.renewDeadline.*\(got leaseDuration 15s, renewDeadline 15s\)/],
    [
      { leaseDuration: '1m30s', renewDeadline: '2m' },
      /leasehold\.leaseDuration must be greater than leasehold\.renewDeadline.*\(got leaseDuration 1m30s, renewDeadline 2m\)/,
    ],
    [{ renewDeadline: '2s', retryPeriod: '2s' }, /leasehold\.renewDeadline must be greater than leasehold\.retryPeriod × 1\.2.*retryPeriod 2s × 1\.2 = 2400ms/],
    // Exactly 1.2 × retryPeriod is still refused: the rule is strict.
    [{ renewDeadline: '2400ms', retryPeriod: '2s' }, /leasehold\.renewDeadline must be greater than leasehold\.retryPeriod × 1\.2/],
    [{ renewDeadline: '3ms', retryPeriod: '3ms' }, /retryPeriod 3ms × 1\.2 = 3\.6ms/],
    [{ retryPeriod: '0s' }, /leasehold\.retryPeriod "0s" must be from 1ms to 2147483647ms/],
    [{ retryPeriod: '0.5ms' }, /leasehold\.retryPeriod "0\.5ms" must be a whole number of milliseconds/],
    [{ renewDeadline: '1.0001s' }, /leasehold\.renewDeadline "1\.0001s" must be a whole number of milliseconds/],
    [{ renewDeadline: '1.0000000000000001s', retryPeriod: '100ms' }, /leasehold\.renewDeadline "1\.0000000000000001s" must be a whole number of milliseconds/],
    [{ leaseDuration: '600h', renewDeadline: '10s' }, /leasehold\.leaseDuration "600h" must be from 1ms to 2147483647ms/],
    [
      { leaseDuration: '1h', renewDeadline: '59m59.999s', retryPeriod: '0.001m' },
      /leasehold\.renewDeadline must be at most leasehold\.leaseDuration − 3650ms \(50 ms \+ 0\.1% of leaseDuration.*\(got leaseDuration 60m, renewDeadline 3599999ms\)/,
    ],
    [{ leaseDuration: '2s', renewDeadline: '1949ms', retryPeriod: '1s' }, /leasehold\.renewDeadline must be at most leasehold\.leaseDuration − 52ms/],
  ];

  for (const [t, message] of refused) {
    it(`refuses ${JSON.stringify(t)} with one line naming the values and the rule, as the CLI does`, () => {
      assert.notEqual(cliRefusal(t), null, 'the CLI refuses these timings too');
      const r = template(t);
      assert.notEqual(r.status, 0, `rendered: ${JSON.stringify(t)}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.split('\n').filter((l) => l.startsWith('Error:')).length, 1, r.stderr);
    });
  }

  it('refuses them with app.enabled=false too: another chart may include the sidecar template', () => {
    const r = template({ renewDeadline: '15s' }, ['app.enabled=false']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /leasehold\.leaseDuration must be greater than leasehold\.renewDeadline/);
  });

  const accepted: Timings[] = [
    {},
    { renewDeadline: '2401ms', retryPeriod: '2s' },
    { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' },
    { leaseDuration: '1m', renewDeadline: '45.5s', retryPeriod: '1.25s' },
    { leaseDuration: '1h', renewDeadline: '59m56.35s', retryPeriod: '0.001m' },
    // 1005 ms: exact in the chart and the CLI alike (a float product would make it 1004.999...).
    { renewDeadline: '1.005s', retryPeriod: '0.835s' },
    // Leading zeros: the sidecar reads 15s; more than 10 digits must not count as too long.
    { leaseDuration: '00000000015s' },
  ];
  for (const t of accepted) {
    it(`renders ${JSON.stringify(t)}, which the CLI accepts, passing the values unchanged`, () => {
      assert.equal(cliRefusal(t), null);
      const r = template(t);
      assert.equal(r.status, 0, r.stderr);
      const all = { ...DEFAULTS, ...t };
      for (const [flag, key] of [
        ['--lease-duration', 'leaseDuration'],
        ['--renew-deadline', 'renewDeadline'],
        ['--retry-period', 'retryPeriod'],
      ] as const)
        assert.ok(r.stdout.includes(`- ${flag}=${all[key]}\n`), `${flag}=${all[key]} in the Deployment`);
    });
  }
});
