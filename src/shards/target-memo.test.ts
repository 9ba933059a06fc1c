import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { GroupView, sessionKey } from './group-view.js';
import { TargetMemo } from './target-memo.js';
import { shardFacts, slotFacts } from './turn-facts.js';
import { targetOf } from './turn-plan.js';
import type { MemberSlot, MemberState, VersionedGroupRecord } from '../backends/group-store.js';
import { ModelGroupRecords } from '../testing/model-group-records.js';
import { prng } from '../../test/support/prng.js';

const N = 64;
const slot = (i: number, clock: FakeClock, state: 'active' | 'leaving' = 'active'): VersionedGroupRecord => ({
  record: { kind: 'member', index: i, holderIdentity: `m${i}`, session: 1, state, renewTime: clock.now(), leaseDurationSeconds: 15 },
  version: `s${i}-${clock.monotonic()}`,
});
const shard = (s: number, owner: number | null): VersionedGroupRecord => ({
  record: {
    kind: 'shard',
    index: s,
    holderIdentity: owner === null ? '' : `m${owner}`,
    owner: owner === null ? null : { slot: owner, session: 1 },
    token: s + 1,
    acquireTime: null,
  },
  version: `r${s}-${owner}`,
});

describe('the target kept between turns', () => {
  it('is computed again only when an owner or the members move; a heartbeat moves neither', async () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, N, 15_000, 6_400);
    const owners = Array.from({ length: N }, (_, s) => s % 3);
    const list = (members: number, states: ('active' | 'leaving')[] = []) => [
      ...Array.from({ length: members }, (_, i) => slot(i, clock, states[i])),
      ...owners.map((o, s) => shard(s, o)),
    ];
    const memo = new TargetMemo();
    const me = { slot: 0, key: sessionKey({ slot: 0, session: 1 }), state: 'active' as const };
    const facts = () => ({ me, slots: slotFacts(view), shards: shardFacts(view) });
    const target = () => memo.of('g', facts(), view);

    view.observe(list(3), clock.monotonic());
    await clock.advance(2_000);
    view.observe(list(3), clock.monotonic()); // every slot witnessed
    const first = target();
    assert.deepEqual(first, targetOf('g', facts()));

    await clock.advance(2_000);
    const epoch = view.ownersEpoch;
    view.observe(list(3), clock.monotonic()); // the three heartbeat
    assert.equal(view.ownersEpoch, epoch, 'a heartbeat moves no owner');
    assert.equal(target(), first, 'the same target, not assigned again');

    view.observe(list(3, ['active', 'active', 'leaving']), clock.monotonic());
    const fewer = target();
    assert.notEqual(fewer, first, 'a member leaving: assigned again');
    assert.deepEqual(fewer, targetOf('g', facts()));

    owners[5] = 1;
    view.observe(list(3, ['active', 'active', 'leaving']), clock.monotonic());
    assert.equal(view.ownersEpoch, epoch + 1, 'an owner moved in a list');
    const moved = target();
    assert.notEqual(moved, fewer);
    assert.deepEqual(moved, targetOf('g', facts()));

    view.wrote(shard(7, owners[7]!)); // a write naming the owner it had (a write-back): nothing moves
    view.wrote(shard(8, null)); // a release of ours: the owner moves
    assert.equal(view.ownersEpoch, epoch + 2);
    assert.deepEqual(target(), targetOf('g', facts()));
  });

  it('follows the owner changes that conform to it, and equals the target assigned anew at every step', async () => {
    // A group of up to 6 members over 96 shards where members take what their target names
    // (conforming), take or give up what it does not (not conforming), leave, come back and
    // heartbeat; the member reads by change. At every read its memo must be the target assigned
    // anew from the facts, and most owner changes must be followed, not assigned again.
    const SEEDS = 30;
    const STEPS = 200;
    const SHARDS = 96;
    let followed = 0;
    let assigned = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const rand = prng(seed);
      const clock = new FakeClock();
      const store = new ModelGroupRecords();
      const state: MemberState[] = ['active', 'active', 'active', 'active', 'active', 'leaving'];
      const slotOf = (i: number): MemberSlot => ({
        kind: 'member',
        index: i,
        holderIdentity: `m${i}`,
        session: 1,
        state: state[i]!,
        renewTime: clock.now(),
        leaseDurationSeconds: 15,
      });
      const take = (s: number, owner: number | null) =>
        store.put({
          kind: 'shard',
          index: s,
          holderIdentity: owner === null ? '' : `m${owner}`,
          owner: owner === null ? null : { slot: owner, session: 1 },
          token: 1,
          acquireTime: null,
        });
      state.forEach((_, i) => store.put(slotOf(i)));
      for (let s = 0; s < SHARDS; s++) take(s, s % 4);
      const view = new GroupView(clock, SHARDS, 15_000, 6_400);
      view.observe(store.all(), clock.monotonic());
      await clock.advance(1_000);
      state.forEach((_, i) => store.put(slotOf(i)));
      view.observe(store.all(), clock.monotonic()); // every slot witnessed
      store.changes();
      const memo = new TargetMemo();
      const me = { slot: 0, key: sessionKey({ slot: 0, session: 1 }), state: 'active' as const };
      const facts = () => ({ me, slots: slotFacts(view), shards: shardFacts(view) });
      let last = memo.of('g', facts(), view);
      let lastEpoch = view.ownersEpoch;
      const events: string[] = [];
      for (let step = 0; step < STEPS; step++) {
        await clock.advance(200);
        const r = rand();
        const who = 1 + Math.floor(rand() * 5);
        const s = Math.floor(rand() * SHARDS);
        const now = targetOf('g', facts()).owners;
        if (r < 0.5) {
          // A member takes a shard its target names for it: the most common change of all.
          const mine = now.flatMap((t, x) => (t === sessionKey({ slot: who, session: 1 }) && view.shard(x)?.record.owner?.slot !== who ? [x] : []));
          if (mine.length > 0) {
            const x = mine[Math.floor(rand() * mine.length)]!;
            take(x, who);
            events.push(`${step} m${who} takes ${x} (its target)`);
          }
        } else if (r < 0.6) {
          take(s, who);
          events.push(`${step} m${who} takes ${s}`);
        } else if (r < 0.7) {
          take(s, null);
          events.push(`${step} shard ${s} given up`);
        } else if (r < 0.74) {
          state[who] = state[who] === 'active' ? 'leaving' : 'active';
          store.put(slotOf(who));
          events.push(`${step} m${who} ${state[who]}`);
        }
        for (let i = 0; i < state.length; i++) if (rand() < 0.3) store.put(slotOf(i));
        const sent = clock.monotonic();
        assert.equal(view.observeChanges(store.changes(), sent), true);
        const t = memo.of('g', facts(), view);
        assert.deepEqual(
          t,
          targetOf('g', facts()),
          `seed ${seed} step ${step}: the memo's target is not the one assigned anew\n${events.slice(-8).join('\n')}`,
        );
        if (view.ownersEpoch !== lastEpoch) {
          if (t === last) followed++;
          else assigned++;
        }
        last = t;
        lastEpoch = view.ownersEpoch;
      }
    }
    console.log(`${followed} owner changes followed, ${assigned} assigned anew`);
    assert.ok(followed > assigned, `${followed} owner changes followed, ${assigned} assigned anew`);
  });
});
