import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCache, FULL_READ_INTERVAL_MS } from './group-cache.js';
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

describe('GroupCache', () => {
  it('reads the group in full once, then only what changed: a heartbeat is one record, and the copy always equals the list', async () => {
    const store = seeded(256);
    const clock = new FakeClock();
    const cache = new GroupCache(store, 'g', clock);
    const returned: number[] = [];
    const counting: GroupStore = {
      backend: store.backend,
      location: store.location,
      listGroup: (g, o) => store.listGroup(g, o),
      createGroupRecord: (g, r, o) => store.createGroupRecord(g, r, o),
      updateGroupRecord: (g, r, v, o) => store.updateGroupRecord(g, r, v, o),
      readGroupChanges: async (g, c, o) => {
        const answer = await store.readGroupChanges(g, c, o);
        returned.push(answer.records.length);
        return answer;
      },
    };
    const counted = new GroupCache(counting, 'g', clock);
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

  it('a deleted record is gone from the copy at the next read (the count is smaller), and a full read is made once a minute whatever happens', async () => {
    const store = seeded(4);
    const clock = new FakeClock();
    const cursors: (string | undefined)[] = [];
    const watched: GroupStore = {
      backend: store.backend,
      location: store.location,
      listGroup: (g, o) => store.listGroup(g, o),
      createGroupRecord: (g, r, o) => store.createGroupRecord(g, r, o),
      updateGroupRecord: (g, r, v, o) => store.updateGroupRecord(g, r, v, o),
      readGroupChanges: (g, c, o) => {
        cursors.push(c);
        return store.readGroupChanges(g, c, o);
      },
    };
    const cache = new GroupCache(watched, 'g', clock);
    const full = () => cursors.filter((c) => c === undefined).length;
    await cache.read();
    assert.equal(full(), 1);
    // Deleted, and another record created in its place: the count alone would not change.
    store.delete('g', { kind: 'shard', index: 3 });
    await clock.advance(1_000);
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    store.put('g', contractShard(9));
    store.delete('g', { kind: 'shard', index: 2 });
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.equal(full(), 3, 'each deletion costs one full read');
    await cache.read();
    // The last full read was sent at 1 s.
    await clock.advance(FULL_READ_INTERVAL_MS - 1);
    await cache.read();
    assert.equal(full(), 3, 'a full read before a minute had passed');
    await clock.advance(1);
    await cache.read();
    assert.equal(full(), 4, 'no full read a minute after the last');
    store.clearCalls();
    assert.deepEqual(byKey(await cache.reread()), byKey(store.peek('g')));
    assert.deepEqual(store.calls, ['list'], "reread() is the store's list, never a read by change (a watch's copy may lag)");
    assert.equal(cache.fromWatch, false);
    assert.equal(new GroupCache({ ...watched, changesFromWatch: true }, 'g', clock).fromWatch, true);
  });

  it('a failed read changes nothing; the next continues from the same cursor and misses nothing', async () => {
    const store = seeded(4);
    const clock = new FakeClock();
    const cache = new GroupCache(store, 'g', clock);
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
    const cache = new GroupCache(store, 'g', new FakeClock());
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
    const cache = new GroupCache(plain, 'g', new FakeClock());
    store.clearCalls();
    await cache.read();
    store.delete('g', { kind: 'shard', index: 0 });
    assert.deepEqual(byKey(await cache.read()), byKey(store.peek('g')));
    assert.deepEqual(store.calls, ['list', 'list']);
  });
});
