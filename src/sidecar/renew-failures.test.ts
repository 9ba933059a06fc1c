import { it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { silentLogger } from '../log.js';
import { Sidecar } from './sidecar.js';
import { DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR } from '../election/elector-config.js';
import { resolveElectionConfig } from '../config/election-options.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

async function renewFailures(s: Sidecar): Promise<number> {
  const text = await s.metrics.registry.metrics();
  return Number(/^leasehold_renew_failures_total\{lease="l"\} (\d+)$/m.exec(text)?.[1]);
}

it('a renewal that hangs past renewDeadline counts as a failed renewal when the leader steps down', async () => {
  const clock = new FakeClock();
  const store = new MemoryLeaseStore();
  store.put('l', { holderIdentity: '', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 0 });
  const s = new Sidecar({ ...resolveElectionConfig({ ...T, lease: 'l', identity: 'me' }), store, log: silentLogger, clock });
  await s.start();
  await clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS); // its turn after the release it read
  assert.equal(s.elector.isLeader(), true);
  assert.equal(await renewFailures(s), 0);
  // Every call from now on hangs, as a request to an API server cut off by the network does.
  for (let i = 0; i < 20; i++) store.hangNext('*');
  await clock.advance(T.renewDeadlineMs + T.retryPeriodMs);
  assert.equal(s.elector.isLeader(), false);
  assert.equal(await renewFailures(s), 1, 'the unanswered renewal is counted once, at the step-down');
  // stop() waits for the request in flight, which the per-request timeout (renewDeadline / 2) ends.
  const stopped = s.stop();
  await clock.advance(T.renewDeadlineMs / 2);
  await stopped;
});
