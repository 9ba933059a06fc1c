/**
 * The README's cron recipe, `leasehold run --once --skip-if-ran-within`, on one SQLite file:
 * three runners per tick spread over two seconds run the job exactly once per tick.
 */
import { describe, it } from 'node:test';
import { join } from 'node:path';
import { type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { crashScenario, overrunScenario, twoTicksScenario } from '../support/cron-scenario.js';

describe('cron on SQLite: leasehold run --once --skip-if-ran-within', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const backend = (lease: string) => ['--db', join(dir.path, 'leases.db'), '--lease', lease];

  it('three runners per tick, spread over 2 s: the job runs exactly once in each of two ticks', { timeout: 90_000 }, async () => {
    await twoTicksScenario(backend('ticks'), join(dir.path, 'ticks'), procs);
  });

  it('a run longer than the interval: the next tick waits for it (--try gives up with 124), then runs once', { timeout: 90_000 }, async () => {
    await overrunScenario(backend('overrun'), join(dir.path, 'overrun'), procs);
  });

  it('the runner killed mid-job: the tick is lost, the next tick runs once', { timeout: 90_000 }, async () => {
    await crashScenario(backend('crash'), join(dir.path, 'crash'), procs);
  });
});
