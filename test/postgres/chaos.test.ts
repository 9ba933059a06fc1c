import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from '../support/cli.js';
import { startPostgres } from '../support/postgres.js';
import { formatReport, runChaos } from '../chaos/run-chaos.js';
import { postgresNeighbour } from '../chaos/postgres-neighbour.js';

// The short version of `npm run chaos -- --backend postgres`: its own PostgreSQL server, so
// it can stop and start the database under the candidates.
const SEED = Number(process.env.LEASEHOLD_CHAOS_SEED ?? Date.now() % 1_000_000);

describe('chaos on PostgreSQL (short)', () => {
  const dir = tempDir('leasehold-chaos-');
  after(dir.cleanup);

  it(
    `5 candidates under kills, freezes, restarts, database restarts, forged notifications and a locked table: no stale write, no overlapping terms, a leader again after every fault (seed ${SEED})`,
    { timeout: 240_000 },
    async () => {
      const server = await startPostgres();
      try {
        const backendArgs = ['--backend', 'postgres', '--postgres-url', server.url(), '--lease', 'chaos'];
        const r = await runChaos({
          backend: 'postgres',
          backendArgs,
          dir: dir.path,
          seed: SEED,
          seconds: 45,
          history: true,
          database: { stop: server.stopServer, start: server.startServer },
          postgresNeighbour: postgresNeighbour((role) => server.url(role)),
        });
        console.log(formatReport(r));
        assert.deepEqual(r.violations, [], `replay with LEASEHOLD_CHAOS_SEED=${SEED}`);
        assert.ok(r.accepted > 0, 'the apps did write');
        assert.ok(r.terms >= 2, 'leadership changed hands');
        // The independent checker (docs/testing.md "Recorded histories") judged what was recorded.
        assert.match(r.history?.verdict ?? '', /register: [1-9]\d* operations on 1 keys: linearizable/);
        assert.match(r.history?.verdict ?? '', /fenced: [1-9]\d* operations on 1 keys: linearizable/);
        assert.ok((r.faults['forged-notify'] ?? 0) > 0 && (r.faults['table-lock'] ?? 0) > 0, 'the neighbour faults ran');
      } finally {
        await server.stop();
      }
    },
  );
});
