import { describe, it } from 'node:test';
import { join } from 'node:path';
import { scratchDir } from '../support/scratch.js';
import type { Candidate } from '../support/sidecars.js';
import { failoverScenario } from '../support/failover-scenario.js';

describe('three leasehold sidecar processes on one SQLite file', () => {
  const dir = scratchDir(() => cands);
  const cands: Candidate[] = [];

  it('elect exactly one; SIGKILL and SIGTERM hand over within their bounds with higher tokens', { timeout: 120_000 }, async () => {
    const backend = ['--backend', 'sqlite', '--db', join(dir.path, 'leases.db'), '--lease', 'failover'];
    const timing = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };
    const f = await failoverScenario(dir.path, backend, { timing, leaseMs: 3_000, retryMs: 500, marginMs: 1_500 }, cands);
    console.log(`sqlite: SIGKILL failover ${f.killFailoverMs} ms, SIGTERM handoff ${f.termHandoffMs} ms (lease 3 s, retry 500 ms)`);
  });
});
