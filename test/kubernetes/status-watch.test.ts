/** `leasehold status --watch` on a real API server (the scenario in test/support/watch-scenario.ts). */
import { describe, it } from 'node:test';
import { type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { backendArgs, freshNamespace } from '../support/kube.js';
import { watchScenario } from '../support/watch-scenario.js';

describe('leasehold status --watch on Kubernetes', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it('one JSON line per change of holder, token or state; none per renewal; exit 0 on SIGINT', { timeout: 90_000 }, async () => {
    await watchScenario(backendArgs(await freshNamespace('watch'), 'watched'), dir.path, procs);
  });
});
