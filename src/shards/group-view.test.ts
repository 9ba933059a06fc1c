import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { GroupView } from './group-view.js';
import type { VersionedGroupRecord } from '../backends/group-store.js';

const LEASE_MS = 15_000;
const POLL_GAP_MS = 6_400;

/**
 * A view watching session 4/1 (m4, on its own lease of 15 s) own shard 0: its shard record, and
 * its slot as a heartbeat writes it (renewTime now, so each one is a change the view sees).
 */
function m4OwnsShard0() {
  const clock = new FakeClock();
  const view = new GroupView(clock, 1, LEASE_MS, POLL_GAP_MS);
  const id = { slot: 4, session: 1 };
  const shard: VersionedGroupRecord = {
    record: { kind: 'shard', index: 0, holderIdentity: 'm4', owner: id, token: 65, acquireTime: null },
    version: '1',
  };
  const slot = (v: string): VersionedGroupRecord => ({
    record: { kind: 'member', index: 4, holderIdentity: 'm4', session: 1, state: 'active', renewTime: clock.now(), leaseDurationSeconds: 15 },
    version: v,
  });
  return { clock, view, id, shard, slot };
}

/** Lists `list` every 2 s, as a member does (no gap), for `ms`. */
async function listEvery2s(clock: FakeClock, view: GroupView, list: () => VersionedGroupRecord[], ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 2_000) {
    const step = Math.min(2_000, ms - t);
    await clock.advance(step);
    view.observe(list(), clock.monotonic());
  }
}

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
    // Lists every 2 s, as a member's (a gap past the poll gap would start the count over).
    await listEvery2s(clock, view, () => [shard], LEASE_MS - 1);
    assert.equal(view.live({ slot: 0, session: 3 }), true);
    await clock.advance(1);
    assert.equal(view.live({ slot: 0, session: 3 }), false);
    assert.equal(view.nextToken(0), 8, 'a new owner goes past the token seen');
  });

  it('a session back in its slot and out of it again counts as live for a lease duration from the second time (chaos seed 1031)', async () => {
    // The store replaced twice: the holder writes its shard's record back before its slot, so
    // another member notices the session out of its slot; then the slot comes back with the same
    // session, heartbeats on, and is gone again with the second replacement. Counted from the
    // first notice, the session was over at once and its shard taken while its work still ran.
    const { clock, view, id, shard, slot } = m4OwnsShard0();
    view.observe([shard], clock.monotonic());
    for (let i = 0; i < 16; i++) {
      await clock.advance(2_000);
      view.observe([slot(String(i)), shard], clock.monotonic());
      assert.equal(view.live(id), true, 'in its slot and heartbeating');
    }
    view.observe([shard], clock.monotonic());
    assert.equal(view.live(id), true, 'out of its slot again: counted from now, not from the first time');
    await listEvery2s(clock, view, () => [shard], LEASE_MS - 1);
    assert.equal(view.live(id), true);
    await clock.advance(1);
    assert.equal(view.live(id), false);
  });

  it('out of its slot, lists failing past the poll gap (it may have come back and heartbeated unseen): counted from the list after the gap', async () => {
    // Seed 1031 with the observer's lists failing while the slot was back: the first notice is
    // forgotten only when a list shows the session held again, and lists that fail for longer
    // than the poll gap may hide exactly that (as they may hide a record: absentSince starts
    // over), so that notice proves nothing about when the session last worked. (Hostile review.)
    const { clock, view, id, shard, slot } = m4OwnsShard0();
    view.observe([slot('1'), shard], clock.monotonic());
    await clock.advance(2_000);
    view.observe([shard], clock.monotonic()); // store replaced: out of its slot, noticed now
    // This member's lists fail for 20 s; meanwhile the holder writes its slot back (same
    // session) and heartbeats, then the store is replaced again.
    await clock.advance(20_000);
    view.observe([shard], clock.monotonic());
    assert.equal(view.live(id), true, 'its holder heartbeated moments ago: it may still work for a lease duration');
  });

  it('a store replaced under this member (interruptAbsence) starts a session-out-of-its-slot count over too', async () => {
    const { clock, view, id, shard } = m4OwnsShard0();
    view.observe([shard], clock.monotonic());
    await listEvery2s(clock, view, () => [shard], 16_000);
    // Lists every 2 s throughout, but the store was replaced under this member between two of
    // them: the slot may have been written back and heartbeated in the old store, unseen.
    view.interruptAbsence();
    await clock.advance(2_000);
    view.observe([shard], clock.monotonic());
    assert.equal(view.live(id), true, 'a replaced store may have hidden its slot back and heartbeating');
  });

  it('a live slot is free to the member that ended its session itself, and to nobody else: the next session, and that session still live for its shards', async () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, 1, LEASE_MS, POLL_GAP_MS);
    const slot: VersionedGroupRecord = {
      record: { kind: 'member', index: 2, holderIdentity: 'c', session: 5, state: 'active', renewTime: clock.now(), leaseDurationSeconds: LEASE_MS / 1000 },
      version: '9',
    };
    view.observe([slot], clock.monotonic());
    await clock.advance(1_000);
    view.observe([slot], clock.monotonic());
    const ended = { slot: 2, session: 5 };
    assert.equal(view.live(ended), true, 'the others may still count it live');
    assert.deepEqual(view.freeSlot(3, 2), { index: 0, current: null, session: 1 }, 'not free without being told it ended');
    assert.deepEqual(view.freeSlot(3, 2, { ...ended, identity: 'd' }), { index: 0, current: null, session: 1 }, "another identity's session is not its to end");
    assert.deepEqual(
      view.freeSlot(3, 2, { slot: 2, session: 4, identity: 'c' }),
      { index: 0, current: null, session: 1 },
      'an older session of its own is not the one there',
    );
    assert.deepEqual(
      view.freeSlot(3, 2, { ...ended, identity: 'c' }),
      { index: 2, current: slot, session: 6 },
      'the ended session’s slot, with the next session',
    );
  });
});
