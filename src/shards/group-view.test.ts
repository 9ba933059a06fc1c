import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { GroupView } from './group-view.js';
import type { VersionedGroupRecord } from '../backends/group-store.js';

const LEASE_MS = 15_000;
const POLL_GAP_MS = 6_400;

describe("a member's view of its group", () => {
  it('an absent shard may be created after a lease duration of lists that kept seeing it absent', async () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, 1, LEASE_MS, POLL_GAP_MS);
    for (let t = 0; t <= LEASE_MS; t += 2_000) {
      view.observe([], clock.monotonic());
      await clock.advance(2_000);
    }
    view.observe([], clock.monotonic());
    assert.equal(view.absentLongEnough(0), true);
  });

  it('a gap in its lists longer than the poll gap starts the absence wait over: the record may have lived and died unseen', async () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, 1, LEASE_MS, POLL_GAP_MS);
    view.observe([], clock.monotonic());
    // Lists fail for 11 s (within a lease duration, past the poll gap): a shard record could
    // have been created, owned and deleted meanwhile, its owner still working.
    await clock.advance(11_000);
    view.observe([], clock.monotonic());
    const resumed = clock.monotonic();
    while (clock.monotonic() - resumed < LEASE_MS - 2_000) {
      await clock.advance(2_000);
      view.observe([], clock.monotonic());
    }
    assert.equal(view.absentLongEnough(0), false, 'the wait counts from the end of the gap');
    await clock.advance(2_000);
    view.observe([], clock.monotonic());
    assert.equal(view.absentLongEnough(0), true);
  });

  it('a session out of its slot counts as live for a lease duration from the moment this member noticed', async () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, 1, LEASE_MS, POLL_GAP_MS);
    const shard: VersionedGroupRecord = {
      record: { kind: 'shard', index: 0, holderIdentity: 'a', owner: { slot: 0, session: 3 }, token: 7, acquireTime: null },
      version: '1',
    };
    await clock.advance(100_000);
    view.observe([shard], clock.monotonic());
    assert.equal(view.live({ slot: 0, session: 3 }), true, 'never seen in its slot: counted from now');
    await clock.advance(LEASE_MS - 1);
    view.observe([shard], clock.monotonic());
    assert.equal(view.live({ slot: 0, session: 3 }), true);
    await clock.advance(1);
    assert.equal(view.live({ slot: 0, session: 3 }), false);
    assert.equal(view.nextToken(0), 8, 'a new owner goes past the token seen');
  });
});
