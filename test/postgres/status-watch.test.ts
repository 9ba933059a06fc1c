/** `leasehold status --watch` on a real PostgreSQL server (the scenario in test/support/watch-scenario.ts). */
import { after, describe, it } from 'node:test';
import { startPostgres } from '../support/postgres.js';
import { type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { watchScenario } from '../support/watch-scenario.js';

const server = startPostgres();
after(async () => (await server).stop());

describe('leasehold status --watch on PostgreSQL', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it('one JSON line per change of holder, token or state; none per renewal; exit 0 on SIGINT', { timeout: 90_000 }, async () => {
    await watchScenario(['--backend', 'postgres', '--postgres-url', (await server).url(), '--lease', 'watched'], dir.path, procs);
  });
});
