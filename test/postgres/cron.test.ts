/**
 * The README's cron recipe, `leasehold run --once --skip-if-ran-within`, on a real PostgreSQL
 * server (test/support/postgres.ts): three runners per tick spread over two seconds run the job
 * exactly once per tick.
 */
import { after, describe, it } from 'node:test';
import { join } from 'node:path';
import { startPostgres } from '../support/postgres.js';
import { type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { crashScenario, overrunScenario, twoTicksScenario } from '../support/cron-scenario.js';

const server = startPostgres();
after(async () => (await server).stop());

describe('cron on PostgreSQL: leasehold run --once --skip-if-ran-within', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const backend = async (lease: string) => ['--backend', 'postgres', '--postgres-url', (await server).url(), '--lease', lease];

  it('three runners per tick, spread over 2 s: the job runs exactly once in each of two ticks', { timeout: 120_000 }, async () => {
    await twoTicksScenario(await backend('ticks'), join(dir.path, 'ticks'), procs);
  });

  it('a run longer than the interval: the next tick waits for it (--try gives up with 124), then runs once', { timeout: 120_000 }, async () => {
    await overrunScenario(await backend('overrun'), join(dir.path, 'overrun'), procs);
  });

  it('the runner killed mid-job: the tick is lost, the next tick runs once', { timeout: 120_000 }, async () => {
    await crashScenario(await backend('crash'), join(dir.path, 'crash'), procs);
  });
});
