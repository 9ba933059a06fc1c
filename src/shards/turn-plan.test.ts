/**
 * A shard member's turn as a table (turn-plan.ts): each row a situation and what the plan
 * decides. The rows named after a fix (9ccbe86, c148df0, d20956e, dcd83b4) fail with that fix's
 * condition taken out; two of them need more than plain facts, and say why.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { GroupView } from './group-view.js';
import { ShardMember } from './shard-member.js';
import { shardFact } from './turn-facts.js';
import { prng } from '../../test/support/prng.js';
import {
  changesConcernPlan,
  planLost,
  planTurn,
  takeAllowed,
  takeRestsOnTime,
  targetOf,
  type ShardFacts,
  type SlotFacts,
  type Target,
  type TurnFacts,
  type TurnPlan,
} from './turn-plan.js';

const G = 'workers';
const ME = '0/1';
const OTHER = '1/1';

const free: ShardFacts = { present: true, owner: null, holder: '', ownerLive: false, absentLongEnough: false };
const mine: ShardFacts = { present: true, owner: ME, holder: 'me', ownerLive: true, absentLongEnough: false };
const others: ShardFacts = { present: true, owner: OTHER, holder: 'other', ownerLive: true, absentLongEnough: false };
const othersOver: ShardFacts = { ...others, ownerLive: false };
const absent: ShardFacts = { present: false, owner: null, holder: '', ownerLive: false, absentLongEnough: false };
const absentLong: ShardFacts = { ...absent, absentLongEnough: true };

const meSlot: SlotFacts = { slot: 0, key: ME, identity: 'me', state: 'active', witnessed: true };
const otherSlot: SlotFacts = { slot: 1, key: OTHER, identity: 'other', state: 'active', witnessed: true };

function facts(over: Partial<TurnFacts> = {}): TurnFacts {
  return {
    me: { slot: 0, key: ME, state: 'active' },
    stopping: false,
    shards: [free, free],
    slots: [meSlot],
    owned: [],
    ending: new Set(),
    kept: new Set(),
    fresh: true,
    sessionValid: true,
    ...over,
  };
}

/** The plan with the target every member computes from the same facts. */
function plan(f: TurnFacts): TurnPlan {
  return planTurn(f, targetOf(G, f));
}

const ends = (p: TurnPlan) => p.end.map((e) => `${e.shard}:${e.reason}:${e.release ? 'release' : 'no release'}`);

interface Row {
  name: string;
  facts: TurnFacts;
  end?: string[];
  free?: number[];
  take?: number[];
}

const rows: Row[] = [
  { name: 'alone, every shard free: tries to take them all', facts: facts(), end: [], free: [], take: [0, 1] },
  {
    name: 'owns what the target gives it: nothing ends, nothing taken',
    facts: facts({ shards: [mine, mine], owned: [0, 1] }),
    end: [],
    free: [],
    take: [],
  },
  {
    name: 'a second member, both owned here: the one the target gives the other ends, released',
    facts: facts({ shards: [mine, mine], owned: [0, 1], slots: [meSlot, otherSlot] }),
    end: ['0:moves:release'],
    free: [],
    take: [],
  },
  {
    name: 'the app not eligible (leaving): every owned shard ends, released; nothing taken',
    facts: facts({ me: { slot: 0, key: ME, state: 'leaving' }, shards: [mine, free], owned: [0] }),
    end: ['0:not eligible:release'],
    free: [],
    take: [],
  },
  {
    name: 'stopping: every owned shard ends as a leave; nothing taken',
    facts: facts({ stopping: true, shards: [mine, free], owned: [0] }),
    end: ['0:leaving:release'],
    free: [],
    take: [],
  },
  {
    name: 'an owned shard whose record is gone or names another: ends first; a gone one is released once written back',
    facts: facts({ shards: [absent, others, mine], owned: [2, 0, 1], slots: [meSlot] }),
    end: ['0:deleted:release', '1:taken:no release'],
    free: [],
    take: [],
  },
  {
    name: 'a record naming this session for a shard it does not own, the target another: freed',
    facts: facts({ shards: [mine, mine], owned: [1], slots: [meSlot, otherSlot] }),
    end: [],
    free: [0],
    take: [],
  },
  {
    name: 'a record naming this session for a shard it does not own, the target this member: taken anew',
    facts: facts({ shards: [mine, free] }),
    end: [],
    free: [],
    take: [0, 1],
  },
  {
    name: 'leaving: a record naming this session that it does not own is freed, not taken',
    facts: facts({ me: { slot: 0, key: ME, state: 'leaving' }, shards: [mine, free] }),
    end: [],
    free: [0],
    take: [],
  },
  {
    name: 'shards going through the gate or kept: neither freed nor taken',
    facts: facts({ shards: [mine, free], ending: new Set([0]), kept: new Set([1]) }),
    end: [],
    free: [],
    take: [],
  },
  {
    name: 'the view not fresh: ends are planned, no record written',
    facts: facts({ fresh: false, shards: [mine, mine], owned: [0], slots: [meSlot, otherSlot] }),
    end: ['0:moves:release'],
    free: [],
    take: [],
  },
  {
    name: 'the session no longer valid: no record written',
    facts: facts({ sessionValid: false, shards: [free, free] }),
    end: [],
    free: [],
    take: [],
  },
  {
    name: 'another member leaving: no member of the target, its shards are this one’s to take',
    facts: facts({ shards: [others, others], slots: [meSlot, { ...otherSlot, state: 'leaving' }] }),
    end: [],
    free: [],
    take: [0, 1],
  },
  {
    // d20956e: a slot the newcomer's first list found unchanged may be a member long dead;
    // counted, it is assigned the shards the others released for this member.
    name: 'd20956e: a slot unchanged since this member’s first list is no member of the target',
    facts: facts({ shards: [free, free], slots: [meSlot, { ...otherSlot, witnessed: false }] }),
    end: [],
    free: [],
    take: [0, 1],
  },
  {
    name: 'd20956e: this member’s own slot counts before it is witnessed',
    facts: facts({ shards: [free, free], slots: [{ ...meSlot, witnessed: false }] }),
    end: [],
    free: [],
    take: [0, 1],
  },
];

