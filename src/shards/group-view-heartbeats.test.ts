/**
 * GroupView.observeChanges with reads that bring heartbeats (docs/design.md, "Quiet turns"): one
 * view fed the whole group at every list, the other only what changed, must judge everything
 * alike at every step; and the view's structure epoch moves exactly when a read can change a
 * plan's facts: a heartbeat only when it revives a session or is the first seen of its slot.
 * (group-view-changes.test.ts compares reads of every other kind of change.)
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { prng } from '../../test/support/prng.js';
import { GroupView, type SessionId } from './group-view.js';
import type { MemberSlot, VersionedGroupRecord } from '../backends/group-store.js';

const LEASE_MS = 15_000;
const POLL_GAP_MS = 6_400;
const N = 12;
const SLOTS = 4;

/**
 * A group as a store holds it: four slots (slot 3 on a 30 s lease), shards 0..N−1 owned round
 * the slots but shard 10 (absent) and shard 11 (naming session 7/2, never in a slot).
 */
function group(clock: FakeClock) {
  let version = 0;
  const slots = new Map<number, VersionedGroupRecord<MemberSlot>>();
  const sessions = new Map<number, number>();
  const heartbeat = (i: number): VersionedGroupRecord<MemberSlot> => {
    const session = sessions.get(i) ?? 1;
    const v: VersionedGroupRecord<MemberSlot> = {
      record: { kind: 'member', index: i, holderIdentity: `m${i}`, session, state: 'active', renewTime: clock.now(), leaseDurationSeconds: i === 3 ? 30 : 15 },
      version: String(++version),
    };
    slots.set(i, v);
    return v;
  };
  /** Slot `i`'s member joins again with the next session (its shards still name the last). */
  const rejoin = (i: number): VersionedGroupRecord<MemberSlot> => {
    sessions.set(i, (sessions.get(i) ?? 1) + 1);
    return heartbeat(i);
  };
  for (let i = 0; i < SLOTS; i++) heartbeat(i);
  const shards: VersionedGroupRecord[] = [];
  for (let s = 0; s < N; s++) {
    if (s === 10) continue;
    const owner = s === 11 ? { slot: 7, session: 2 } : { slot: s % SLOTS, session: 1 };
    shards.push({ record: { kind: 'shard', index: s, holderIdentity: `m${owner.slot}`, owner, token: s + 1, acquireTime: null }, version: String(++version) });
  }
  const all = (): VersionedGroupRecord[] => [...slots.values(), ...shards];
  return { heartbeat, rejoin, all };
}

/** Every judgment a plan or a take reads off a view, at this moment. */
function judgments(view: GroupView) {
  const sessions: SessionId[] = [...Array(SLOTS).keys()].flatMap((slot) => [1, 2, 3].map((session) => ({ slot, session })));
  sessions.push({ slot: 7, session: 2 });
  return {
    live: sessions.map((id) => view.live(id)),
    liveUntil: sessions.map((id) => view.liveUntilMono(id)),
    witnessed: [...Array(SLOTS).keys()].map((i) => view.witnessed(i)),
    slots: [...Array(SLOTS).keys()].map((i) => view.slot(i)?.version ?? null),
    liveSlots: view.liveSlots().map((v) => v.record.index),
    absent: [...Array(N).keys()].map((s) => [view.absentLongEnough(s), view.absentWaitLeftMs(s)]),
    tokens: [...Array(N).keys()].map((s) => view.nextToken(s)),
    freeSlot: view.freeSlot(SLOTS + 1, 0),
    fresh: view.freshWithin(2_000),
    nextFlip: view.nextFlipMono(2_000),
    owners: view.ownersEpoch,
  };
}

