/**
 * Issue 41, finding A on PostgreSQL: the store-generic pause scenario (test/support/shard-pause.ts),
 * short form: 3 members, lease 3 s, 6 pauses of 3.0-3.5 s in 100 ms steps, a sampler on every
 * member's shards.json every 10 ms. The issue saw the woken member end its session here every
 * time (pg answers asynchronously, so the overdue deadline fires before the heartbeat lands);
 * this keeps it so. The set-up: `npm run chaos -- --backend shard-pause-postgres`.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { formatPauseReport, pausesPast, pauseScenario, SHORT_TIMING } from '../support/shard-pause.js';

const N = Number(process.env.LEASEHOLD_SHARD_PAUSE_N ?? 256);
const PAUSES_MS = pausesPast(SHORT_TIMING.leaseMs, 500, 100);

describe('a shard member paused a little longer than the lease (PostgreSQL)', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-pause-');
  let pg: PostgresServer;
  before(async () => {
    pg = await startPostgres();
  });
  after(async () => {
    await pg?.stop();
  });

  it(
    `3 members, ${N} shards, pauses of ${PAUSES_MS[0]}-${PAUSES_MS.at(-1)} ms: no shard listed by two members, no token reused`,
    { timeout: 300_000 },
    async () => {
      const r = await pauseScenario({
        dir: dir.path,
        backendArgs: ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'workers'],
        shards: N,
        timing: SHORT_TIMING,
        pausesMs: PAUSES_MS,
        procs,
        say: (l) => console.log(l),
      });
      console.log(formatPauseReport(r));
      assert.ok(r.samples > 100, 'the sampler ran');
      assert.deepEqual(r.examples, [], 'no shard listed by two members at once, no token reused');
      assert.equal(r.shardsTwice, 0, 'shards listed by two members at once');
      assert.equal(r.tokensReused, 0, 'tokens reused');
      assert.deepEqual(r.exited, [], 'every member still runs');
    },
  );
});