describe("a shard member's turn, planned", () => {
  for (const r of rows)
    it(r.name, () => {
      const p = plan(r.facts);
      if (r.end) assert.deepEqual(ends(p), r.end, 'end');
      if (r.free) assert.deepEqual(p.free, r.free, 'free');
      if (r.take) assert.deepEqual(p.take, r.take, 'take');
    });

  it('the target: balanced between the witnessed active members, the same for every member', () => {
    const f = facts({ shards: [free, free, free, free], slots: [meSlot, otherSlot] });
    const t = targetOf(G, f);
    assert.deepEqual(
      t.members.map((m) => m.key),
      [ME, OTHER],
    );
    assert.equal(t.owners.filter((o) => o === ME).length, 2);
    assert.deepEqual(targetOf(G, { ...f, me: { slot: 1, key: OTHER, state: 'active' } }).owners, t.owners);
  });
});

describe('a take that rests on time passing (from a watch’s copy, the store is read again first)', () => {
  const table: [string, ShardFacts, boolean][] = [
    ['free: no (its compare-and-swap is the whole judgment)', free, false],
    ['owned by another live session: no (not taken at all)', others, false],
    ['named by a session judged over: yes (the copy may have missed its heartbeats)', othersOver, true],
    ['named by this session: no', mine, false],
    ['absent a lease duration: yes (the copy may not show it created)', absentLong, true],
    ['absent, not yet a lease duration: no (not taken yet)', absent, false],
  ];
  for (const [name, f, rests] of table) it(name, () => assert.equal(takeRestsOnTime(f, ME), rests));
});

describe('a take, judged at its write', () => {
  const freshness = { fresh: true, sessionValid: true };
  const table: [string, ShardFacts, boolean][] = [
    ['free: taken', free, true],
    ['owned by another live session: left alone', others, false],
    ['named by a session that is over: taken', othersOver, true],
    ['named by this session (an answer lost): taken anew', mine, true],
    ['absent, not yet a lease duration of lists: waited for', absent, false],
    ['absent a lease duration of lists: created', absentLong, true],
  ];
  for (const [name, f, allowed] of table) it(name, () => assert.equal(takeAllowed(f, ME, freshness), allowed));

  // dcd83b4: a member paused between two batches of takes resumed with the batch decided before
  // the pause, and judged a live owner's session over with its old list and the new clock.
  it('dcd83b4: a take planned before a pause is not written after it: the view is no longer fresh', () => {
    assert.equal(takeAllowed(othersOver, ME, { fresh: false, sessionValid: true }), false);
  });
  it('dcd83b4: nor once this member’s own session is over', () => {
    assert.equal(takeAllowed(free, ME, { fresh: true, sessionValid: false }), false);
  });

  // c148df0: the absence is counted by the view (GroupView.observe), so this row feeds a real
  // view the lists a member saw: a break in them may have hidden a record created, owned and
  // deleted meanwhile, whose owner still works; the wait starts over after the break.
  it('c148df0: an absent shard after a break in the lists is not created on the wait from before the break', async () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, 1, 15_000, 6_400);
    for (let t = 0; t <= 4_000; t += 2_000) {
      view.observe([], clock.monotonic());
      await clock.advance(2_000);
    }
    await clock.advance(9_000); // lists failed for 11 s
    view.observe([], clock.monotonic());
    assert.equal(takeAllowed(shardFact(view, 0), ME, freshness), false, 'a lease duration since first seen absent, not since the break');
    for (let t = 0; t < 15_000; t += 2_000) {
      await clock.advance(2_000);
      view.observe([], clock.monotonic());
    }
    assert.equal(takeAllowed(shardFact(view, 0), ME, freshness), true, 'a lease duration of unbroken lists after it');
  });
});

