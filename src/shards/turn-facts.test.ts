import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { GroupView, sessionKey } from './group-view.js';
import { shardFact, shardFacts, ShardFactsMemo } from './turn-facts.js';
import type { VersionedGroupRecord } from '../backends/group-store.js';

const N = 1000;

/** A view of N shards owned in turn by two sessions, slot 0's live and slot 1's gone from its slot; one shard absent, one free. */
function view(clock = new FakeClock()): GroupView {
  const v = new GroupView(clock, N, 15_000, 6_400);
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

describe('the facts kept between asks', () => {
  it("are computed once while the view's structure and time stand; a write, or the next flip, computes them again", async () => {
    const clock = new FakeClock();
    const v = view(clock);
    const memo = new ShardFactsMemo();
    // The same array back is facts not computed again; they must still be the facts as they are now.
    const ask = () => {
      const facts = memo.of(v, clock.monotonic());
      assert.deepEqual(facts, shardFacts(v), 'the facts as they are now');
      return facts;
    };
    const first = ask();
    await clock.advance(1_000);
    assert.equal(ask(), first, 'one second on: the same facts, not computed again');

    // Our write of a shard moves the structure: computed again.
    const rec = v.shard(1)!;
    v.wrote({ record: { ...rec.record, owner: { slot: 0, session: 1 }, holderIdentity: 'a', token: 5_000 }, version: 'w1' });
    const written = ask();
    assert.notEqual(written, first);
    assert.equal(written[1]!.owner, sessionKey({ slot: 0, session: 1 }));

    // Slot 1's session, gone from its slot since the first list, is over a lease duration after it: its shards' facts flip.
    assert.equal(written[3]!.ownerLive, true);
    await clock.advance(13_999);
    assert.equal(ask(), written, 'short of the flip: kept');
    await clock.advance(1);
    const flipped = ask();
    assert.notEqual(flipped, written, 'at the flip: computed again');
    assert.equal(flipped[3]!.ownerLive, false, "slot 1's session is over");
  });

  it('a session that ends while the facts are judged still bounds them: they are judged again after its end', async () => {
    // Judging N shards takes milliseconds (more without a JIT): here 10 ms pass at the k-th read
    // of the clock, for every k the memo reaches. Slot 1's session, out of its slot since the first
    // list, ends at 15,000; the facts are asked at 14,995, and again long after with nothing changed.
    class SlowJudgment extends FakeClock {
      reads = 0;
      passesAt = Infinity;
      passed = 0;
      override monotonic(): number {
        if (++this.reads >= this.passesAt) this.passed = 10;
        return super.monotonic() + this.passed;
      }
    }
    for (let k = 1; k <= 8; k++) {
      const clock = new SlowJudgment();
      const v = view(clock);
      const memo = new ShardFactsMemo();
      await clock.advance(14_995);
      clock.reads = 0;
      clock.passesAt = k;
      memo.of(v, clock.monotonic());
      clock.passesAt = Infinity;
      await clock.advance(45_000);
      assert.deepEqual(memo.of(v, clock.monotonic()), shardFacts(v), `time passing at read ${k}: the facts as they are now`);
    }
  });
  it('patch the shards a read changed, alone; a session those name anew bounds them all', async () => {
    // A group with no member slot and every shard free: nothing in the view can flip, so the facts
    // stand for ever. Then a read brings shard 3 naming a session this member never saw in a slot:
    // live for a lease duration from now, and the facts kept must end with it.
    const clock = new FakeClock();
    const v = new GroupView(clock, 8, 15_000, 6_400);
    const rec = (s: number, owner: { slot: number; session: number } | null): VersionedGroupRecord => ({
      record: { kind: 'shard', index: s, holderIdentity: owner ? 'x' : '', owner, token: s + 1, acquireTime: null },
      version: `v${s}-${owner?.session ?? 0}`,
    });
    v.observe(
      Array.from({ length: 8 }, (_, s) => rec(s, null)),
      0,
    );
    const memo = new ShardFactsMemo();
    const first = memo.of(v, clock.monotonic());
    await clock.advance(1_000);
    assert.equal(v.observeChanges([rec(3, { slot: 5, session: 1 })], clock.monotonic()), true);
    assert.deepEqual(v.changesSince(v.structureEpoch - 1), { shards: [3], sessions: [] });
    const patched = memo.of(v, clock.monotonic());
    assert.deepEqual(patched, shardFacts(v), 'the facts as they are now');
    assert.equal(patched[3]!.ownerLive, true);
    assert.equal(patched[4], first[4], "an unchanged shard's facts are kept, not judged again");
    await clock.advance(15_000);
    const over = memo.of(v, clock.monotonic());
    assert.equal(over[3]!.ownerLive, false, 'judged again when the session named anew is over');
    assert.deepEqual(over, shardFacts(v));
  });

  it('a record of ours naming a session out of its slot gives that session an end at the next read, and the facts kept end with it', async () => {
    // A write-back names the session that held the shard (vanished-shards.ts), which may be one
    // that ended: out of its slot, it starts counting at the next read, as a whole observe there
    // would start it. The read brings nothing new (our own record), yet the facts kept until then
    // (nothing in the view could flip) must end with that session.
    const clock = new FakeClock();
    const v = new GroupView(clock, 4, 15_000, 6_400);
    const free = (s: number): VersionedGroupRecord => ({
      record: { kind: 'shard', index: s, holderIdentity: '', owner: null, token: s + 1, acquireTime: null },
      version: `f${s}`,
    });
    v.observe([0, 1, 2, 3].map(free), 0);
    const memo = new ShardFactsMemo();
    memo.of(v, clock.monotonic());
    await clock.advance(1_000);
    const ours: VersionedGroupRecord = {
      record: { kind: 'shard', index: 0, holderIdentity: 'a', owner: { slot: 5, session: 1 }, token: 9, acquireTime: null },
      version: 'w0',
    };
    v.wrote(ours);
    assert.equal(memo.of(v, clock.monotonic())[0]!.ownerLive, true);
    await clock.advance(1_000);
    assert.equal(
      v.observeChanges([ours], clock.monotonic(), (k) => (k === 'shard/0' ? 'w0' : undefined)),
      true,
    );
    await clock.advance(15_000);
    assert.equal(shardFacts(v)[0]!.ownerLive, false, 'over a lease after the read');
    assert.deepEqual(memo.of(v, clock.monotonic()), shardFacts(v), 'the facts kept ended with it');
  });
});
