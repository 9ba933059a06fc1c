import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { GroupView, sessionKey } from './group-view.js';
import { TargetMemo } from './target-memo.js';
import { shardFacts, slotFacts } from './turn-facts.js';
import { targetOf } from './turn-plan.js';
import type { VersionedGroupRecord } from '../backends/group-store.js';

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
    const target = () => memo.of('g', facts(), view.ownersEpoch);

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
});
