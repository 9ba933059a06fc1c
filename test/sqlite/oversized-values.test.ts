/**
 * A neighbour with write access to the file stores a 32 MiB successor claim in the lease's row.
 * Every value read from a store is bounded (DESIGN's invariants): the candidates never load it,
 * say so in one line, and the handoff still happens.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli, waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus, startSidecar, type Candidate } from '../support/sidecars.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const LEASE = 'big';
const BIG = 32 * 1024 * 1024;

/** The peak resident memory of a process so far, in KiB (VmHWM in /proc/PID/status). */
function peakKiB(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, `no VmHWM for ${pid}`);
  return Number(m[1]);
}

function sizeOfSuccessor(db: string): number {
  const d = new Database(db, { readonly: true });
  try {
    return d.prepare('SELECT octet_length(successor) FROM leases WHERE name = ?').pluck().get(LEASE) as number;
  } finally {
    d.close();
  }
}

describe('a 32 MiB successor value written by a neighbour', () => {
  const cands: Candidate[] = [];
  const dir = scratchDir(() => cands);

  it('is never loaded: each candidate says so once, its peak memory stays, and the handoff happens', { timeout: 90_000 }, async () => {
    const db = join(dir.path, 'leases.db');
    for (const id of ['a', 'b']) cands.push(startSidecar(dir.path, id, ['--db', db, '--lease', LEASE], T));
    const leader = await waitFor('a leader', () => leadersByStatus(cands)[0]?.c, 15_000);
    const standby = cands.find((c) => c !== leader)!;
    // Past start-up, which sets the peak: a few renewals and reads by both.
    await new Promise((r) => setTimeout(r, 1500));
    const before = new Map(cands.map((c) => [c.id, peakKiB(c.proc.pid)]));

    const neighbour = new Database(db);
    try {
      neighbour.pragma('busy_timeout = 5000');
      neighbour.prepare('UPDATE leases SET successor = ? WHERE name = ?').run('x'.repeat(BIG), LEASE);
    } finally {
      neighbour.close();
    }
    // The row's next write drops the value: the leader's renewal (the claim it read was over
    // its bound: none) or the standby's successor claim (it read none, so it volunteers one),
    // whichever comes first. Waiting for no claim at all raced the standby's claim: a CI run
    // waited 10 s for an empty value while the standby's small claim stood in the row.
    await waitFor('the value to be overwritten', () => sizeOfSuccessor(db) < 1024, 10_000);
    const grew = peakKiB(standby.proc.pid) - before.get(standby.id)!;
    assert.ok(grew < 8 * 1024, `the standby's peak memory grew by ${grew} KiB reading the row`);
    const notice = /holds values over their bound \(successor: 33554432 bytes;/;
    for (const c of cands) await waitFor(`${c.id} to say it read an oversized value`, () => notice.test(c.proc.stderr()), 10_000);

    leader.proc.kill('SIGTERM');
    assert.equal((await leader.proc.exited).code, 0, leader.proc.stderr());
    const next = await waitFor('the standby to lead', () => leadersByStatus([standby])[0], 10_000);
    assert.equal(next.c, standby);
    const status = await runCli(['status', '--db', db, '--lease', LEASE]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^holder {3}[ab]$/m);

    for (const c of cands) {
      assert.equal(
        c.proc
          .stderr()
          .split('\n')
          .filter((l) => notice.test(l)).length,
        1,
        `${c.id} said it more than once:\n${c.proc.stderr()}`,
      );
    }
    standby.proc.kill('SIGTERM');
    assert.equal((await standby.proc.exited).code, 0, standby.proc.stderr());
  });
});
