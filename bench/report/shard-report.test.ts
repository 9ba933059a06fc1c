import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ShardCaseResult } from '../lib/shard-chain.js';
import { RECORDS_NOTE, SHARD_MOVE_NOTE, shardReport, type ShardStoreRun } from './shard-report.js';

function aCase(o: { writes?: number; leaveP95?: number; api?: Record<string, number>; recordsFull?: number } = {}): ShardCaseResult {
  const change = { ms: 100, moved: 10, fewest: 10 };
  return {
    shards: 256,
    members: 8,
    growMs: 3000,
    idle: {
      seconds: 30,
      load: 3.5,
      writes: o.writes ?? 120,
      ownWrites: 120,
      lists: 0,
      fullReads: 8,
      changeReads: 600,
      recordsFull: o.recordsFull ?? 8 * 265,
      recordsChanges: 960,
      ...(o.api ? { apiRequests: o.api, fromWatch: true } : {}),
      conflicts: 0,
      cpuPct: 1.5,
      rssMB: [56, 58],
      plainRssMB: 52,
    },
    join: change,
    leave: { ...change, perShardMs: Array.from({ length: 20 }, () => o.leaveP95 ?? 90), balancedMs: 100, exit: 'exit 0' },
    crash: { ...change, ms: 14_000 },
  };
}

const run = (results: ShardCaseResult[]): ShardStoreRun => ({ store: 'SQLite', runtime: 'Node', how: 'a counter', results, load: [1, 2], minutes: 3 });

describe('the shard groups section', () => {
  it('every goal met: the tables, client-go computed beside them, and no explanation of a miss', () => {
    const md = shardReport([run([aCase()])], 30);
    // Per member per minute (a 30 s window, 8 members): 2 whole-group reads, 150 of changes,
    // 240 records by change and 530 in whole-group reads.
    assert.match(
      md,
      /\| SQLite \| 256 \| 8 \| 30\.0 \| 30\.0 \| 2\.0 \| 150\.0 \| 240\.0 \+ 530\.0 \| 0 \| 1\.5 \| 56\.0 \/ 58\.0 \| 52\.0 \| 7,680 \/ 960\.0 \| 3\.5 \|/,
    );
    assert.ok(!md.includes("the API server's requests for the group, beside"), 'no audit log, no requests table');
    assert.match(md, /\| SQLite \| 256 \| 8 \| 100 \| 10 \(10\) \| 90 \/ 90 \/ 100 \| 100 \| 10 \(10\) \| 14000 \| 10 \(10\) \| 3\.0 s \|/);
    assert.ok(!md.includes(SHARD_MOVE_NOTE));
    assert.ok(!md.includes('heartbeats came later'));
  });

  it('a leave past its goal brings the explanation; heartbeats late on a loaded machine are said, with the case and its load', () => {
    const md = shardReport([run([aCase({ leaveP95: 400, writes: 100 })])], 30);
    assert.ok(md.includes(SHARD_MOVE_NOTE));
    assert.match(md, /In SQLite N = 256, M = 8 \(25\.0, load 3\.5\) the store counted fewer than 29 writes a minute per member: heartbeats came later/);
  });

  it("Kubernetes: LISTs the API server counted, the copy's answers in brackets, and its requests beside client-go's way", () => {
    const md = shardReport([{ ...run([aCase({ api: { update: 120, watch: 0 } })]), store: 'Kubernetes' }], 30);
    // No LIST: no whole-group read of the store, and no records from one.
    assert.match(md, /\| Kubernetes \| 256 \| 8 \| 30\.0 \| 30\.0 \| 0\.0 \(2\.0 from its copy\) \| 150\.0 \| 240\.0 \+ 0\.0 \|/);
    // 120 updates in 30 s: 240 a minute for the group, 30 per member; client-go's way 61,440.
    assert.match(
      md,
      /\| Kubernetes \| 256 \| 8 \| 0\.0 \/ 0\.0 \/ 0\.0 \/ 0\.0 \/ 240\.0 \/ 0\.0 \/ 0\.0 \| 240 \| 30\.0 \| 61,440 \(7,680 \+ 53,760\) \/ 7,680 \| 0\.4 % \|/,
    );
    assert.match(md, /N × 30 UPDATEs and N × \(M − 1\) × 30 GETs a minute for the group/);
  });

  it("records over their goal from the minute's whole-group read bring its explanation; within it, none", () => {
    // 8 members, 30 s: 16 × 8 records allowed each; by change 120 each, and a read of 265 on top.
    assert.ok(shardReport([run([aCase()])], 30).includes(RECORDS_NOTE));
    assert.ok(!shardReport([run([aCase({ recordsFull: 0 })])], 30).includes(RECORDS_NOTE));
  });
});
