/**
 * The README's cron recipe, `leasehold run --once --skip-if-ran-within`, on a real API server:
 * three runners per tick spread over two seconds run the job exactly once per tick.
 */
import { describe, it } from 'node:test';
import { join } from 'node:path';
import { type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { backendArgs, freshNamespace } from '../support/kube.js';
import { crashScenario, overrunScenario, twoTicksScenario } from '../support/cron-scenario.js';

describe('cron on Kubernetes: leasehold run --once --skip-if-ran-within', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it('three runners per tick, spread over 2 s: the job runs exactly once in each of two ticks', { timeout: 120_000 }, async () => {
    await twoTicksScenario(backendArgs(await freshNamespace('cron'), 'ticks'), join(dir.path, 'ticks'), procs);
  });

  it('a run longer than the interval: the next tick waits for it (--try gives up with 124), then runs once', { timeout: 120_000 }, async () => {
    await overrunScenario(backendArgs(await freshNamespace('cron'), 'overrun'), join(dir.path, 'overrun'), procs);
  });

  it('the runner killed mid-job: the tick is lost, the next tick runs once', { timeout: 120_000 }, async () => {
    await crashScenario(backendArgs(await freshNamespace('cron'), 'crash'), join(dir.path, 'crash'), procs);
  });
});
