/**
 * A listener is someone else's code (the app's callbacks, the sidecar's status writer): whatever
 * it throws or rejects with is reported and goes no further. Before the guard, a throwing
 * onNewLeader aborted the very write that made this candidate leader, so it wrote the lease on
 * every attempt and never led; a rejecting one crashed the process.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop, type CandidateListener } from './candidate-loop.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { BackendUnavailableError } from '../errors.js';
import type { LeaseRecord } from '../backends/lease-store.js';
import type { Logger } from '../log.js';
import { resolveElectionConfig } from '../config/election-options.js';

const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const CALLBACKS = ['onNewLeader', 'onStartedLeading', 'onRenewed', 'onSlowPath', 'onRenewFailed', 'onStoppedLeading'] as const;
type Callback = (typeof CALLBACKS)[number];

function released(): LeaseRecord {
  const t = new Date('2026-12-02T08:59:00.000Z');
  return { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: t, renewTime: t, leaseTransitions: 0 };
}

/** A listener whose `failing` callbacks throw (or reject, async), the others only record that they ran. */
function listener(failing: readonly Callback[], mode: 'throw' | 'reject', heard: string[]): CandidateListener {
  const l: Record<string, (...args: unknown[]) => unknown> = {};
  for (const name of CALLBACKS) {
    l[name] = (...args: unknown[]) => {
      heard.push(`${name}(${typeof args[0] === 'string' ? args[0] : ''})`);
      if (!failing.includes(name)) return;
      if (mode === 'throw') throw new Error(`${name} broke`);
      return Promise.reject(new Error(`${name} broke`));
    };
  }
  return l;
}

describe('a listener that throws or rejects never disturbs the election, and is reported', () => {
  const cases: { failing: readonly Callback[]; mode: 'throw' | 'reject' }[] = [
    ...CALLBACKS.flatMap((name) => (['throw', 'reject'] as const).map((mode) => ({ failing: [name], mode }))),
    { failing: CALLBACKS, mode: 'throw' },
    { failing: CALLBACKS, mode: 'reject' },
  ];
  for (const { failing, mode } of cases) {
    it(`${failing.length === 1 ? failing[0] : 'every callback'} ${mode === 'throw' ? 'throws' : 'rejects'}: the same backend calls, leader, renewals, release`, async () => {
      const clock = new FakeClock();
      const store = new MemoryLeaseStore();
      const heard: string[] = [];
      const errors: string[] = [];
      const log: Logger = { debug() {}, info() {}, warn() {}, error: (msg, f) => errors.push(`${msg} ${String(f?.callback)}: ${String(f?.error)}`) };
      const elector = new CandidateLoop({
        ...resolveElectionConfig({ ...timings, lease: LEASE, identity: 'me' }),
        store,
        clock,
        random: () => 0,
        log,
        listener: listener(failing, mode, heard),
      });
      store.put(LEASE, released());
      store.clearCalls();

      const results: boolean[] = [];
      results.push(await elector.tryAcquireOrRenew()); // acquire: get, update
      store.failNext('update', new BackendUnavailableError('update timed out'));
      results.push(await elector.tryAcquireOrRenew()); // fast path fails: get, update
      store.failNext('*', new BackendUnavailableError('update timed out'));
      store.failNext('*', new BackendUnavailableError('get timed out'));
      results.push(await elector.tryAcquireOrRenew()); // fast path and read fail: a failed renewal, still leading
      const stillLeading = elector.isLeader();
      await elector.stop(); // steps down, then releases
      await clock.advance(0); // lets the rejections be handled

      assert.deepEqual(results, [true, true, false]);
      assert.equal(stillLeading, true, 'a failed renewal inside renewDeadline keeps the term');
      assert.deepEqual(store.calls, ['get', 'update', 'update', 'get', 'update', 'update', 'get', 'update']);
      assert.equal(store.peek(LEASE)?.holderIdentity, '', 'released');
      assert.equal(store.peek(LEASE)?.leaseTransitions, 1, 'one term, token 1');
      assert.deepEqual(heard, [
        'onNewLeader()',
        'onNewLeader(me)',
        'onStartedLeading()',
        'onSlowPath()',
        'onRenewed()',
        'onSlowPath()',
        'onRenewFailed(get timed out)',
        'onStoppedLeading(shutting down)',
        'onNewLeader()',
      ]);
      const want = heard.filter((h) => failing.some((name) => h.startsWith(`${name}(`))).map((h) => h.replace(/\(.*/, ''));
      assert.deepEqual(
        errors,
        want.map((name) => `listener callback failed ${name}: ${name} broke`),
      );
    });
  }
});
