/**
 * GroupView.observeChanges against observe (docs/design.md, "Quiet turns"): a model store under
 * a group that does what members and people do (heartbeats, silences, state changes, releases,
 * rejoins under a new session or lease, a newcomer in a new slot, takes and releases of shards,
 * a take by a session out of its slot, records deleted by hand, the header raised and written
 * back, no-op rewrites, the store replaced, this member's own writes told through `wrote`). One
 * view observes the whole group at every read; the other takes in what changed since its last
 * read, the whole group after a deletion (as GroupCache reads) and where it refuses (as the
 * member does). After every read both must answer every public question alike, at that moment.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { prng } from '../../test/support/prng.js';
import { ModelCopy, ModelGroupRecords } from '../testing/model-group-records.js';
import { GroupView, sessionKey, type SessionId } from './group-view.js';
import { shardFacts, slotFacts } from './turn-facts.js';
import type { GroupHeader, GroupRecord, MemberSlot, MemberState, ShardRecord, VersionedGroupRecord } from '../backends/group-store.js';

const LEASE_MS = 15_000;
const POLL_GAP_MS = 6_400;
const N = 10;
/** Slots 0..3 at start; a newcomer may create slot 4. Slot 0 is this member. */
const SLOTS = 5;
const FRESH_MS = 5_000;
const SEEDS = 40;
const STEPS = 300;

const recordKey = (r: GroupRecord) => `${r.kind}/${r.index}`;

/** Every public answer of a view at this moment but its epochs (compared as moved or not). */
function answers(v: GroupView, sessions: readonly SessionId[]) {
  return {
    shardFacts: shardFacts(v),
    // By slot: a view keeps slots in the order it came to hold them, and a slot deleted and
    // written again between two reads is one a read by change writes over in place, a whole
    // observe at the end. Nothing decides by that order (the assignment orders members itself).
    slotFacts: slotFacts(v).sort((a, b) => a.slot - b.slot),
    fresh: [v.freshWithin(0), v.freshWithin(FRESH_MS)],
    sessions: sessions.map((id) => [sessionKey(id), v.live(id), v.liveUntilMono(id), v.current(id)]),
    shards: [...Array(N + 1).keys()].map((s) => [v.shard(s)?.version ?? null, v.absentLongEnough(s), v.absentWaitLeftMs(s), v.nextToken(s)]),
    slots: [...Array(SLOTS + 1).keys()].map((i) => [v.slot(i)?.version ?? null, v.witnessed(i)]),
    liveSlots: v
      .liveSlots()
      .sort((a, b) => a.record.index - b.record.index)
      .map((s) => s.version),
    freeSlot: [v.freeSlot(SLOTS + 1, 0), v.freeSlot(SLOTS + 1, 3)],
    nextFlip: [v.nextFlipMono(FRESH_MS), v.nextFlipMono(Infinity)],
    highestSeen: v.highestSeen,
    longestLeaseSeen: v.longestLeaseSeen,
    sessionsArrived: v.sessionsArrived,
    header: v.groupHeader?.version ?? null,
  };
}

