/**
 * Issue 41's deleted records on SQLite: the group's shard rows deleted by hand (`DELETE FROM
 * lease_groups`, as an operator with the sqlite3 shell would) under a running group, with every
 * member running and while one is stopped (SIGSTOP), then with every member stopped and started
 * again. test/support/shard-deleted-records.ts has the scenario (the PostgreSQL and Kubernetes
 * tests run the same one); test/sqlite/shard-replaced-file.test.ts replaces the whole file.
 */
import { describe, it } from 'node:test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { SHORT_TIMING } from '../support/shard-pause.js';
import { deletedRecordsScenario, assertNothingReused, formatDeletionReport } from '../support/shard-deleted-records.js';

const N = Number(process.env.LEASEHOLD_SHARD_DELETE_N ?? 256);
const SHARD_ROWS = "group_name = 'workers' AND kind = 'shard'";
/** One deletion with every member running, then one in each member's pause: shorter and longer than the lease. */
const ROUNDS_PAUSE_MS = [0, 1_500, SHORT_TIMING.leaseMs + 300];

describe('shard rows deleted by hand under a running group, and with every member stopped (SQLite)', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-delete-');

  it(`3 members, ${N} shards, ${ROUNDS_PAUSE_MS.length + 1} deletions: no shard listed by two members, no token reused`, { timeout: 300_000 }, async () => {
    const dbDir = join(dir.path, 'db');
    mkdirSync(dbDir);
    const db = join(dbDir, 'leases.db');
    /** One short connection per statement, as a person's sqlite3 shell: it waits its turn behind the members' writes. */
    const sql = <T>(fn: (d: Database.Database) => T): T => {
      const d = new Database(db, { timeout: 5_000 });
      try {
        return fn(d);
      } finally {
        d.close();
      }
    };
    const r = await deletedRecordsScenario({
      dir: dir.path,
      backendArgs: ['--db', db, '--lease', 'workers'],
      shards: N,
      timing: SHORT_TIMING,
      roundsPauseMs: ROUNDS_PAUSE_MS,
      deleteShardRecords: () => Promise.resolve(sql((d) => d.prepare(`DELETE FROM lease_groups WHERE ${SHARD_ROWS}`).run().changes)),
      countShardRecords: () => Promise.resolve(sql((d) => (d.prepare(`SELECT count(*) AS n FROM lease_groups WHERE ${SHARD_ROWS}`).get() as { n: number }).n)),
      restartRound: true,
      procs,
      say: (l) => console.log(l),
    });
    console.log(formatDeletionReport('sqlite', N, r));
    assertNothingReused(r, 'rows');
  });
});
