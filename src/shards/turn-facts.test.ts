import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { GroupView, sessionKey } from './group-view.js';
import { shardFact, shardFacts } from './turn-facts.js';
import type { VersionedGroupRecord } from '../backends/group-store.js';

const N = 1000;

/** A view of N shards owned in turn by two sessions, slot 0's live and slot 1's gone from its slot; one shard absent, one free. */
function view(): GroupView {
  const v = new GroupView(new FakeClock(), N, 15_000, 6_400);
  const list: VersionedGroupRecord[] = [
    {
      record: { kind: 'member', index: 0, holderIdentity: 'a', session: 1, state: 'active', renewTime: new Date(0), leaseDurationSeconds: 15 },
      version: 's0',
    },
  ];
  for (let s = 1; s < N; s++) {
    const owner = s === 1 ? null : { slot: s % 2, session: 1 };
    list.push({ record: { kind: 'shard', index: s, holderIdentity: owner ? `m${owner.slot}` : '', owner, token: s, acquireTime: null }, version: `v${s}` });
  }
  v.observe(list, 0);
  return v;
}

describe('the facts a turn is planned from', () => {
  it('say of each shard what shardFact says of it alone', () => {
    const v = view();
    const all = shardFacts(v);
    assert.equal(all.length, N);
    all.forEach((f, s) => assert.deepEqual(f, shardFact(v, s), `shard ${s}`));
    assert.equal(all[0]!.present, false);
    assert.equal(all[1]!.owner, null);
    assert.equal(all[2]!.owner, sessionKey({ slot: 0, session: 1 }));
  });

  it("judge each owner session's liveness once, not once per shard it names", () => {
    // At N = 4096 the per-shard judgment (a key made and looked up each time) was a large part of a turn.
    const v = view();
    const live = v.live.bind(v);
    let judged = 0;
    v.live = (id) => {
      judged++;
      return live(id);
    };
    shardFacts(v);
    assert.equal(judged, 2, 'two sessions own the shards');
  });
});
