import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tempDir } from '../support/cli.js';
import { formatReport, runChaos } from '../chaos/run-chaos.js';

// The short version of `npm run chaos` for SQLite; the seed is printed for replay.
const SEED = Number(process.env.LEASEHOLD_CHAOS_SEED ?? Date.now() % 1_000_000);

describe('chaos on SQLite (short)', () => {
  const dir = tempDir('leasehold-chaos-');
  after(dir.cleanup);

  it(
    `5 candidates under kills, freezes and restarts: no stale write, no overlapping terms, a leader again after every fault (seed ${SEED})`,
    { timeout: 120_000 },
    async () => {
      const r = await runChaos({
        backend: 'sqlite',
        backendArgs: ['--db', join(dir.path, 'leases.db'), '--lease', 'chaos'],
        dir: dir.path,
        seed: SEED,
        seconds: 20,
        history: true,
      });
      console.log(formatReport(r));
      assert.deepEqual(r.violations, [], `replay with LEASEHOLD_CHAOS_SEED=${SEED}`);
      assert.ok(r.accepted > 0, 'the apps did write');
      assert.ok(r.terms >= 2, 'leadership changed hands');
      // The independent checker (docs/testing.md "Recorded histories") judged what was recorded.
      assert.match(r.history?.verdict ?? '', /register: [1-9]\d* operations on 1 keys: linearizable/);
      assert.match(r.history?.verdict ?? '', /fenced: [1-9]\d* operations on 1 keys: linearizable/);
      assert.ok(Object.values(r.faults).reduce((a, b) => a + b, 0) >= 5, 'faults were injected');
    },
  );
});
