/**
 * Issue 41, finding B's equivalent on PostgreSQL: the group's shard rows deleted by hand under a
 * running group, with every member running and while one is stopped (SIGSTOP), as the issue saw
 * it ("rows deleted by hand while a member is paused: 2 of 3"). test/support/shard-deleted-records.ts
 * has the scenario; docs/testing.md the figures.
 */
import { describe, it, before, after } from 'node:test';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { SHORT_TIMING } from '../support/shard-pause.js';
import { deletedRecordsScenario, assertNothingReused, formatDeletionReport } from '../support/shard-deleted-records.js';

const N = Number(process.env.LEASEHOLD_SHARD_DELETE_N ?? 256);
const SHARD_ROWS = "group_name = 'workers' AND kind = 'shard'";
/** One deletion with every member running, then one in each member's pause: shorter and longer than the lease. */
const ROUNDS_PAUSE_MS = [0, 1_500, SHORT_TIMING.leaseMs + 300, SHORT_TIMING.leaseMs + 600];

describe('shard rows deleted by hand under a running group, and with every member stopped (PostgreSQL)', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-delete-');
  let pg: PostgresServer;
  before(async () => {
    pg = await startPostgres();
  });
  after(async () => {
    await pg?.stop();
  });

  it(`3 members, ${N} shards, ${ROUNDS_PAUSE_MS.length + 1} deletions: no shard listed by two members, no token reused`, { timeout: 300_000 }, async () => {
    const r = await deletedRecordsScenario({
      dir: dir.path,
      backendArgs: ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'workers'],
      shards: N,
      timing: SHORT_TIMING,
      roundsPauseMs: ROUNDS_PAUSE_MS,
      // The group's rows in lease_groups (docs/postgres.md), through psql as an operator would.
      deleteShardRecords: () =>
        Promise.resolve(Number(pg.sql(`WITH d AS (DELETE FROM lease_groups WHERE ${SHARD_ROWS} RETURNING 1) SELECT count(*) FROM d`, 'leases').trim())),
      countShardRecords: () => Promise.resolve(Number(pg.sql(`SELECT count(*) FROM lease_groups WHERE ${SHARD_ROWS}`, 'leases').trim())),
      restartRound: true,
      procs,
      say: (l) => console.log(l),
    });
    console.log(formatDeletionReport('postgres', N, r));
    assertNothingReused(r, 'rows');
  });
});
