import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop } from './candidate-loop.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { resolveElectionConfig } from '../config/election-options.js';

const LEASE = 'reports';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** Leads from a released record, lets 20 s of renewals pass, then stops: the term given up goes through its gate and is released. */
async function leadThenRelease(releaseKeepsAcquireTime: boolean | undefined) {
  const clock = new FakeClock();
  const store = new MemoryLeaseStore();
  const old = new Date('2026-12-02T08:00:00.000Z');
  store.put(LEASE, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: old, renewTime: old, leaseTransitions: 3 });
  const elector = new CandidateLoop({
    ...resolveElectionConfig({ ...timings, lease: LEASE, identity: 'me' }),
    store,
    clock,
    random: () => 0,
    releaseKeepsAcquireTime,
  });
  const began = clock.now();
  assert.equal(await elector.tryAcquireOrRenew(), true);
  for (let i = 0; i < 10; i++) {
    await clock.advance(2_000);
    assert.equal(await elector.tryAcquireOrRenew(), true);
  }
  await elector.stop();
  assert.equal(store.peek(LEASE)!.holderIdentity, '', 'released');
  return { began, releasedAt: clock.now(), record: store.peek(LEASE)! };
}

describe('release with releaseKeepsAcquireTime', () => {
  it('keeps the term’s acquireTime: the released record still says when the last term began', async () => {
    const { began, releasedAt, record } = await leadThenRelease(true);
    assert.equal(record.holderIdentity, '');
    assert.equal(record.leaseDurationSeconds, 1);
    assert.equal(record.leaseTransitions, 4, 'the token is unchanged by the release');
    assert.equal(record.acquireTime?.getTime(), began.getTime());
    assert.equal(record.renewTime?.getTime(), releasedAt.getTime());
  });

  it('by default releases as client-go does: both times are now', async () => {
    const { releasedAt, record } = await leadThenRelease(undefined);
    assert.equal(record.acquireTime?.getTime(), releasedAt.getTime());
    assert.equal(record.renewTime?.getTime(), releasedAt.getTime());
  });
});
