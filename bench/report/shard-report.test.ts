import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ShardCaseResult } from '../lib/shard-chain.js';
import { SHARD_MOVE_NOTE, shardReport, type ShardStoreRun } from './shard-report.js';

function aCase(o: { writes?: number; leaveP95?: number } = {}): ShardCaseResult {
  const change = { ms: 100, moved: 10, fewest: 10 };
  return {
    shards: 256,
    members: 8,
    growMs: 3000,
    idle: { seconds: 30, load: 3.5, writes: o.writes ?? 120, ownWrites: 120, lists: 600, conflicts: 0, cpuPct: 1.5, rssMB: [56, 58], plainRssMB: 52 },
    join: change,
    leave: { ...change, perShardMs: Array.from({ length: 20 }, () => o.leaveP95 ?? 90), balancedMs: 100, exit: 'exit 0' },
    crash: { ...change, ms: 14_000 },
  };
}

const run = (results: ShardCaseResult[]): ShardStoreRun => ({ store: 'SQLite', runtime: 'Node', how: 'a counter', results, load: [1, 2], minutes: 3 });

describe('the shard groups section', () => {
  it('every goal met: the tables, client-go computed beside them, and no explanation of a miss', () => {
    const md = shardReport([run([aCase()])], 30);
    assert.match(md, /\| SQLite \| 256 \| 8 \| 30\.0 \| 30\.0 \| 150\.0 \| 0 \| 1\.5 \| 56\.0 \/ 58\.0 \| 52\.0 \| 7,680 \/ 960\.0 \| 3\.5 \|/);
    assert.match(md, /\| SQLite \| 256 \| 8 \| 100 \| 10 \(10\) \| 90 \/ 90 \/ 100 \| 100 \| 10 \(10\) \| 14000 \| 10 \(10\) \| 3\.0 s \|/);
    assert.ok(!md.includes(SHARD_MOVE_NOTE));
    assert.ok(!md.includes('heartbeats came later'));
  });

  it('a leave past its goal brings the explanation; heartbeats late on a loaded machine are said, with the case and its load', () => {
    const md = shardReport([run([aCase({ leaveP95: 400, writes: 100 })])], 30);
    assert.ok(md.includes(SHARD_MOVE_NOTE));
    assert.match(md, /In SQLite N = 256, M = 8 \(25\.0, load 3\.5\) the store counted fewer than 29 writes a minute per member: heartbeats came later/);
  });
});
