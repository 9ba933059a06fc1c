import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ShardCaseResult } from '../lib/shard-chain.js';
import { idleWritesAllowed, shardGoalRows, shardGoalsMarkdown } from './shard-goals.js';

/** A case that meets every goal unless `over` says otherwise. */
function aCase(
  shards: number,
  members: number,
  over: Partial<{ writes: number; leaveMs: number[]; joinMs: number; crashMs: number; rss: number[]; plain: number }> = {},
): ShardCaseResult {
  const change = { ms: 100, moved: 1, fewest: 1 };
  return {
    shards,
    members,
    growMs: 1000,
    idle: {
      seconds: 60,
      load: 1,
      writes: over.writes ?? 30 * members,
      ownWrites: 30 * members,
      lists: 0,
      conflicts: 0,
      cpuPct: 1,
      rssMB: over.rss ?? [60, 61],
      plainRssMB: over.plain ?? 55,
    },
    join: { ...change, ms: over.joinMs ?? 300 },
    leave: { ...change, perShardMs: over.leaveMs ?? [50, 80, 120], exit: 'exit 0' },
    crash: { ...change, ms: over.crashMs ?? 14_000 },
  };
}

const verdicts = (rows: ReturnType<typeof shardGoalRows>) => rows.map((r) => `${r.store}: ${r.goal.split(' ').slice(0, 3).join(' ')} ${r.verdict}`);

describe('shard goals', () => {
  it('one heartbeat per retry period, and the one a window edge catches: 31 in 60 s, 16 in 30 s', () => {
    assert.equal(idleWritesAllowed(60), 31);
    assert.equal(idleWritesAllowed(30), 16);
    assert.equal(idleWritesAllowed(45), 23);
  });

  it('every goal met: one row per goal and store, each saying where its worst case was', () => {
    const rows = shardGoalRows([{ store: 'SQLite', results: [aCase(16, 2), aCase(1024, 2), aCase(1024, 8, { joinMs: 1900 })] }], 60);
    assert.equal(rows.length, 5);
    assert.ok(
      rows.every((r) => r.verdict === 'met'),
      JSON.stringify(rows),
    );
    assert.equal(rows.find((r) => r.goal.startsWith('a join'))!.measured, '1900 ms (N = 1024, M = 8)');
    assert.equal(rows.find((r) => r.goal.startsWith('RSS'))!.measured, '+6.0 MiB (61.0 vs 55.0) (N = 1024, M = 2)');
  });

  it('each goal not met on its own, with how many cases were over', () => {
    const rows = shardGoalRows(
      [
        {
          store: 'PostgreSQL',
          results: [
            aCase(256, 8, { writes: 8 * 31 + 1, leaveMs: [100, 200, 251], joinMs: 2001, crashMs: 16_001, rss: [60, 70] }),
            aCase(1024, 8, { leaveMs: Array.from({ length: 20 }, (_, i) => (i < 18 ? 10 : 900)), rss: [60, 66], plain: 55 }),
          ],
        },
      ],
      60,
    );
    assert.deepEqual(verdicts(rows), [
      'PostgreSQL: store writes per not met',
      'PostgreSQL: a graceful leave not met',
      'PostgreSQL: a join balanced not met',
      'PostgreSQL: a crash (SIGKILL): not met',
      'PostgreSQL: RSS per member not met',
    ]);
    assert.equal(rows[1]!.measured, '900 ms (N = 1024, M = 8; 2 of 2 cases over)', 'the p95 over the shards, the worst case first');
    assert.equal(rows[0]!.measured, '31.1 (N = 256, M = 8)');
    assert.equal(rows[4]!.measured, '+11.0 MiB (66.0 vs 55.0) (N = 1024, M = 8)');
  });

  it('a goal with no case in this run (no N = 1024 on Kubernetes) is not measured, neither met nor not', () => {
    const rows = shardGoalRows([{ store: 'Kubernetes', results: [aCase(256, 8)] }], 30);
    const rss = rows.find((r) => r.goal.startsWith('RSS'))!;
    assert.equal(rss.verdict, '');
    assert.equal(rss.measured, 'not measured in this run');
    assert.match(shardGoalsMarkdown([{ store: 'Kubernetes', results: [aCase(256, 8, { joinMs: 5000 })] }], 30), /\| a join balanced .* \| \*\*not met\*\* \|/);
    assert.equal(rows[0]!.target, "one heartbeat per retry period, and the one a window's edge catches: ≤ 16 in 30 s (32 a minute)");
  });
});