describe("a member's view takes in reads by change as a whole observe would", () => {
  const totals = { byChange: 0, structural: 0 };
  for (let seed = 1; seed <= SEEDS; seed++) {
    it(`seed ${seed}`, async () => {
      const rand = prng(seed);
      const pick = (n: number) => Math.floor(rand() * n);
      const clock = new FakeClock();
      const store = new ModelGroupRecords();
      const sessions = [1, 1, 1, 1, 0];
      const state: MemberState[] = ['active', 'active', 'active', 'active', 'active'];
      const held = [true, true, true, true, false];
      const leaseSeconds = [15, 15, 15, 30, 15];
      const silent = new Set<number>();
      /** Every session any record named, and two no record ever did. */
      const seen = new Map<string, SessionId>();
      const saw = (id: SessionId) => seen.set(sessionKey(id), id);
      saw({ slot: 1, session: 9 });
      saw({ slot: 6, session: 1 });
      const slot = (i: number): MemberSlot => {
        saw({ slot: i, session: sessions[i]! });
        return {
          kind: 'member',
          index: i,
          holderIdentity: held[i] ? `m${i}` : '',
          session: sessions[i]!,
          state: state[i]!,
          renewTime: held[i] ? clock.now() : null,
          leaseDurationSeconds: leaseSeconds[i]!,
        };
      };
      const shard = (s: number, owner: SessionId | null, token: number): ShardRecord => {
        if (owner) saw(owner);
        return { kind: 'shard', index: s, holderIdentity: owner ? `m${owner.slot}` : '', owner, token, acquireTime: owner ? clock.now() : null };
      };
      const tokenOf = (s: number) => store.get<ShardRecord>(`shard/${s}`)?.token ?? 0;
      let highWater = 20;
      const header = (longest: number): GroupHeader => ({
        kind: 'group',
        index: 0,
        shards: N,
        createdAt: new Date(0),
        highWater,
        longestLeaseSeconds: longest,
      });
      store.put(header(30));
      for (let i = 0; i < SLOTS - 1; i++) store.put(slot(i));
      for (let s = 0; s < N - 2; s++) store.put(shard(s, { slot: s % 4, session: 1 }, s + 1));

      const whole = new GroupView(clock, N, LEASE_MS, POLL_GAP_MS);
      const byChange = new GroupView(clock, N, LEASE_MS, POLL_GAP_MS);
      whole.observe(store.all(), clock.monotonic());
      byChange.observe(store.all(), clock.monotonic());
      store.changes(rand);
      const copy = new ModelCopy(store);
      const events: string[] = [];
      const ours = (r: GroupRecord, what?: string) => {
        const v = store.put(r);
        whole.wrote(v);
        byChange.wrote(v);
        if (what) events.push(what);
      };

      for (let step = 0; step < STEPS; step++) {
        await clock.advance(rand() < 0.03 ? POLL_GAP_MS + 1 : pick(2_500));
        const o = 1 + pick(SLOTS - 1);
        const s = pick(N);
        const r = rand();
        const did = (what: string) => events.push(`${step} ${what}`);
        // What the others and people do: at most one thing a step, heartbeats below.
        if (r < 0.03) {
          state[o] = state[o] === 'active' ? 'leaving' : 'active';
          if (held[o]) store.put(slot(o));
          did(`m${o} ${state[o]}`);
        } else if (r < 0.06) {
          sessions[o]!++;
          held[o] = true;
          if (rand() < 0.3) leaseSeconds[o] = [15, 30, 45][pick(3)]!;
          store.put(slot(o));
          did(`m${o} joins as session ${sessions[o]} (${leaseSeconds[o]} s)`);
        } else if (r < 0.08) {
          held[o] = false;
          store.put(slot(o));
          did(`m${o} releases its slot`);
        } else if (r < 0.11) {
          const session = held[o] ? sessions[o]! : Math.max(1, sessions[o]! - 1);
          store.put(shard(s, { slot: o, session }, Math.max(tokenOf(s), highWater) + 1));
          did(`${o}/${session} takes ${s}${held[o] ? '' : ' (out of its slot)'}`);
        } else if (r < 0.12) {
          // A session from before, or one no slot ever held, takes a shard.
          const owner = rand() < 0.5 ? { slot: o, session: Math.max(1, sessions[o]! - 1) } : { slot: 6, session: 1 + pick(2) };
          store.put(shard(s, owner, tokenOf(s) + 1));
          did(`${sessionKey(owner)} takes ${s} (out of its slot)`);
        } else if (r < 0.14) {
          if (store.get(`shard/${s}`)) store.put(shard(s, null, tokenOf(s)));
          did(`shard ${s} released`);
        } else if (r < 0.15) {
          if (store.delete(`shard/${s}`)) did(`shard ${s} deleted`);
        } else if (r < 0.155) {
          if (store.delete(`member/${o}`)) did(`slot ${o} deleted`);
        } else if (r < 0.16) {
          if (store.delete('group/0')) did('header deleted');
        } else if (r < 0.18) {
          highWater += 1 + pick(50);
          const longest = Math.max(store.get<GroupHeader>('group/0')?.longestLeaseSeconds ?? 0, [15, 30, 60][pick(3)]!);
          store.put(header(longest));
          did(`header raised to ${highWater}, ${longest} s`);
        } else if (r < 0.2) {
          if (!silent.delete(o)) silent.add(o);
          did(`m${o} ${silent.has(o) ? 'silent' : 'back'}`);
        } else if (r < 0.21) {
          whole.interruptAbsence();
          byChange.interruptAbsence();
          did('store replaced');
        } else if (r < 0.22) {
          // A record written again with the values it holds (a new version), or past the group's shards.
          const again = store.get(`shard/${s}`) ?? store.get(`member/${o}`);
          if (again) store.put(again);
          store.put(shard(N, { slot: o, session: sessions[o]! }, 999));
          did(`a no-op rewrite of ${again ? recordKey(again) : 'nothing'}, a shard past N`);
        }
        // This member (slot 0): its heartbeat, now and then a write of its own, told through wrote().
        if (held[0] && !silent.has(0) && rand() < 0.4) ours(slot(0));
        const w = rand();
        if (w < 0.03 && held[0]) {
          ours(shard(s, { slot: 0, session: sessions[0]! }, Math.max(tokenOf(s), highWater) + 1), `${step} m0 takes ${s}`);
          // Deleted by hand before the next read: a record the reader's copy never holds.
          if (rand() < 0.3 && store.delete(`shard/${s}`)) did(`shard ${s} deleted before the read`);
        } else if (w < 0.04 && store.get<ShardRecord>(`shard/${s}`)?.owner?.slot === 0) ours(shard(s, null, tokenOf(s)), `${step} m0 releases ${s}`);
        else if (w < 0.06) {
          sessions[0]!++;
          held[0] = true;
          ours(slot(0), `${step} m0 joins as session ${sessions[0]}`);
        } else if (w < 0.065) {
          held[0] = false;
          ours(slot(0), `${step} m0 releases its slot`);
        } else if (w < 0.075) {
          highWater += 10;
          ours(header(Math.max(store.get<GroupHeader>('group/0')?.longestLeaseSeconds ?? 0, 15)), `${step} m0 writes the header`);
          if (rand() < 0.3 && store.delete('group/0')) did('header deleted before the read');
        }
        for (let i = 1; i < SLOTS; i++) if (held[i] && !silent.has(i) && rand() < 0.6) store.put(slot(i));

        // A read: whole for one view; by change for the other, whole where GroupCache or the view says so.
        const sent = clock.monotonic();
        const read = copy.read(rand);
        const changes = read.brought;
        const before = { owners: [whole.ownersEpoch, byChange.ownersEpoch], structure: byChange.structureEpoch };
        const heldAlready = (v: VersionedGroupRecord) => {
          const r = v.record;
          return (r.kind === 'member' ? byChange.slot(r.index) : r.kind === 'shard' ? byChange.shard(r.index) : byChange.groupHeader)?.version === v.version;
        };
        const again = changes.every(heldAlready);
        const structural = changes.some((v) => {
          const r = v.record;
          if (heldAlready(v) || (r.kind === 'shard' && r.index >= N)) return false;
          const p = r.kind === 'member' ? byChange.slot(r.index)?.record : undefined;
          if (r.kind !== 'member' || !p) return true;
          return (
            r.holderIdentity === '' ||
            p.holderIdentity !== r.holderIdentity ||
            p.session !== r.session ||
            p.state !== r.state ||
            p.leaseDurationSeconds !== r.leaseDurationSeconds
          );
        });
        whole.observe(store.all(), sent);
        const took = read.changes !== null && byChange.observeChanges(read.changes, sent, (k) => read.version(k));
        if (!took) byChange.observe(store.all(), sent);
        if (took) totals.byChange++;
        if (took && structural) totals.structural++;
        const ids = [...seen.values()];
        const at = `step ${step}: ${took ? 'by change' : 'whole'}\n${events.slice(-12).join('\n')}`;
        assert.deepEqual(answers(byChange, ids), answers(whole, ids), `${at}\nthe views differ`);
        assert.equal(byChange.ownersEpoch !== before.owners[1], whole.ownersEpoch !== before.owners[0], `${at}\nthe owners' epoch`);
        if (structural) assert.notEqual(byChange.structureEpoch, before.structure, `${at}\nmore than a heartbeat changed: the structure epoch must move`);
        if (took && again) assert.equal(byChange.structureEpoch, before.structure, `${at}\nonly records held already: the structure epoch must stay`);
      }
    });
  }

  it('the comparison was put to the test: most reads taken by change, many of them more than heartbeats', () => {
    console.log(`${totals.byChange} reads by change, ${totals.structural} of them more than heartbeats, in ${SEEDS} seeds`);
    assert.ok(totals.byChange > SEEDS * STEPS * 0.5, `${totals.byChange} reads by change`);
    assert.ok(totals.structural > SEEDS * 30, `${totals.structural} reads with more than heartbeats`);
  });
});

