/**
 * The sidecar's drain (--drain-timeout) on the fake clock: a step-down for the app's health
 * waits for it as a stop does, and each wait is cut where it would pass the renew deadline
 * (renew-deadline/2 after the last renewal is kept for the release). The app's post itself is
 * checked with real processes in test/sqlite/drain.test.ts.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { ManualHealth } from '../health/manual-health.js';
import type { Logger } from '../log.js';
import { Sidecar } from './sidecar.js';
import { DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR } from '../election/elector-config.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

async function leading(over: { drainTimeoutMs: number; eligibility?: ManualHealth }, clock: FakeClock) {
  const store = new MemoryLeaseStore();
  store.put('l', { holderIdentity: '', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 0 });
  const lines: string[] = [];
  const log: Logger = {
    debug() {},
    info: (msg, f) => lines.push(`${msg} ${JSON.stringify(f ?? {})}`),
    warn: (msg, f) => lines.push(`${msg} ${JSON.stringify(f ?? {})}`),
    error: (msg) => lines.push(msg),
  };
  const s = new Sidecar({ ...T, store, lease: 'l', identity: 'me', log, clock, ...over });
  await s.start();
  await clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS);
  assert.equal(s.elector.isLeader(), true);
  return { s, store, lines, holder: () => store.peek('l')?.holderIdentity };
}

it('a step-down for the app health waits for the drain, then releases (no post: at the drain timeout)', async () => {
  const clock = new FakeClock();
  const health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: 0 }, clock);
  health.healthy();
  const w = await leading({ drainTimeoutMs: 2_000, eligibility: health }, clock);
  health.unhealthy('connection refused');
  await clock.advance(1_999);
  assert.equal(w.s.elector.isLeader(), false, 'stepped down at once');
  assert.equal(w.holder(), 'me', 'not released while the drain waits');
  await clock.advance(1);
  assert.equal(w.holder(), '', 'released at the drain timeout');
  assert.ok(w.lines.some((l) => l.startsWith('the app did not say its leader work stopped within the drain timeout: releasing anyway')));
  await w.s.stop();
});

it('a stop late in the renewal period waits only until renew-deadline/2 after the last renewal', async () => {
  const clock = new FakeClock();
  // Longer than the CLI allows for these timings: the Sidecar still cuts each wait.
  const w = await leading({ drainTimeoutMs: 6_000 }, clock);
  await clock.advance(T.retryPeriodMs * 2 + 1_500); // two renewals, then 1.5 s more
  const leftMs = w.s.elector.snapshot().lastRenewMonotonic! + T.renewDeadlineMs / 2 - clock.monotonic();
  assert.ok(leftMs > 3_000 && leftMs < 4_000, String(leftMs));
  const stopped = w.s.stop();
  await clock.advance(leftMs - 1);
  assert.equal(w.holder(), 'me', w.lines.join('\n'));
  await clock.advance(1);
  await stopped;
  assert.equal(w.holder(), '', 'released half the renew deadline after the last renewal, before the drain timeout');
  assert.ok(w.lines.some((l) => l.startsWith('draining: waiting for the app to say its leader work stopped') && l.includes(`"boundMs":${Math.round(leftMs)}`)));
});
