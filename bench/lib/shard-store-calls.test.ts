import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryGroupStore } from '../../src/testing/memory-group-store.js';
import { measureStoreCalls, storeCallsMarkdown } from './shard-store-calls.js';

describe('the store calls alone', () => {
  it('measures on a store that answers at once, heartbeats included, and leaves every shard written as the pass left it', async () => {
    // A store answering without I/O (as SQLite's synchronous calls do) once kept the heartbeats
    // in microtasks and starved the pass: the measurement never ended.
    const store = new MemoryGroupStore();
    const t = await measureStoreCalls(store, 'g', 600);
    assert.equal(t.passRows, 300);
    assert.ok(t.heartbeatDuringPassMs.count >= 1, 'at least one heartbeat while the pass ran');
    assert.ok(t.noChangeMs !== null);
    const shards = (await store.listGroup('g')).filter((v) => v.record.kind === 'shard');
    assert.equal(shards.length, 600);
    const freeShards = new Set(shards.flatMap((v) => (v.record.kind === 'shard' && v.record.owner === null ? [v.record.index] : [])));
    for (let s = 0; s < 300; s++) assert.ok(freeShards.has(s), `the pass released shard ${s}`);
    const md = storeCallsMarkdown([{ store: 'memory', load: 1, t }]);
    assert.match(md, /\| memory \| 600 \| /);
  });
});