describe("a member's view takes in reads that bring only heartbeats", () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    it(`judges as the view fed the whole group, at every list (seed ${seed})`, async () => {
      const rand = prng(seed);
      const clock = new FakeClock();
      const g = group(clock);
      const whole = new GroupView(clock, N, LEASE_MS, POLL_GAP_MS);
      const changes = new GroupView(clock, N, LEASE_MS, POLL_GAP_MS);
      whole.observe(g.all(), clock.monotonic());
      changes.observe(g.all(), clock.monotonic());
      let quiet = 0;
      // Slot 2 stops heartbeating for a while in each run, past its lease, and comes back.
      const silentFrom = 20 + Math.floor(rand() * 20);
      for (let step = 0; step < 120; step++) {
        // Now and then a gap past the poll gap: the absence waits start over, by a whole observe.
        await clock.advance(rand() < 0.05 ? POLL_GAP_MS + 1 : Math.floor(rand() * 2_500));
        // Now and then this member (slot 0) joins again, a write of its own both views take in:
        // its shards still name its last session, which the next whole observe sees out of its slot.
        if (rand() < 0.03) {
          const v = g.rejoin(0);
          whole.wrote(v);
          changes.wrote(v);
        }
        const beating = [...Array(SLOTS).keys()].filter((i) => rand() < 0.6 && !(i === 2 && step >= silentFrom && step < silentFrom + 25));
        const changed = beating.map((i) => g.heartbeat(i));
        const sent = clock.monotonic();
        whole.observe(g.all(), sent);
        if (changes.observeChanges(changed, sent)) quiet++;
        else changes.observe(g.all(), sent);
        assert.deepEqual(judgments(changes), judgments(whole), `step ${step}`);
      }
      assert.ok(quiet > 60, `most reads were taken in as heartbeats (${quiet} of 120)`);
    });
  }

  it('the structure epoch moves for anything but a heartbeat of a held slot', async () => {
    const cases: [string, (hb: VersionedGroupRecord<MemberSlot>) => VersionedGroupRecord][] = [
      ['another state', (hb) => ({ ...hb, record: { ...hb.record, state: 'leaving' } })],
      ['another session', (hb) => ({ ...hb, record: { ...hb.record, session: 2 } })],
      ['another lease duration', (hb) => ({ ...hb, record: { ...hb.record, leaseDurationSeconds: 20 } })],
      ['released', (hb) => ({ ...hb, record: { ...hb.record, holderIdentity: '' } })],
      ['a slot not held before', (hb) => ({ ...hb, record: { ...hb.record, index: 5 } })],
      [
        'a shard record',
        () => ({ record: { kind: 'shard', index: 10, holderIdentity: 'm1', owner: { slot: 1, session: 1 }, token: 1, acquireTime: null }, version: '99' }),
      ],
    ];
    for (const [what, changed] of cases) {
      const clock = new FakeClock();
      const g = group(clock);
      const view = new GroupView(clock, N, LEASE_MS, POLL_GAP_MS);
      view.observe(g.all(), clock.monotonic());
      await clock.advance(1_000);
      assert.equal(view.observeChanges([g.heartbeat(0), g.heartbeat(1)], clock.monotonic()), true, what);
      const epoch = view.structureEpoch;
      await clock.advance(1_000);
      assert.equal(view.observeChanges([g.heartbeat(0), changed(g.heartbeat(1))], clock.monotonic()), true, what);
      assert.notEqual(view.structureEpoch, epoch, what);
    }
  });

  it('the structure epoch stays for a live, witnessed heartbeat, and moves for one that revives a session or is the first seen', async () => {
    const clock = new FakeClock();
    const g = group(clock);
    const view = new GroupView(clock, N, LEASE_MS, POLL_GAP_MS);
    view.observe(g.all(), clock.monotonic());
    let epoch = view.structureEpoch;
    await clock.advance(1_000);
    assert.equal(view.observeChanges([g.heartbeat(0)], clock.monotonic()), true);
    assert.notEqual(view.structureEpoch, epoch, 'slot 0 was not seen written before: now counted');
    epoch = view.structureEpoch;
    await clock.advance(1_000);
    assert.equal(view.observeChanges([g.heartbeat(0)], clock.monotonic()), true);
    assert.equal(view.structureEpoch, epoch, 'a live member heartbeating changes no fact');
    // Slot 0 silent past its lease (lists of the others every 2 s): judged over.
    for (let t = 0; t < LEASE_MS; t += 2_000) {
      await clock.advance(2_000);
      view.observeChanges([g.heartbeat(1)], clock.monotonic());
    }
    assert.equal(view.live({ slot: 0, session: 1 }), false);
    epoch = view.structureEpoch;
    assert.equal(view.observeChanges([g.heartbeat(0)], clock.monotonic()), true);
    assert.equal(view.live({ slot: 0, session: 1 }), true);
    assert.notEqual(view.structureEpoch, epoch, 'a session judged over, heartbeating again: the facts changed');
  });

  it('nextFlipMono is the earliest end of a live session, an absence or the freshness', async () => {
    const clock = new FakeClock();
    const g = group(clock);
    const view = new GroupView(clock, N, LEASE_MS, POLL_GAP_MS);
    view.observe(g.all(), clock.monotonic());
    // Freshness first: a list just sent, fresh for 2 s.
    assert.equal(view.nextFlipMono(2_000), clock.monotonic() + 2_000);
    // Without it: shard 10 absent since now, slots 0..2 seen now on a 15 s lease: both at 15 s
    // (the absence waits the longest lease announced, slot 3's 30 s).
    assert.equal(view.nextFlipMono(Infinity), clock.monotonic() + LEASE_MS);
    await clock.advance(5_000);
    for (const i of [0, 1, 2]) view.observeChanges([g.heartbeat(i)], clock.monotonic());
    // Slots 0..2 now end at 20 s; session 7/2 (shard 11, never in a slot) never ends by time alone; slot 3 at 30 s; shard 10's absence at 30 s.
    assert.equal(view.nextFlipMono(Infinity), clock.monotonic() + LEASE_MS);
    assert.equal(view.live({ slot: 7, session: 2 }), true);
  });
});
