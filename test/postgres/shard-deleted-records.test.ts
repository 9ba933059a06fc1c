/**
 * Issue 41, finding B's equivalent on PostgreSQL: the group's shard rows deleted by hand under a
 * running group, with every member running and while one is stopped (SIGSTOP), as the issue saw
 * it ("rows deleted by hand while a member is paused: 2 of 3"). test/support/shard-deleted-records.ts
 * has the scenario; docs/testing.md the figures.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { SHORT_TIMING } from '../support/shard-pause.js';
import { deletedRecordsScenario, formatDeletionReport } from '../support/shard-deleted-records.js';

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
    assert.ok(r.samples > 100, 'the sampler ran');
    assert.ok(
      r.deleted.every((n) => n > 0),
      `every round deleted rows: ${r.deleted.join(', ')}`,
    );
    assert.equal(r.shardsTwice, 0, `shards listed by two members at once: ${r.examples.join('; ')}`);
    // Every token comes from a block raised past the group header's highWater, so a record
    // deleted before the other members listed it (the CI run of 2026-12-06 saw 'shard 255 token
    // 1: listed by m1, then by m2') or deleted with nobody running never brings its token back.
    assert.equal(r.tokensTwoOwners, 0, `tokens listed by another owner: ${r.examples.join('; ')}`);
    assert.equal(r.tokensBackwards, 0, `tokens listed after a higher one: ${r.examples.join('; ')}`);
    assert.equal(r.tokensOnTwoShards, 0, `tokens listed for two shards (the header is never deleted here): ${r.examples.join('; ')}`);
    assert.deepEqual(r.exited, [], 'every member still runs');
  });
});
