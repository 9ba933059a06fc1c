import { describe, it } from 'node:test';
import { join } from 'node:path';
import { type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { exclusiveRunScenario } from '../support/run-scenario.js';
import { giveUpScenario } from '../support/give-up-scenario.js';
import { backendArgs, freshNamespace } from '../support/kube.js';

describe('leasehold run on a real API server', () => {
  const dir = scratchDir(() => procs);
  const procs: Proc[] = [];

  it('runs the command only while leader across 3 candidates; SIGKILL of leasehold takes its child down too', { timeout: 120_000 }, async () => {
    const ns = await freshNamespace('run');
    const tokens = await exclusiveRunScenario(backendArgs(ns, 'run-excl'), join(dir.path, 'exclusive'), procs);
    console.log(`kubernetes: tokens handed to children: ${tokens.join(' → ')}`);
  });

  it('--give-up-after: a command failing 3 times in a row on A gives the Lease to B, where it runs', { timeout: 120_000 }, async () => {
    const ns = await freshNamespace('give-up');
    const tookMs = await giveUpScenario(dir.path, backendArgs(ns, 'give-up'), procs);
    console.log(`kubernetes: B ran the command ${tookMs} ms after it followed A`);
  });
});
