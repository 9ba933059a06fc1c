import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidConfigError } from '../errors.js';
import { clockMarginMs, resolveElectionConfig, storeTimeouts, withStoreTimeouts } from './election-options.js';

const ok = { lease: 'billing', identity: 'me', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

describe('option rules: each refusal names its field, for the CLI to name its flag', () => {
  const cases: { name: string; over: Partial<Parameters<typeof resolveElectionConfig>[0]>; field: string }[] = [
    { name: 'lease name', over: { lease: 'Billing' }, field: 'lease' },
    { name: 'identity', over: { identity: 'a\nb' }, field: 'identity' },
    { name: 'leaseDuration not above renewDeadline', over: { leaseDurationMs: 10_000 }, field: 'leaseDuration' },
    { name: 'renewDeadline within the jittered retry', over: { retryPeriodMs: 9_000 }, field: 'renewDeadline' },
    { name: 'retryPeriod zero', over: { retryPeriodMs: 0 }, field: 'retryPeriod' },
    { name: 'contention window past the lease', over: { contentionWindowMs: 20_000 }, field: 'contentionWindow' },
    { name: 'whole seconds with the kubernetes backend', over: { backend: 'kubernetes', leaseDurationMs: 15_500 }, field: 'leaseDuration' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.throws(
        () => resolveElectionConfig({ ...ok, ...c.over }),
        (err: unknown) => err instanceof InvalidConfigError && err.field === c.field,
      );
    });
  }

  it('the rule alone, without the value, for a message of the CLI', () => {
    assert.throws(
      () => resolveElectionConfig({ ...ok, identity: '' }),
      (err: unknown) =>
        err instanceof InvalidConfigError && err.rule === 'must be non-empty, at most 253 characters, with no control characters (newlines, tabs, escapes)',
    );
  });
});

