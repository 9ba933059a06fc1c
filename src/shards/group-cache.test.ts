import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCache } from './group-cache.js';
import { BackendUnavailableError, ConflictError } from '../errors.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { FakeClock } from '../testing/fake-clock.js';
import { contractHeader, contractShard, contractSlot } from '../testing/group-store-contract.js';
import type { GroupStore, VersionedGroupRecord } from '../backends/group-store.js';

const byKey = (list: VersionedGroupRecord[]) => list.map((r) => `${r.record.kind}/${r.record.index}@${r.version}`).sort((a, b) => a.localeCompare(b));

/** A group of `shards` shards, a header and two members, as a running group has. */
function seeded(shards: number): MemoryGroupStore {
  const store = new MemoryGroupStore();
  store.put('g', contractHeader({ shards }));
  store.put('g', contractSlot(0));
  store.put('g', contractSlot(1, { holderIdentity: 'b' }));
  for (let i = 0; i < shards; i++) store.put('g', contractShard(i, { owner: { slot: i % 2, session: 1 } }));
  return store;
}

/** `store`, its reads by change through `readGroupChanges` (to count them, or to make them fail). */
function readingThrough(store: MemoryGroupStore, readGroupChanges: NonNullable<GroupStore['readGroupChanges']>): GroupStore {
  return {
    backend: store.backend,
    location: store.location,
    listGroup: (g, o) => store.listGroup(g, o),
    createGroupRecord: (g, r, o) => store.createGroupRecord(g, r, o),
    updateGroupRecord: (g, r, v, o) => store.updateGroupRecord(g, r, v, o),
    writeGroupRecords: (g, w, o) => store.writeGroupRecords(g, w, o),
    readGroupChanges,
  };
}

/** The store, counting the reads by change that were full ones (no cursor). */
function countingFullReads(store: MemoryGroupStore): { watched: GroupStore; full: () => number } {
  const cursors: (string | undefined)[] = [];
  const watched = readingThrough(store, async (g, c, o) => {
    cursors.push(c);
    const answer = await store.readGroupChanges(g, c, o);
    // A full answer to a cursor counts too (the store could not continue from it).
    if (c !== undefined && answer.full) cursors.push(undefined);
    return answer;
  });
  return { watched, full: () => cursors.filter((c) => c === undefined).length };
}

