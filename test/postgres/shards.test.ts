/**
 * Shard groups on real `leasehold sidecar --shards` processes sharing one PostgreSQL table (a
 * server started for the test): the scenario (test/support/shard-scenario.ts).
 */
import { describe, it, before, after } from 'node:test';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { membersComeAndGo } from '../support/shard-scenario.js';

describe('shard groups on PostgreSQL, real processes', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  let pg: PostgresServer;
  before(async () => {
    pg = await startPostgres();
  });
  after(async () => {
    await pg?.stop();
  });

  it(
    '64 shards, members 1 -> 4 -> 3 (graceful) -> 4 -> 3 (killed): 64, 16, 21 or 22; never a shard owned twice, tokens only grow',
    { timeout: 180_000 },
    async () => {
      await membersComeAndGo(dir.path, ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'workers'], procs, (l) =>
        console.log(`postgres: ${l}`),
      );
    },
  );
});