describe('the resolved configuration: checked once, defaults filled in', () => {
  it('fills in the contention window: 32 ms (a lease is longer: the clock margin alone is 50 ms)', () => {
    assert.equal(resolveElectionConfig(ok).contentionWindowMs, 32);
    assert.throws(
      () => resolveElectionConfig({ ...ok, leaseDurationMs: 20, renewDeadlineMs: 15, retryPeriodMs: 5 }),
      (err: unknown) =>
        err instanceof InvalidConfigError && /renewDeadlineMs must be at most leaseDurationMs − 51 \(50 ms \+ 0.1% of leaseDurationMs/.test(err.message),
    );
    assert.equal(resolveElectionConfig({ ...ok, contentionWindowMs: 0 }).contentionWindowMs, 0);
  });

  it('keeps the clock margin between the renew deadline and the expiry: 50 ms + 0.1% of the lease', () => {
    assert.equal(clockMarginMs(15_000), 65);
    assert.equal(resolveElectionConfig({ ...ok, leaseDurationMs: 15_000, renewDeadlineMs: 14_935 }).renewDeadlineMs, 14_935);
    assert.throws(
      () => resolveElectionConfig({ ...ok, leaseDurationMs: 15_000, renewDeadlineMs: 14_936 }),
      /renewDeadlineMs must be at most leaseDurationMs − 65 \(/,
    );
  });

  it("bounds SQLite's busy wait by the room between the renew deadline and the expiry, less the margin", () => {
    assert.deepEqual(storeTimeouts({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }), {
      requestTimeoutMs: 5_000,
      busyTimeoutMs: 1_000,
    });
    // 2000 − 1500 − 52: a renewal waiting on a lock cannot hold the event loop past expiry − margin.
    assert.equal(storeTimeouts({ leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 }).busyTimeoutMs, 448);
    assert.equal(storeTimeouts({ leaseDurationMs: 15_000, renewDeadlineMs: 14_935, retryPeriodMs: 2_000 }).busyTimeoutMs, 0);
  });

  it("fills a caller's store settings with the timeouts where it gave none, undefined included; refuses a busy wait past the bound", () => {
    const t = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 };
    assert.deepEqual(withStoreTimeouts({ db: 'x', busyTimeoutMs: undefined, requestTimeoutMs: undefined }, t), {
      db: 'x',
      requestTimeoutMs: 750,
      busyTimeoutMs: 448,
    });
    assert.equal(withStoreTimeouts({ busyTimeoutMs: 100 }, t).busyTimeoutMs, 100);
    for (const bad of [449, -1, Number.NaN])
      assert.throws(
        () => withStoreTimeouts({ busyTimeoutMs: bad }, t),
        (err: unknown) => err instanceof InvalidConfigError && err.field === 'busyTimeoutMs' && /448 ms with these timings/.test(err.message),
      );
  });

  it("keeps only the election's options: a backend named for its rule is not part of it", () => {
    assert.deepEqual(
      { ...resolveElectionConfig({ ...ok, backend: 'kubernetes' }) },
      { lease: 'billing', identity: 'me', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, contentionWindowMs: 32 },
    );
  });

  it('a caller tells a refusal in its own words, knowing the rule it is about', () => {
    const told: string[] = [];
    assert.throws(
      () =>
        resolveElectionConfig({ ...ok, leaseDurationMs: 15_500, backend: 'kubernetes' }, 'duration', (rule, err) => {
          told.push(`${rule}: ${err.rule}`);
          return new Error('told');
        }),
      /^Error: told$/,
    );
    assert.deepEqual(told, ['kubernetesLeaseDuration: the kubernetes backend stores leaseDurationSeconds as an integer: use whole seconds']);
  });
});

describe('configuration is refused with the rule it breaks, as durations name the options', () => {
  const cases: { name: string; over: Partial<Parameters<typeof resolveElectionConfig>[0]>; message: RegExp }[] = [
    { name: 'leaseDuration = renewDeadline', over: { leaseDurationMs: 10_000 }, message: /^leaseDuration must be greater than renewDeadline/ },
    { name: 'leaseDuration < renewDeadline', over: { leaseDurationMs: 5_000 }, message: /^leaseDuration must be greater than renewDeadline/ },
    { name: 'renewDeadline <= 1.2 × retryPeriod', over: { retryPeriodMs: 9_000 }, message: /^renewDeadline must be greater than retryPeriod\*JitterFactor/ },
    { name: 'retryPeriod 0', over: { retryPeriodMs: 0 }, message: /^retryPeriod must be greater than zero/ },
    { name: 'negative retryPeriod', over: { retryPeriodMs: -1 }, message: /^retryPeriod must be greater than zero/ },
    { name: 'lease name with capitals', over: { lease: 'Billing' }, message: /lease name "Billing" is invalid: it must be a DNS-1123 subdomain/ },
    { name: 'empty identity', over: { identity: '' }, message: /identity "" is invalid/ },
    { name: 'contention window past the lease', over: { contentionWindowMs: 15_001 }, message: /^contentionWindow must be between 0 and leaseDuration/ },
    { name: 'contention window not a number', over: { contentionWindowMs: Number.NaN }, message: /^contentionWindow must be between 0 and leaseDuration/ },
    { name: 'negative contention window', over: { contentionWindowMs: -1 }, message: /^contentionWindow must be from 0ms/ },
    {
      name: 'a leaseDuration of 1500 ms on a Lease store: refused rather than rounded',
      over: { backend: 'kubernetes', leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 200 },
      message: /use whole seconds/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.throws(
        () => resolveElectionConfig({ ...ok, ...c.over }, 'duration'),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'LEASEHOLD_ERR_INVALID_CONFIG');
          assert.match(err.message, c.message);
          return true;
        },
      );
    });
  }

  it('other stores keep milliseconds', () => {
    assert.doesNotThrow(() => resolveElectionConfig({ ...ok, leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 200, backend: 'sqlite' }));
  });
});