describe("what a list shows of this member's shards", () => {
  it('an owned shard deleted ends with a release (after its write-back), one taken without', () => {
    const lost = planLost({ me: { slot: 0, key: ME, state: 'active' }, shards: [mine, absent, others], owned: [0, 1, 2] });
    assert.deepEqual(
      lost.map((e) => [e.shard, e.reason, e.release, e.holder]),
      [
        [1, 'deleted', true, ''],
        [2, 'taken', false, 'other'],
      ],
    );
  });

  // 9ccbe86: the rule is when the member asks (after the list, before the list renews its
  // session), so this row runs a member: a list that shows an owned shard's record gone ends it
  // before it announces the validity that list gives the rest.
  it('9ccbe86: a list that shows an owned shard deleted ends it before it renews anything', async () => {
    const clock = new FakeClock();
    const store = new MemoryGroupStore();
    const events: string[] = [];
    const m = new ShardMember({
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      store,
      group: G,
      shards: 1,
      identity: 'me',
      clock,
      listener: {
        onShardGained: (t) => events.push(`+${t.shard}`),
        onShardLost: (s) => events.push(`-${s}`),
        onRenewed: () => events.push('renewed'),
      },
    });
    try {
      await m.start();
      for (let t = 0; t < 30_000 && m.snapshot().owned.length === 0; t += 100) await clock.advance(100);
      assert.equal(m.snapshot().owned.length, 1, 'owns shard 0');
      // Right after a heartbeat, so the next renewal is the list's, not the heartbeat's.
      const updates = () => store.calls.filter((c) => c === 'update').length;
      const before = updates();
      for (let t = 0; t < 5_000 && updates() === before; t += 10) await clock.advance(10);
      assert.ok(store.delete(G, { kind: 'shard', index: 0 }));
      const from = events.length;
      for (let t = 0; t < 5_000 && !events.slice(from).includes('-0'); t += 10) await clock.advance(10);
      const after = events.slice(from);
      assert.ok(after.includes('-0'), 'the shard ends');
      assert.equal(after.indexOf('renewed') === -1 || after.indexOf('-0') < after.indexOf('renewed'), true, `ended before renewed: ${after.join(' ')}`);
    } finally {
      await m.stop();
    }
  });
});

describe('a settled plan after changes that do not concern it (changesConcernPlan)', () => {
  it('finds nothing to do again: random groups with nothing to do, random changes of their records', () => {
    const rand = prng(4343);
    const int = (n: number) => Math.floor(rand() * n);
    const key = (i: number) => `${i}/1`;
    let unconcerned = 0;
    let concerned = 0;
    for (let round = 0; round < 5000; round++) {
      const n = 4 + int(60);
      const members = 2 + int(3);
      const leaving = rand() < 0.15;
      const others = Array.from({ length: members - 1 }, (_, i) => key(i + 1));
      /** A record neither this member's nor given to it: free, absent, or another member's (live or over). */
      const notMine = (): ShardFacts => {
        const r = rand();
        if (r < 0.2) return free;
        if (r < 0.3) return rand() < 0.5 ? absent : absentLong;
        const o = others[int(others.length)]!;
        return { present: true, owner: o, holder: o, ownerLive: rand() < 0.8, absentLongEnough: false };
      };
      // A group whose plan for this member is empty: every shard the target gives it is owned here
      // (none while it leaves), and some the target gives nobody; no other record names it.
      const owners = Array.from({ length: n }, () => (rand() < 0.15 ? null : key(int(members))));
      const target: Target = { members: [key(0), ...others].map((k) => ({ key: k, identity: k })), owners };
      const shards = owners.map((t) => ((t === ME || (t === null && rand() < 0.5)) && !leaving ? mine : notMine()));
      const owned = shards.flatMap((f, s) => (f === mine ? [s] : []));
      const before = facts({ me: { slot: 0, key: ME, state: leaving ? 'leaving' : 'active' }, shards, owned });
      assert.deepEqual(planTurn(before, target), { end: [], free: [], take: [] }, 'the group as built has nothing to do');
      // Some records change: to anything, this member's included.
      const after = shards.slice();
      const changed = Array.from({ length: 1 + int(4) }, () => int(n));
      for (const s of changed) after[s] = rand() < 0.15 ? mine : notMine();
      const now = { ...before, shards: after };
      if (changesConcernPlan(changed, now, (s) => owned.includes(s))) {
        concerned++;
        continue;
      }
      unconcerned++;
      assert.deepEqual(planTurn(now, target), { end: [], free: [], take: [] }, `round ${round}: shards ${changed.join(',')} changed`);
    }
    // Both answers were given often: the property was asked of many changes that concern nobody here.
    assert.ok(unconcerned > 1000 && concerned > 300, `${unconcerned} unconcerned, ${concerned} concerned`);
  });
});