describe('GroupView.observeChanges refuses only where observe would do more', () => {
  const slot = (clock: FakeClock, i: number, session = 1): VersionedGroupRecord<MemberSlot> => ({
    record: { kind: 'member', index: i, holderIdentity: `m${i}`, session, state: 'active', renewTime: clock.now(), leaseDurationSeconds: 15 },
    version: `s${i}.${session}.${clock.monotonic()}`,
  });
  const taken = (s: number, owner: SessionId, version: string): VersionedGroupRecord<ShardRecord> => ({
    record: { kind: 'shard', index: s, holderIdentity: `m${owner.slot}`, owner, token: 5, acquireTime: null },
    version,
  });

  it('before a first list, after a gap, an interrupted absence or a write of ours owed, and changes nothing then', async () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, 2, LEASE_MS, POLL_GAP_MS);
    assert.equal(view.observeChanges([slot(clock, 0)], clock.monotonic()), false, 'before a first list');
    view.observe([slot(clock, 0), slot(clock, 1), taken(0, { slot: 1, session: 1 }, 'a')], clock.monotonic());
    const sessions = [1, 2].map((session) => ({ slot: 1, session }));
    const check = (what: string, changes: VersionedGroupRecord[]) => {
      const before = { answers: answers(view, sessions), structure: view.structureEpoch, owners: view.ownersEpoch };
      assert.equal(view.observeChanges(changes, clock.monotonic()), false, what);
      assert.deepEqual({ answers: answers(view, sessions), structure: view.structureEpoch, owners: view.ownersEpoch }, before, what);
    };
    await clock.advance(POLL_GAP_MS + 1);
    check('after a gap past the poll gap', [slot(clock, 1, 2), taken(1, { slot: 1, session: 1 }, 'b')]);
    view.observe([slot(clock, 0), slot(clock, 1), taken(0, { slot: 1, session: 1 }, 'a')], clock.monotonic());
    view.interruptAbsence();
    check('after an interrupted absence', [slot(clock, 1, 2)]);
    view.observe([slot(clock, 0), slot(clock, 1), taken(0, { slot: 1, session: 1 }, 'a')], clock.monotonic());
    view.wrote(slot(clock, 0, 2)); // a rejoin of ours
    check('after a write of ours that changed more than a heartbeat', [slot(clock, 1)]);
  });

  it('a session that leaves its slot while a shard names it counts from the read that shows it, and is forgotten once no shard does', async () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, 2, LEASE_MS, POLL_GAP_MS);
    const m1 = { slot: 1, session: 1 };
    view.observe([slot(clock, 0), slot(clock, 1), taken(0, m1, 'a')], clock.monotonic());
    await clock.advance(2_000);
    assert.equal(view.observeChanges([slot(clock, 1, 2)], clock.monotonic()), true, 'm1 joins again under session 2');
    assert.equal(view.liveUntilMono(m1), clock.monotonic() + LEASE_MS, 'out of its slot from now, named by shard 0');
    await clock.advance(2_000);
    assert.equal(view.observeChanges([taken(0, { slot: 1, session: 2 }, 'b')], clock.monotonic()), true);
    assert.equal(view.live(m1), true, 'no shard names it: nothing to wait out');
    assert.equal(view.liveUntilMono(m1), null);
  });

  it("our take of a session's last shard forgets nothing before the read: that session naming itself again by then keeps its count", async () => {
    // Session p (slot 1, session 1) has been out of its slot for longer than a lease when this
    // member takes its last shard; before the next read p writes a record naming itself (a late
    // write). A whole observe at that read finds p named all along and over at once; a view that
    // forgot p at our write would count it from the read, live for a lease more.
    const clock = new FakeClock();
    const p = { slot: 1, session: 1 };
    const me = { slot: 0, session: 1 };
    const start = [slot(clock, 0), slot(clock, 1, 2), taken(0, p, 'a')];
    const whole = new GroupView(clock, 2, LEASE_MS, POLL_GAP_MS);
    const byChange = new GroupView(clock, 2, LEASE_MS, POLL_GAP_MS);
    whole.observe(start, clock.monotonic());
    byChange.observe(start, clock.monotonic());
    let beats: VersionedGroupRecord[] = [];
    for (let t = 0; t <= LEASE_MS; t += 2_000) {
      await clock.advance(2_000);
      beats = [slot(clock, 0), slot(clock, 1, 2)];
      whole.observe([...beats, taken(0, p, 'a')], clock.monotonic());
      assert.equal(byChange.observeChanges(beats, clock.monotonic()), true);
    }
    assert.equal(byChange.live(p), false, 'p is over');
    const mine = taken(0, me, 'b');
    whole.wrote(mine);
    byChange.wrote(mine);
    const late = taken(1, p, 'c');
    await clock.advance(100);
    whole.observe([...beats, mine, late], clock.monotonic());
    const copy = new Map([['shard/0', 'b']]);
    assert.equal(
      byChange.observeChanges([late], clock.monotonic(), (k) => copy.get(k)),
      true,
    );
    assert.equal(whole.live(p), false, 'a whole observe: p over at once');
    assert.equal(byChange.live(p), false, 'by change: p over at once too');
    assert.deepEqual(answers(byChange, [p, me]), answers(whole, [p, me]));
  });
});
