import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ShardCaseResult } from '../lib/shard-chain.js';
import { fullListsAllowed, idleWritesAllowed, recordsAllowed, recordsRead, shardGoalRows, shardGoalsMarkdown } from './shard-goals.js';

/** A case that meets every goal unless `over` says otherwise. */
function aCase(
  shards: number,
  members: number,
  over: Partial<{
    writes: number;
    leaveMs: number[];
    joinMs: number;
    crashMs: number;
    rss: number[];
    plain: number;
    fullReads: number;
    recordsFull: number;
    recordsChanges: number;
    apiRequests: Record<string, number>;
    cpuPct: number;
  }> = {},
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
      // One whole-group read in the minute, and every member's heartbeats read by change.
      fullReads: over.fullReads ?? members,
      changeReads: 30 * members,
      recordsFull: over.recordsFull ?? 0,
      recordsChanges: over.recordsChanges ?? 30 * members * members,
      ...(over.apiRequests ? { apiRequests: over.apiRequests, fromWatch: true } : {}),
      conflicts: 0,
      cpuPct: over.cpuPct ?? 1,
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
    assert.equal(rows.length, 8);
    assert.ok(
      rows.every((r) => r.verdict === (r.goal.startsWith('CPU') ? '' : 'met')),
      JSON.stringify(rows),
    );
    assert.equal(rows.find((r) => r.goal.startsWith('CPU'))!.measured, 'not measured in this run', 'no case at M = 32');
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
      'PostgreSQL: whole-group reads per met',
      'PostgreSQL: records read per met',
      'PostgreSQL: CPU per member ',
      'PostgreSQL: a graceful leave not met',
      'PostgreSQL: a join balanced not met',
      'PostgreSQL: a crash (SIGKILL): not met',
      'PostgreSQL: RSS per member not met',
    ]);
    assert.equal(rows[4]!.measured, '900 ms (N = 1024, M = 8; 2 of 2 cases over)', 'the p95 over the shards, the worst case first');
    assert.equal(rows[0]!.measured, '31.1 (N = 256, M = 8)');
    assert.equal(rows[7]!.measured, '+11.0 MiB (66.0 vs 55.0) (N = 1024, M = 8)');
  });

  it('a goal with no case in this run (no N = 1024 on Kubernetes) is not measured, neither met nor not', () => {
    const rows = shardGoalRows([{ store: 'Kubernetes', results: [aCase(256, 8)] }], 30);
    const rss = rows.find((r) => r.goal.startsWith('RSS'))!;
    assert.equal(rss.verdict, '');
    assert.equal(rss.measured, 'not measured in this run');
    assert.match(shardGoalsMarkdown([{ store: 'Kubernetes', results: [aCase(256, 8, { joinMs: 5000 })] }], 30), /\| a join balanced .* \| \*\*not met\*\* \|/);
    assert.equal(rows[0]!.target, "one heartbeat per retry period, and the one a window's edge catches: ≤ 16 in 30 s (32 a minute)");
  });

  it('whole-group reads: one a minute and the one an edge catches; two in a 30 s window are over', () => {
    assert.equal(fullListsAllowed(30), 1);
    assert.equal(fullListsAllowed(60), 2);
    const rows = shardGoalRows([{ store: 'SQLite', results: [aCase(16, 2, { fullReads: 2 }), aCase(256, 2, { fullReads: 4 })] }], 60);
    const full = rows.find((r) => r.goal.startsWith('whole-group reads'))!;
    assert.equal(full.verdict, 'met');
    const over = shardGoalRows([{ store: 'SQLite', results: [aCase(256, 2, { fullReads: 5 })] }], 60).find((r) => r.goal.startsWith('whole-group reads'))!;
    assert.equal(over.verdict, 'not met');
    assert.equal(over.measured, '2.5 (N = 256, M = 2)');
  });

  it('records read: every member its heartbeats, 31 × M a minute; a whole-group read of N records on top is over', () => {
    assert.equal(recordsAllowed(8, 60), 248);
    assert.equal(recordsAllowed(2, 30), 32);
    // M = 2 in 60 s: 62 a member allowed; each member's 60 heartbeats by change are within, and
    // with a whole-group read of 19 records (N = 16) on top they are not.
    const ok = shardGoalRows([{ store: 'SQLite', results: [aCase(16, 2, { recordsChanges: 2 * 60 })] }], 60).find((r) => r.goal.startsWith('records'))!;
    assert.equal(ok.verdict, 'met');
    const over = shardGoalRows([{ store: 'SQLite', results: [aCase(16, 2, { recordsChanges: 2 * 60, recordsFull: 2 * 19 })] }], 60).find((r) =>
      r.goal.startsWith('records'),
    )!;
    assert.equal(over.verdict, 'not met');
    assert.equal(over.measured, '79.0 of 62 allowed, 60.0 by change (N = 16, M = 2)');
  });

  it("Kubernetes: LISTs from the API server's count, none allowed; the copy's whole-group answers are no read; requests beside client-go's", () => {
    const quiet = aCase(256, 8, { fullReads: 8, recordsFull: 8 * 265, apiRequests: { update: 8 * 30, watch: 0 } });
    assert.equal(recordsRead(quiet), quiet.idle.recordsChanges, "the copy's whole-group answers sent no request");
    const rows = shardGoalRows([{ store: 'Kubernetes', results: [quiet] }], 60);
    const lists = rows.find((r) => r.goal.startsWith('LISTs'))!;
    assert.equal(lists.verdict, 'met');
    assert.equal(lists.target, 'none while the watch lasts');
    const api = rows.find((r) => r.goal.startsWith("the API server's requests"))!;
    assert.equal(api.measured, '240 vs 61,440 (N = 256, M = 8)');
    assert.equal(api.verdict, 'met');

    // One LIST (a relist) is over, and its N + M + 1 records count as read.
    const relisted = aCase(256, 8, { apiRequests: { update: 240, list: 1 } });
    assert.equal(recordsRead(relisted), relisted.idle.recordsChanges + 265);
    const again = shardGoalRows([{ store: 'Kubernetes', results: [relisted] }], 60);
    assert.equal(again.find((r) => r.goal.startsWith('LISTs'))!.verdict, 'not met');

    // As many requests as client-go's way is not fewer.
    const costly = aCase(16, 2, { apiRequests: { get: 16 * 30 * 2 } });
    assert.equal(shardGoalRows([{ store: 'Kubernetes', results: [costly] }], 60).find((r) => r.goal.startsWith("the API server's"))!.verdict, 'not met');
  });

  it('CPU per member at M = 32: the highest, reported without a bound', () => {
    const rows = shardGoalRows(
      [{ store: 'SQLite', results: [aCase(16, 32, { cpuPct: 2.5 }), aCase(256, 32, { cpuPct: 4.25 }), aCase(256, 8, { cpuPct: 9 })] }],
      60,
    );
    const cpu = rows.find((r) => r.goal.startsWith('CPU'))!;
    assert.equal(cpu.measured, '4.3 (N = 256, M = 32)');
    assert.equal(cpu.verdict, '');
  });

  for (const seconds of [10, 30]) {
    it(`a ${seconds} s window that caught one whole-group read per member is not judged (it could be ${60 / seconds} a minute)`, () => {
      const r = aCase(256, 2);
      const short = { ...r, idle: { ...r.idle, seconds, writes: (seconds / 2) * 2, changeReads: (seconds / 2) * 2, recordsChanges: (seconds / 2) * 4 } };
      const row = shardGoalRows([{ store: 'SQLite', results: [short] }], seconds).find((x) => x.goal.startsWith('whole-group reads'))!;
      assert.equal(row.verdict, '', `${row.measured} against "${row.target}"`);
      assert.match(row.measured, /1 of 1 cases not judged: a window under a minute caught a whole-group read/);
      // Over a minute it is judged, and one read a member is within the goal.
      const minute = shardGoalRows([{ store: 'SQLite', results: [r] }], 60).find((x) => x.goal.startsWith('whole-group reads'))!;
      assert.equal(minute.verdict, 'met');
      // None at all is judged at any window: nothing to extrapolate.
      const none = { ...short, idle: { ...short.idle, fullReads: 0 } };
      assert.equal(shardGoalRows([{ store: 'SQLite', results: [none] }], seconds).find((x) => x.goal.startsWith('whole-group reads'))!.verdict, 'met');
    });
  }
});
