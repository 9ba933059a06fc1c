import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { tempDir, waitFor } from '../helpers/cli.js';
import { leadersByStatus, startSidecar, validLeaders, type Candidate } from '../helpers/sidecars.js';
import { readLeadership } from '../../src/fencing/status-reader.js';

// Short timings keep the test quick; the bounds below are derived from them.
const T = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };
const LEASE_MS = 3_000;
const RETRY_MS = 500;
// Process start-up, the 50 ms watch poll, status-file polling and a loaded 2-core machine.
const MARGIN_MS = 1_500;

describe('three leasehold sidecar processes on one SQLite file', () => {
  const dir = tempDir();
  const db = join(dir.path, 'leases.db');
  const backend = ['--backend', 'sqlite', '--db', db, '--lease', 'failover'];
  const cands: Candidate[] = [];
  after(() => {
    for (const c of cands) c.proc.kill('SIGKILL');
    dir.cleanup();
  });

  it('elects exactly one; SIGKILL and SIGTERM hand over within their bounds with higher tokens', { timeout: 120_000 }, async () => {
    for (const id of ['a', 'b', 'c']) cands.push(startSidecar(dir.path, id, backend, T, ['--log-format', 'text']));

    const first = await waitFor('one leader', () => (leadersByStatus(cands).length === 1 ? leadersByStatus(cands)[0] : undefined), 20_000);
    // Watch for a while: never two status volumes saying leader.
    for (let i = 0; i < 40; i++) {
      assert.ok(leadersByStatus(cands).length <= 1, 'two status volumes said leader at once');
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(leadersByStatus(cands)[0]?.c.id, first.c.id, 'the leader stays put while healthy');

    // SIGKILL: no release; the others must wait out the lease.
    const killedAt = Date.now();
    first.c.proc.kill('SIGKILL');
    const second = await waitFor(
      'a new leader after SIGKILL',
      () => validLeaders(cands).find((l) => l.c !== first.c),
      LEASE_MS + 2.2 * RETRY_MS + MARGIN_MS + 5_000,
    );
    const killFailoverMs = Date.now() - killedAt;
    assert.ok(killFailoverMs <= LEASE_MS + 2.2 * RETRY_MS + MARGIN_MS, `SIGKILL failover took ${killFailoverMs} ms`);
    assert.ok(second.token > first.token, `token ${second.token} must exceed ${first.token}`);
    // The dead leader's status file still says isLeader, but its validUntil has passed:
    // an app following the rule never sees two leaders.
    assert.equal(readLeadership(first.c.statusDir).isLeader, false);
    assert.equal(validLeaders(cands).length, 1);

    // SIGTERM: the leader says "not leader" first, releases, exits 0; another takes over at once.
    const termAt = Date.now();
    second.c.proc.kill('SIGTERM');
    const third = await waitFor('a new leader after SIGTERM', () => validLeaders(cands).find((l) => l.c !== first.c && l.c !== second.c), 10_000);
    const termFailoverMs = Date.now() - termAt;
    assert.ok(termFailoverMs <= RETRY_MS + MARGIN_MS, `SIGTERM handoff took ${termFailoverMs} ms`);
    assert.ok(third.token > second.token);
    const exit = await second.c.proc.exited;
    assert.equal(exit.code, 0);
    const status = JSON.parse(readFileSync(join(second.c.statusDir, 'status.json'), 'utf8'));
    assert.equal(status.isLeader, false);
    assert.equal(readFileSync(join(second.c.statusDir, 'is-leader'), 'utf8'), 'false\n');
    assert.equal(readFileSync(join(second.c.statusDir, 'fencing-token'), 'utf8'), '');
    const log = second.c.proc.stderr();
    assert.match(log, /became leader .*token=\d+/);
    assert.match(log, /stopped leading .*reason="shutting down"/);
    assert.match(log, /released lease/);
    assert.ok(log.indexOf('stopped leading') < log.indexOf('released lease'), 'step-down is announced before the release');
    console.log(`SIGKILL failover ${killFailoverMs} ms, SIGTERM handoff ${termFailoverMs} ms (lease ${LEASE_MS} ms, retry ${RETRY_MS} ms)`);
  });
});
