import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { waitFor } from './cli.js';
import { leadersByStatus, startSidecar, validLeaders, type Candidate, type Timing } from './sidecars.js';
import { readLeadership } from '../../src/status/status-reader.js';

export interface Bounds {
  timing: Timing;
  leaseMs: number;
  retryMs: number;
  /** Process start-up, watch latency, status-file polling, a loaded 2-core machine. */
  marginMs: number;
}

export interface FailoverFigures {
  killFailoverMs: number;
  termHandoffMs: number;
}

/**
 * Three sidecars on one backend: exactly one status volume says leader; SIGKILL it and
 * another leads within leaseDuration + 2.2 × retryPeriod + margin with a higher token;
 * SIGTERM that one and another leads within one retryPeriod + margin.
 */
export async function failoverScenario(dir: string, backend: string[], b: Bounds, cands: Candidate[]): Promise<FailoverFigures> {
  for (const id of ['a', 'b', 'c']) cands.push(startSidecar(dir, id, backend, b.timing, ['--log-format', 'text']));

  const first = await waitFor('one leader', () => (leadersByStatus(cands).length === 1 ? leadersByStatus(cands)[0] : undefined), 30_000);
  for (let i = 0; i < 40; i++) {
    assert.ok(leadersByStatus(cands).length <= 1, 'two status volumes said leader at once');
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.equal(leadersByStatus(cands)[0]?.c.id, first.c.id, 'the leader stays put while healthy');

  const killedAt = Date.now();
  first.c.proc.kill('SIGKILL');
  const killBound = b.leaseMs + 2.2 * b.retryMs + b.marginMs;
  const second = await waitFor('a new leader after SIGKILL', () => validLeaders(cands).find((l) => l.c !== first.c), killBound + 10_000);
  const killFailoverMs = Date.now() - killedAt;
  assert.ok(killFailoverMs <= killBound, `SIGKILL failover took ${killFailoverMs} ms, bound ${killBound} ms`);
  assert.ok(second.token > first.token, `token ${second.token} must exceed ${first.token}`);
  // The dead leader's file still says isLeader, but its validUntil has passed.
  assert.equal(readLeadership(first.c.statusDir).isLeader, false);
  assert.equal(validLeaders(cands).length, 1);

  const termAt = Date.now();
  second.c.proc.kill('SIGTERM');
  const termBound = b.retryMs + b.marginMs;
  const third = await waitFor('a new leader after SIGTERM', () => validLeaders(cands).find((l) => l.c !== first.c && l.c !== second.c), termBound + 10_000);
  const termHandoffMs = Date.now() - termAt;
  assert.ok(termHandoffMs <= termBound, `SIGTERM handoff took ${termHandoffMs} ms, bound ${termBound} ms`);
  assert.ok(third.token > second.token);
  const exit = await second.c.proc.exited;
  assert.equal(exit.code, 0, second.c.proc.stderr());
  const status = JSON.parse(readFileSync(join(second.c.statusDir, 'status.json'), 'utf8')) as { isLeader: boolean };
  assert.equal(status.isLeader, false);
  assert.equal(readFileSync(join(second.c.statusDir, 'is-leader'), 'utf8'), 'false\n');
  assert.equal(readFileSync(join(second.c.statusDir, 'fencing-token'), 'utf8'), '');
  const log = second.c.proc.stderr();
  assert.match(log, /became leader .*token=\d+/);
  assert.match(log, /stopped leading .*reason="shutting down"/);
  assert.match(log, /released lease/);
  assert.ok(log.indexOf('stopped leading') < log.indexOf('released lease'), 'step-down is announced before the release');
  return { killFailoverMs, termHandoffMs };
}
