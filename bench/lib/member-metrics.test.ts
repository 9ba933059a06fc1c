import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countsBetween, parseRequestCounts } from './member-metrics.js';

/** A shard member's /metrics, cut down to the series read and a few it must leave alone. */
const metrics = (o: { lists: number; changes: number; fullReads: number; changeReads: number; fullRecords: number; changeRecords: number }) => `
# HELP leasehold_backend_request_duration_seconds Latency.
leasehold_backend_request_duration_seconds_bucket{le="0.001",backend="sqlite",op="list",result="ok"} ${o.lists}
leasehold_backend_request_duration_seconds_count{backend="sqlite",op="list",result="ok"} ${o.lists}
leasehold_backend_request_duration_seconds_count{backend="sqlite",op="changes",result="ok"} ${o.changes}
leasehold_backend_request_duration_seconds_count{backend="sqlite",op="update",result="conflict"} 2
leasehold_shard_group_reads_total{group="g",read="full"} ${o.fullReads}
leasehold_shard_group_reads_total{group="g",read="changes"} ${o.changeReads}
leasehold_shard_group_records_read_total{group="g",read="full"} ${o.fullRecords}
leasehold_shard_group_records_read_total{group="g",read="changes"} ${o.changeRecords}
leasehold_shard_turns_total{group="g",turn="planned"} 5
leasehold_shard_turns_total{group="g",turn="quiet"} 17
leasehold_shards_owned{group="g"} 8
`;

describe("a member's counts from its /metrics", () => {
  it('requests by op and result, reads and records by kind, turns; buckets and other series left out', () => {
    const c = parseRequestCounts(metrics({ lists: 1, changes: 40, fullReads: 2, changeReads: 39, fullRecords: 38, changeRecords: 70 }));
    assert.deepEqual(Object.fromEntries(c), {
      'list ok': 1,
      'changes ok': 40,
      'update conflict': 2,
      'reads full': 2,
      'reads changes': 39,
      'records full': 38,
      'records changes': 70,
      'turns planned': 5,
      'turns quiet': 17,
    });
  });

  it('the difference over a window, of the keys asked for', () => {
    const before = parseRequestCounts(metrics({ lists: 1, changes: 40, fullReads: 2, changeReads: 39, fullRecords: 38, changeRecords: 70 }));
    const after = parseRequestCounts(metrics({ lists: 1, changes: 70, fullReads: 3, changeReads: 68, fullRecords: 57, changeRecords: 130 }));
    assert.equal(
      countsBetween(before, after, (k) => k === 'reads full'),
      1,
    );
    assert.equal(
      countsBetween(before, after, (k) => k.startsWith('records ')),
      19 + 60,
    );
    assert.equal(
      countsBetween(before, after, (k) => k.startsWith('list ')),
      0,
    );
  });
});
