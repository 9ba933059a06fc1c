import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidConfigError } from '../errors.js';
import { validateElection } from './election-options.js';

const ok = { lease: 'billing', identity: 'me', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

describe('option rules: each refusal names its field, for the CLI to name its flag', () => {
  const cases: { name: string; over: Partial<Parameters<typeof validateElection>[0]>; field: string }[] = [
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
        () => validateElection({ ...ok, ...c.over }),
        (err: unknown) => err instanceof InvalidConfigError && err.field === c.field,
      );
    });
  }

  it('the rule alone, without the value, for a message of the CLI', () => {
    assert.throws(
      () => validateElection({ ...ok, identity: '' }),
      (err: unknown) =>
        err instanceof InvalidConfigError && err.rule === 'must be non-empty, at most 253 characters, with no control characters (newlines, tabs, escapes)',
    );
  });
});
