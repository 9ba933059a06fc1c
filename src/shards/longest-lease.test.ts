/**
 * The longest lease in the group header (longest-lease.ts; docs/design.md, "The longest lease in
 * the header"): a member that never saw the slot announcing a longer lease still waits an absent
 * shard out for it, once a member that saw it has raised the header.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { ShardMember } from './shard-member.js';
import { GroupView } from './group-view.js';
import { longestLeaseField, raisedLongestLease } from './longest-lease.js';
import type { GroupHeader, MemberSlot, ShardRecord } from '../backends/group-store.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const LONG_SECONDS = 30;
const G = 'workers';
const SHARDS = 4;
const header = (over: Partial<GroupHeader> = {}): GroupHeader => ({ kind: 'group', index: 0, shards: SHARDS, createdAt: new Date(0), ...over });

describe('the header’s longest lease, pure', () => {
  it('is raised only when a member saw a longer lease than the header holds, never lowered', () => {
    assert.deepEqual(raisedLongestLease(header(), 30_000), header({ longestLeaseSeconds: 30 }), 'a header from before it');
    assert.deepEqual(raisedLongestLease(header({ longestLeaseSeconds: 15 }), 30_000), header({ longestLeaseSeconds: 30 }));
    assert.equal(raisedLongestLease(header({ longestLeaseSeconds: 30 }), 30_000), null);
    assert.equal(raisedLongestLease(header({ longestLeaseSeconds: 30 }), 15_000), null, 'never lowered');
    assert.equal(raisedLongestLease(header(), 0), null, 'a member that saw no lease writes nothing');
    assert.deepEqual(longestLeaseField(0), {});
    assert.deepEqual(longestLeaseField(2_500), { longestLeaseSeconds: 2.5 });
  });

  it('a view waits an absent shard out for the header’s longest lease when no slot it saw announced one that long', () => {
    const clock = new FakeClock();
    const view = new GroupView(clock, SHARDS, T.leaseDurationMs, T.retryPeriodMs * 3);
    view.observe([{ record: header(), version: '1' }], clock.monotonic());
    assert.equal(view.absentWaitLeftMs(0), T.leaseDurationMs, 'its own lease, with nothing longer seen');
    view.observe([{ record: header({ longestLeaseSeconds: LONG_SECONDS }), version: '2' }], clock.monotonic());
    assert.equal(view.absentWaitLeftMs(0), LONG_SECONDS * 1000);
    assert.equal(view.longestLeaseSeen, LONG_SECONDS * 1000);
    // A header written back lower (or by an older version, without it) does not shorten the wait.
    view.observe([{ record: header(), version: '3' }], clock.monotonic());
    assert.equal(view.absentWaitLeftMs(0), LONG_SECONDS * 1000);
  });
});

describe('a shard group’s longest lease, carried by the header', () => {
  const world = () => {
    const clock = new FakeClock();
    const store = new MemoryGroupStore();
    const member = (identity: string, gained: number[] = []) =>
      new ShardMember({
        ...T,
        store,
        group: G,
        shards: SHARDS,
        identity,
        clock,
        listener: { onShardGained: () => void gained.push(clock.monotonic()) },
      });
    const until = async (cond: () => boolean, ms: number) => {
      for (let t = 0; t < ms && !cond(); t += 100) await clock.advance(100);
      return cond();
    };
    const storedHeader = () => store.peek(G).find((v) => v.record.kind === 'group')?.record as GroupHeader | undefined;
    // A member on a 30 s lease, written by hand (another process: its slot and the shard it holds).
    const longSlot: MemberSlot = {
      kind: 'member',
      index: 5,
      holderIdentity: 'long',
      session: 1,
      state: 'leaving',
      renewTime: clock.now(),
      leaseDurationSeconds: LONG_SECONDS,
    };
    return { clock, store, member, until, storedHeader, longSlot };
  };

  it('a newcomer that never saw the slot of a member on a longer lease waits its absent shards out for that lease, raised into the header by a member that saw it', async () => {
    const w = world();
    const a = w.member('a');
    await a.start();
    assert.ok(await w.until(() => a.ownedCount() === SHARDS, 60_000), 'a owns the group');
    assert.equal(w.storedHeader()?.longestLeaseSeconds, T.leaseDurationMs / 1000, 'the founder writes its own lease');
    w.store.put(G, { ...w.longSlot, renewTime: w.clock.now() });
    assert.ok(await w.until(() => w.storedHeader()?.longestLeaseSeconds === LONG_SECONDS, 10_000), 'a raised the header to the slot’s lease');
    await Promise.all([a.stop(), w.clock.advance(T.retryPeriodMs)]);
    // The long member's slot and every shard record lost (deleted; a replaced file, its header kept
    // by a running member's write-back); it is cut off and still works on a shard it held.
    w.store.delete(G, w.longSlot);
    for (let s = 0; s < SHARDS; s++) w.store.delete(G, { kind: 'shard', index: s });
    const gained: number[] = [];
    const b = w.member('b', gained);
    const startedAt = w.clock.monotonic();
    await b.start();
    assert.ok(await w.until(() => b.ownedCount() === SHARDS, 60_000), 'b creates the shards in the end');
    const first = Math.min(...gained) - startedAt;
    assert.ok(first >= LONG_SECONDS * 1000, `b created a shard ${first} ms after its first list, before the ${LONG_SECONDS} s lease the header holds`);
    assert.ok(first <= LONG_SECONDS * 1000 + 3 * T.retryPeriodMs, `b waited ${first} ms, past the longest lease and its turns`);
    await Promise.all([b.stop(), w.clock.advance(T.retryPeriodMs)]);
  });

  it('a deleted header is written back with the longest lease its writer saw', async () => {
    const w = world();
    const a = w.member('a');
    await a.start();
    assert.ok(await w.until(() => a.ownedCount() === SHARDS, 60_000));
    w.store.put(G, { ...w.longSlot, renewTime: w.clock.now() });
    assert.ok(await w.until(() => w.storedHeader()?.longestLeaseSeconds === LONG_SECONDS, 10_000));
    w.store.delete(G, { kind: 'group', index: 0 });
    assert.ok(await w.until(() => w.storedHeader() !== undefined, 10_000), 'a wrote the header back');
    assert.equal(w.storedHeader()?.longestLeaseSeconds, LONG_SECONDS);
    const owned = (w.store.peek(G).filter((v) => v.record.kind === 'shard') as { record: ShardRecord }[]).filter((v) => v.record.owner !== null);
    assert.equal(owned.length, SHARDS, 'the group kept working');
    await Promise.all([a.stop(), w.clock.advance(T.retryPeriodMs)]);
  });
});
