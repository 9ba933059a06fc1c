/**
 * The chart's drain values, rendered by the real helm: the example Deployment's sidecar drains
 * (`app.drainTimeout`, "auto" from the timings) and its app runs the script that posts its stop
 * (test/sqlite/example-app-drain.test.ts runs it),
 * while a pod of another chart that includes the `leasehold.sidecar` template gets
 * `--drain-timeout` only from `drain.timeout` (off by default); a drain the sidecar would refuse
 * fails at template time with one line naming the value and the rule.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { REPO, tempDir } from '../support/cli.js';
import { buildTool } from '../support/build-tool.js';

const CHART = join(REPO, 'deploy/helm/leasehold');

/** A pod of "your chart", as docs/chart.md, "Your own chart", shows it. */
const USER_POD = `apiVersion: v1
kind: Pod
metadata:
  name: user-pod
spec:
  containers:
    - name: user-app
      image: my-app:1.2.3
    {{- include "leasehold.sidecar" (dict "root" . "native" false) | nindent 4 }}
  volumes:
    {{- include "leasehold.volume" . | nindent 4 }}
`;

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string }[];
}
interface PodSpec {
  containers: Container[];
}
interface Doc {
  kind: string;
  metadata: { name: string };
  spec?: PodSpec & { template?: { spec: PodSpec } };
}

describe("the chart's drain values", () => {
  let helmBin = '';
  const dir = tempDir('leasehold-chart-drain-');
  const chart = join(dir.path, 'leasehold');
  before(() => {
    helmBin = buildTool('build-helm.sh');
    // A copy of the chart with one more template: a pod that includes the sidecar as yours would.
    cpSync(CHART, chart, { recursive: true });
    writeFileSync(join(chart, 'templates/user-pod.yaml'), USER_POD);
  });
  after(() => dir.cleanup());

  function helmTemplate(set: string[]) {
    const home = join(dir.path, 'helm');
    return spawnSync(helmBin, ['template', 'demo', chart, '--namespace', 'apps', '--kube-version', '1.31.0', ...set.flatMap((s) => ['--set', s])], {
      encoding: 'utf8',
      env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home },
    });
  }

  function render(set: string[] = []): Doc[] {
    const r = helmTemplate(set);
    assert.equal(r.status, 0, r.stderr);
    return (loadAll(r.stdout) as (Doc | null)[]).filter((d): d is Doc => d !== null);
  }

  const sidecarOf = (spec: PodSpec) => spec.containers.find((c) => c.name === 'leasehold')!;
  const drainArgs = (c: Container) => (c.args ?? []).filter((a) => a.startsWith('--drain-timeout'));
  /** The --drain-timeout arguments of the example Deployment's sidecar and of the user pod's. */
  function drains(set: string[] = []) {
    const docs = render(set);
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    const pod = docs.find((d) => d.kind === 'Pod' && d.metadata.name === 'user-pod')!;
    return { example: drainArgs(sidecarOf(deployment.spec!.template!.spec)), user: drainArgs(sidecarOf(pod.spec!)) };
  }

  it('by default the example drains for the longest the timings allow, a pod of yours does not drain', () => {
    assert.deepEqual(drains(), { example: ['--drain-timeout=3s'], user: [] });
    // renewDeadline/2 − retryPeriod follows the timings: 1500ms/2 − 400ms.
    assert.deepEqual(drains(['leasehold.leaseDuration=2s', 'leasehold.renewDeadline=1500ms', 'leasehold.retryPeriod=400ms']), {
      example: ['--drain-timeout=350ms'],
      user: [],
    });
    // No drain fits: "auto" gives none rather than a value the sidecar would refuse.
    assert.deepEqual(drains(['leasehold.leaseDuration=4s', 'leasehold.renewDeadline=3s', 'leasehold.retryPeriod=2s']), { example: [], user: [] });
    // Your own command may not post: "auto" gives it none, a duration is taken as given.
    assert.deepEqual(drains(['app.command={sh,-c,sleep 1d}']), { example: [], user: [] });
    assert.deepEqual(drains(['app.command={sh,-c,sleep 1d}', 'app.drainTimeout=1s']), { example: ['--drain-timeout=1s'], user: [] });
  });

  it('app.drainTimeout and drain.timeout each set their own pods', () => {
    assert.deepEqual(drains(['app.drainTimeout=2s']), { example: ['--drain-timeout=2s'], user: [] });
    assert.deepEqual(drains(['app.drainTimeout=']), { example: [], user: [] });
    assert.deepEqual(drains(['drain.timeout=1500ms']), { example: ['--drain-timeout=3s'], user: ['--drain-timeout=1500ms'] });
    assert.deepEqual(drains(['drain.timeout=0s', 'app.drainTimeout=0s']), { example: ['--drain-timeout=0s'], user: ['--drain-timeout=0s'] });
  });

  it("the example app runs the chart's script, told the sidecar's port", () => {
    const app = render(['leasehold.port=4141'])
      .find((d) => d.kind === 'Deployment')!
      .spec!.template!.spec.containers.find((c) => c.name === 'app')!;
    const script = readFileSync(join(CHART, 'files/example-app.sh'), 'utf8');
    assert.deepEqual(app.command, ['sh', '-c', script]);
    assert.match(script, /--post-data '' "\$sidecar\/leader\/stopped\?token=\$token"/);
    assert.deepEqual(app.env, [{ name: 'SIDECAR_URL', value: 'http://127.0.0.1:4141' }]);
  });

  it('a drain the sidecar would refuse fails at template time, naming the value and the bound', () => {
    const cases: [string[], RegExp][] = [
      [
        ['app.drainTimeout=4s'],
        /app\.drainTimeout "4s" must be at most leasehold\.renewDeadline\/2 − leasehold\.retryPeriod \(3s\): the release must still be sent before the renew deadline/,
      ],
      [['drain.timeout=3001ms'], /drain\.timeout "3001ms" must be at most leasehold\.renewDeadline\/2 − leasehold\.retryPeriod \(3s\)/],
      [
        ['leasehold.leaseDuration=4s', 'leasehold.renewDeadline=3s', 'leasehold.retryPeriod=2s', 'app.drainTimeout=1ms'],
        /app\.drainTimeout "1ms" must be at most .*\(-500ms, so none fits\)/,
      ],
      [['app.drainTimeout=0.5ms'], /app\.drainTimeout "0\.5ms" must be a whole number of milliseconds/],
      [['app.drainTimeout=soon'], /\/app\/drainTimeout': 'soon' does not match pattern/],
    ];
    for (const [set, err] of cases) {
      const r = helmTemplate(set);
      assert.notEqual(r.status, 0, `${set.join(' ')} rendered`);
      assert.match(r.stderr, err);
    }
    // The bound itself is allowed.
    assert.deepEqual(drains(['app.drainTimeout=3s', 'drain.timeout=3000ms']), { example: ['--drain-timeout=3s'], user: ['--drain-timeout=3000ms'] });
  });
});
