import { describe, it } from 'node:test';
import { scratchDir } from '../support/scratch.js';
import type { Candidate } from '../support/sidecars.js';
import { failoverScenario } from '../support/failover-scenario.js';
import { backendArgs, freshNamespace } from '../support/kube.js';

describe('three leasehold sidecar processes on one Lease of a real API server', () => {
  const dir = scratchDir(() => cands);
  const cands: Candidate[] = [];

  it("elect exactly one; SIGKILL and SIGTERM hand over within the SQLite tier's bounds", { timeout: 120_000 }, async () => {
    const ns = await freshNamespace('failover');
    // The Lease stores whole seconds, so the lease is 3 s as on SQLite.
    const timing = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };
    const f = await failoverScenario(dir.path, backendArgs(ns, 'failover'), { timing, leaseMs: 3_000, retryMs: 500, marginMs: 1_500 }, cands);
    console.log(`kubernetes: SIGKILL failover ${f.killFailoverMs} ms, SIGTERM handoff ${f.termHandoffMs} ms (lease 3 s, retry 500 ms)`);
  });
});
