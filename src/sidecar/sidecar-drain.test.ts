/**
 * The sidecar's drain (--drain-timeout) on the fake clock: every end of a term waits for it (a
 * stop, a step-down for the app's health, a missed renewal), and an app that does not post in
 * time leaves the lease to expire. The app's post itself is checked with real processes in
 * test/sqlite/drain.test.ts.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { ManualHealth } from '../health/manual-health.js';
import type { Logger } from '../log.js';
import { Sidecar } from './sidecar.js';
import type { CandidateListener } from '../election/candidate-loop.js';
import { DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR } from '../election/elector-config.js';
import { resolveElectionConfig } from '../config/election-options.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

async function leading(over: { drainTimeoutMs: number; eligibility?: ManualHealth; listener?: CandidateListener }, clock: FakeClock) {
  const store = new MemoryLeaseStore();
  store.put('l', { holderIdentity: '', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 0 });
  const lines: string[] = [];
  const log: Logger = {
    debug() {},
    info: (msg, f) => lines.push(`${msg} ${JSON.stringify(f ?? {})}`),
    warn: (msg, f) => lines.push(`${msg} ${JSON.stringify(f ?? {})}`),
    error: (msg) => lines.push(msg),
  };
  const s = new Sidecar({ ...resolveElectionConfig({ ...T, lease: 'l', identity: 'me' }), store, log, clock, ...over });
  await s.start();
  await clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS);
  assert.equal(s.elector.isLeader(), true);
  return { s, store, lines, holder: () => store.peek('l')?.holderIdentity };
}

it('a step-down for the app health waits for the app to post, then releases', async () => {
  const clock = new FakeClock();
  const health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: 0 }, clock);
  health.healthy();
  const w = await leading({ drainTimeoutMs: 2_000, eligibility: health }, clock);
  const token = w.s.elector.snapshot().fencingToken!;
  health.unhealthy('connection refused');
  await clock.advance(1_500);
  assert.equal(w.s.elector.isLeader(), false, 'stepped down at once');
  assert.equal(w.holder(), 'me', 'not released while the drain waits');
  assert.equal(w.s['drain'].report(String(token)).code, 200);
  await clock.advance(0);
  assert.equal(w.holder(), '', 'released once the app said its work stopped');
  await w.s.stop();
});

it('no post within the drain timeout, however the term ended: the lease is left to expire, and no new term begins before it could have', async () => {
  const clock = new FakeClock();
  const started: number[] = [];
  const w = await leading({ drainTimeoutMs: 2_000, listener: { onStartedLeading: () => void started.push(clock.monotonic()) } }, clock);
  const token = w.s.elector.snapshot().fencingToken!;
  const renewedAt = w.s.elector.snapshot().lastRenewMonotonic!;
  // The renewals hang (the store stalls) until the leader steps down at its deadline.
  for (let i = 0; i < 6; i++) w.store.hangNext('*');
  await clock.advance(T.renewDeadlineMs);
  assert.equal(w.s.elector.isLeader(), false);
  // The gate runs once the request in flight is answered or times out; then it waits the drain timeout.
  const notStopped = () => w.lines.some((l) => l.startsWith('the work did not finish within drainTimeoutMs: the lease is left to expire, not released'));
  for (let waited = 0; !notStopped() && waited < T.leaseDurationMs; waited += 100) await clock.advance(100);
  assert.ok(notStopped(), w.lines.join('\n'));
  assert.match(w.s.elector.snapshot().standingAside?.reason ?? '', new RegExp(`the work of token ${token} was not seen to stop`));
  // The store answers again; the record is still its own, but no new term before the old one could expire.
  const expiresAt = renewedAt + T.leaseDurationMs;
  await clock.advance(expiresAt - clock.monotonic() - 1);
  assert.equal(w.s.elector.isLeader(), false, 'no new term while the old work may run');
  assert.equal(w.holder(), 'me', 'not released');
  for (let waited = 0; !w.s.elector.isLeader() && waited < 4 * T.leaseDurationMs; waited += 100) await clock.advance(100);
  assert.equal(w.s.elector.isLeader(), true, 'a new term once the old one could have expired');
  assert.equal(w.s.elector.snapshot().fencingToken, token + 1);
  assert.equal(started.length, 2);
  assert.ok(started[1]! >= expiresAt, `the new term began at ${started[1]} ms, its lease could expire at ${expiresAt} ms`);
  w.s.stop().catch(() => {});
  await clock.advance(2_000);
});
