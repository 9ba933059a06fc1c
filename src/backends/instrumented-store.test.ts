/**
 * The sidecar's timed group store passes every call on, the batch call and the read by change
 * included: without them a member behind the sidecar's metrics would see a store without batches
 * and write one shard at a time, or list the whole group at every read.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { contractShard } from '../testing/group-store-contract.js';
import { InstrumentedGroupStore } from './instrumented-store.js';

describe('InstrumentedGroupStore', () => {
  it('has the batch call where the store has one, passes it on, and times it as op batch', async () => {
    const registry = new Registry();
    const histogram = new Histogram({ name: 'test_requests', help: 'test', labelNames: ['backend', 'op', 'result'] as const, registers: [registry] });
    const inner = new MemoryGroupStore();
    const timed = new InstrumentedGroupStore(inner, histogram);
    assert.ok(timed.writeGroupRecords, 'the batch call was dropped');
    const outcomes = await timed.writeGroupRecords('g', [
      { record: contractShard(0), expectedVersion: null },
      { record: contractShard(1), expectedVersion: null },
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.written),
      [true, true],
    );
    assert.deepEqual(inner.calls, ['write']);
    const counts = (await histogram.get()).values.filter((v) => v.metricName === 'test_requests_count');
    assert.deepEqual(
      counts.map((v) => [v.labels.op, v.labels.result, v.value]),
      [['batch', 'ok', 1]],
    );
  });

  it('has the read by change where the store has one, passes it on, and times it as op changes', async () => {
    const registry = new Registry();
    const histogram = new Histogram({ name: 'test_requests', help: 'test', labelNames: ['backend', 'op', 'result'] as const, registers: [registry] });
    const inner = new MemoryGroupStore();
    await inner.createGroupRecord('g', contractShard(0));
    const timed = new InstrumentedGroupStore(inner, histogram);
    assert.ok(timed.readGroupChanges, 'the read by change was dropped: the member would list the whole group every time');
    const first = await timed.readGroupChanges('g', undefined);
    assert.deepEqual(first.records, await inner.listGroup('g'));
    await inner.createGroupRecord('g', contractShard(1));
    const next = await timed.readGroupChanges('g', first.cursor);
    assert.deepEqual(
      next.records.map((r) => r.record),
      [contractShard(1)],
    );
    const counts = (await histogram.get()).values.filter((v) => v.metricName === 'test_requests_count');
    assert.deepEqual(
      counts.map((v) => [v.labels.op, v.labels.result, v.value]),
      [['changes', 'ok', 2]],
    );
  });

  it('has none where the store has none, so the member writes one record at a time', () => {
    const registry = new Registry();
    const histogram = new Histogram({ name: 'test_requests', help: 'test', labelNames: ['backend', 'op', 'result'] as const, registers: [registry] });
    // A library user's own store, with the three calls and no batch.
    const inner = { backend: 'own', location: 'own', listGroup: async () => [], createGroupRecord: async () => '1', updateGroupRecord: async () => '2' };
    const timed = new InstrumentedGroupStore(inner, histogram);
    assert.equal(timed.writeGroupRecords, undefined);
    // Nor a read by change: the member lists the group instead (GroupCache).
    assert.equal(timed.readGroupChanges, undefined);
    assert.equal(timed.changesFromWatch, undefined);
  });

  it("says, as the store does, that its reads by change come from a watch's copy", () => {
    const registry = new Registry();
    const histogram = new Histogram({ name: 'test_requests', help: 'test', labelNames: ['backend', 'op', 'result'] as const, registers: [registry] });
    const inner = Object.assign(new MemoryGroupStore(), { changesFromWatch: true });
    // Dropped, a member would take from time passing on a copy that may lag, without re-reading.
    assert.equal(new InstrumentedGroupStore(inner, histogram).changesFromWatch, true);
  });

  it("does not time a read answered from a watch's copy as a request, but counts it as a read", async () => {
    const registry = new Registry();
    const histogram = new Histogram({ name: 'test_requests', help: 'test', labelNames: ['backend', 'op', 'result'] as const, registers: [registry] });
    const reads = new Counter({ name: 'test_reads', help: 'test', labelNames: ['group', 'read'] as const, registers: [registry] });
    const records = new Counter({ name: 'test_records', help: 'test', labelNames: ['group', 'read'] as const, registers: [registry] });
    // As the Kubernetes store: its reads by change come from the copy its watch keeps, no request sent.
    const inner = Object.assign(new MemoryGroupStore(), { changesFromWatch: true });
    await inner.createGroupRecord('g', contractShard(0));
    const timed = new InstrumentedGroupStore(inner, histogram, { reads, records });
    const first = await timed.readGroupChanges!('g', undefined);
    await timed.readGroupChanges!('g', first.cursor);
    await timed.listGroup('g');
    const counts = (await histogram.get()).values.filter((v) => v.metricName === 'test_requests_count');
    assert.deepEqual(
      counts.map((v) => [v.labels.op, v.labels.result, v.value]),
      [['list', 'ok', 1]],
    );
    const readCounts: Record<string, number> = Object.fromEntries((await reads.get()).values.map((v) => [String(v.labels.read), v.value]));
    assert.deepEqual(readCounts, { full: 2, changes: 1 });
  });

  it('counts whole-group reads apart from reads of changes, and the records each brought', async () => {
    const registry = new Registry();
    const histogram = new Histogram({ name: 'test_requests', help: 'test', labelNames: ['backend', 'op', 'result'] as const, registers: [registry] });
    const reads = new Counter({ name: 'test_reads', help: 'test', labelNames: ['group', 'read'] as const, registers: [registry] });
    const records = new Counter({ name: 'test_records', help: 'test', labelNames: ['group', 'read'] as const, registers: [registry] });
    const inner = new MemoryGroupStore();
    for (const i of [0, 1, 2]) await inner.createGroupRecord('g', contractShard(i));
    const counted = new InstrumentedGroupStore(inner, histogram, { reads, records });
    const first = await counted.readGroupChanges!('g', undefined); // no cursor: the whole group
    await inner.updateGroupRecord('g', { ...contractShard(1), token: 9 }, first.records.find((r) => r.record.index === 1)!.version);
    const next = await counted.readGroupChanges!('g', first.cursor);
    assert.equal(next.full, false);
    assert.equal(next.records.length, 1);
    await counted.listGroup('g');
    const values = async (c: Counter<'group' | 'read'>) =>
      Object.fromEntries((await c.get()).values.map((v) => [`${v.labels.group} ${v.labels.read}`, v.value]));
    // Two whole-group reads (the first read by change, the list) of 3 records each; one of changes, of 1.
    assert.deepEqual(await values(reads), { 'g full': 2, 'g changes': 1 });
    assert.deepEqual(await values(records), { 'g full': 6, 'g changes': 1 });
  });
});