describe('GroupCache', () => {
  it('reads the group in full once, then only what changed: a heartbeat is one record, and the copy always equals the list', async () => {
    const store = seeded(256);
    const clock = new FakeClock();
    const cache = new GroupCache(store, 'g');
    const returned: number[] = [];
    const counting = readingThrough(store, async (g, c, o) => {
      const answer = await store.readGroupChanges(g, c, o);
      returned.push(answer.records.length);
      return answer;
    });
    const counted = new GroupCache(counting, 'g');
    assert.deepEqual(byKey(await counted.read()), byKey(store.peek('g')));
    for (let beat = 1; beat <= 10; beat++) {
      await clock.advance(2_000);
      store.put('g', contractSlot(1, { holderIdentity: 'b', renewTime: new Date(clock.now()) }));
      assert.deepEqual(byKey(await counted.read()), byKey(store.peek('g')));
    }
    assert.deepEqual(returned, [259, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    store.clearCalls();
    await cache.read();
    await cache.read();
    assert.deepEqual(store.calls, ['changes', 'changes']);
  });

  it("a deleted record is gone from the copy at the next read (the count is smaller); reread() is the store's list", async () => {
    const store = seeded(4);
    const { watched, full } = countingFullReads(store);
    const cache = new GroupCache(watched, 'g');
    await cache.read();
    assert.equal(full(), 1);
    // Deleted, and another record created in its place: the count alone would not change.
    store.delete('g', { kind: 'shard', index: 3 });
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    store.put('g', contractShard(9));
    store.delete('g', { kind: 'shard', index: 2 });
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.equal(full(), 3, 'each deletion costs one full read');
    store.clearCalls();
    assert.deepEqual(byKey(await cache.reread()), byKey(store.peek('g')));
    assert.deepEqual(store.calls, ['list'], "reread() is the store's list, never a read by change (a watch's copy may lag)");
    assert.equal(cache.fromWatch, false);
    assert.equal(new GroupCache({ ...watched, changesFromWatch: true }, 'g').fromWatch, true);
  });

  it('where the store marks deletions in place of a count (SQLite): a deletion shows by its mark, a creation in its place too; writes alone read no group', async () => {
    const store = seeded(4);
    let deletions = 0;
    const del = (index: number) => {
      store.delete('g', { kind: 'shard', index });
      deletions++;
    };
    const { watched, full } = countingFullReads(store);
    const marking = readingThrough(store, async (g, c, o) => {
      const { records, cursor, full: whole } = await watched.readGroupChanges!(g, c, o);
      return { records, cursor, full: whole, deletionMark: `m${deletions}` };
    });
    const cache = new GroupCache(marking, 'g');
    await cache.read();
    for (let beat = 1; beat <= 5; beat++) {
      store.put('g', contractSlot(1, { holderIdentity: 'b', renewTime: new Date(beat * 2_000) }));
      await cache.read();
    }
    store.put('g', contractShard(9));
    await cache.read();
    assert.equal(full(), 1, 'writes and creations alone read the group in full');
    // The count of records unchanged: only the mark tells.
    del(3);
    store.put('g', contractShard(10));
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.equal(full(), 2, 'the deletion was not read in full');
    store.put('g', contractShard(11));
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.equal(full(), 2, 'a deletion shown once read the group in full again');
    del(0);
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.equal(full(), 3);
    // A store that cannot tell (no mark kept for the group: deleted by hand) reads in full each time.
    const unknown = new GroupCache(
      readingThrough(store, async (g, c, o) => ({ ...(await store.readGroupChanges(g, c, o)), total: undefined, deletionMark: null })),
      'g',
    );
    store.clearCalls();
    await unknown.read();
    await unknown.read();
    assert.deepEqual(store.calls, ['changes', 'changes', 'changes'], 'a read with no mark was taken as no deletion');
  });

  it('no full read by the clock: ten idle minutes of heartbeats read no whole group after the first (issue 43)', async () => {
    const store = seeded(256);
    const clock = new FakeClock();
    const { watched, full } = countingFullReads(store);
    const cache = new GroupCache(watched, 'g');
    await cache.read();
    for (let beat = 1; beat <= 300; beat++) {
      await clock.advance(2_000);
      store.put('g', contractSlot(1, { holderIdentity: 'b', renewTime: new Date(clock.now()) }));
      await cache.read();
    }
    assert.deepEqual(byKey(cache.snapshot()), byKey(store.peek('g')));
    assert.equal(full(), 1, 'a whole-group read after the first, in ten idle minutes');
  });

  it('a version written by hand below the cursor is found at the read after a write it made lose: single, create and batch', async () => {
    const store = seeded(4);
    const { watched, full } = countingFullReads(store);
    const cache = new GroupCache(watched, 'g');
    const writer = cache.writer();
    await cache.read();
    const held = (i: number) => cache.snapshot().find((r) => r.record.kind === 'shard' && r.record.index === i)!;
    // Written outside the protocol, at a version below the cursor (1, the header's): no read by change brings it.
    store.forge('g', contractShard(0, { token: 7 }), '1');
    const stale = held(0);
    await cache.read();
    assert.equal(held(0).version, stale.version, 'the read by change cannot see it');
    await assert.rejects(writer.updateGroupRecord('g', contractShard(0, { token: 2 }), stale.version), ConflictError);
    assert.equal(full(), 1);
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')), 'the copy after the lost write');
    assert.equal(full(), 2, 'the unexplained loss read the group in full');

    // A batch's lost row, the same way.
    store.forge('g', contractShard(1, { token: 9 }), '2');
    const [outcome] = await writer.writeGroupRecords!('g', [{ record: contractShard(1, { token: 2 }), expectedVersion: held(1).version }]);
    assert.equal(outcome?.written, false);
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.equal(full(), 3);

    // A create that lost to a record inserted below the cursor, while another was deleted (the count stays).
    store.forge('g', contractShard(5), '3');
    store.delete('g', { kind: 'shard', index: 3 });
    await cache.read();
    assert.equal(full(), 3, 'the count alone shows nothing');
    await assert.rejects(writer.createGroupRecord('g', contractShard(5)), ConflictError);
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.equal(full(), 4);
  });

  it('a read whose full request fails after it took changes in makes the next read a full one', async () => {
    const store = seeded(4);
    let failFull = false;
    const watched = readingThrough(store, async (g, c, o) => {
      if (c === undefined && failFull) {
        failFull = false;
        throw new BackendUnavailableError('the connection dropped');
      }
      return store.readGroupChanges(g, c, o);
    });
    const cache = new GroupCache(watched, 'g');
    const writer = cache.writer();
    assert.equal((await cache.readChanges()).changes, null, 'the first read is a full one');
    // A write lost to a version set by hand below the cursor: the next read must read in full.
    store.forge('g', contractShard(0, { token: 7 }), '1');
    const stale = cache.snapshot().find((r) => r.record.kind === 'shard' && r.record.index === 0)!;
    await assert.rejects(writer.updateGroupRecord('g', contractShard(0, { token: 2 }), stale.version), ConflictError);
    // Meanwhile another member took shard 2: the read by change brings it, then its full request fails.
    store.put('g', contractShard(2, { owner: { slot: 1, session: 2 }, holderIdentity: 'b' }));
    failFull = true;
    await assert.rejects(cache.readChanges(), BackendUnavailableError);
    // Only a heartbeat since: the read that follows must not be the heartbeat alone.
    store.put('g', contractSlot(1, { holderIdentity: 'b' }));
    const next = await cache.readChanges();
    assert.equal(next.changes, null, 'a full read: the take of shard 2 reaches its reader');
    assert.deepEqual(byKey(next.all()), byKey(store.peek('g')));
  });

  it('a write lost to another member is explained by the next read by change: no full read', async () => {
    const store = seeded(4);
    const { watched, full } = countingFullReads(store);
    const cache = new GroupCache(watched, 'g');
    const writer = cache.writer();
    await cache.read();
    const before = cache.snapshot().find((r) => r.record.kind === 'shard' && r.record.index === 0)!;
    store.put('g', contractShard(0, { token: 2, owner: { slot: 1, session: 1 } }));
    await assert.rejects(writer.updateGroupRecord('g', contractShard(0, { token: 2 }), before.version), ConflictError);
    store.put('g', contractShard(4));
    await assert.rejects(writer.createGroupRecord('g', contractShard(4)), ConflictError);
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.equal(full(), 1, 'a race another member won read the group in full');
    // Another group's refusals are not this copy's.
    store.put('h', contractShard(0));
    await assert.rejects(writer.createGroupRecord('h', contractShard(0)), ConflictError);
    await cache.read();
    assert.equal(full(), 1);
    // A store read from a watch's copy, or listed every time, is written to as it is.
    const fromWatch: GroupStore = { ...watched, changesFromWatch: true };
    assert.equal(new GroupCache(fromWatch, 'g').writer(), fromWatch);
    const listed: GroupStore = { ...watched, readGroupChanges: undefined };
    assert.equal(new GroupCache(listed, 'g').writer(), listed);
    assert.notEqual(cache.writer(), watched);
  });

  it('a failed read changes nothing; the next continues from the same cursor and misses nothing', async () => {
    const store = seeded(4);
    const cache = new GroupCache(store, 'g');
    await cache.read();
    const before = byKey(cache.snapshot());
    store.put('g', contractShard(1, { token: 2 }));
    store.failNext('changes', new Error('the store is down'));
    await assert.rejects(cache.read(), /the store is down/);
    assert.deepEqual(byKey(cache.snapshot()), before);
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
  });

  it('reads run one at a time: two asked at once both see the group, applied in order', async () => {
    const store = seeded(4);
    const cache = new GroupCache(store, 'g');
    await cache.read();
    store.put('g', contractShard(0, { token: 5 }));
    const [a, b] = await Promise.all([cache.read(), cache.read()]);
    assert.deepEqual(byKey(a), byKey(store.peek('g')));
    assert.deepEqual(byKey(b), byKey(store.peek('g')));
  });

  it('a store without readGroupChanges is listed in full every read', async () => {
    const store = seeded(4);
    const plain: GroupStore = {
      backend: 'plain',
      location: 'memory',
      listGroup: (g, o) => store.listGroup(g, o),
      createGroupRecord: (g, r, o) => store.createGroupRecord(g, r, o),
      updateGroupRecord: (g, r, v, o) => store.updateGroupRecord(g, r, v, o),
    };
    const cache = new GroupCache(plain, 'g');
    store.clearCalls();
    await cache.read();
    store.delete('g', { kind: 'shard', index: 0 });
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.deepEqual(store.calls, ['list', 'list']);
  });
});
