/**
 * A role with rights on the table stores a 32 MiB successor claim in a lease's row. Every value
 * read from a store is bounded (DESIGN's invariants): the candidates never load it, a reader
 * says so in one line each time it finds one, and the handoff still happens.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { waitFor } from '../support/cli.js';
import { startPostgres } from '../support/postgres.js';
import { postgresCandidates } from '../support/postgres-candidates.js';
import { leadersByStatus, startSidecar, type Candidate } from '../support/sidecars.js';

const server = startPostgres();
after(async () => (await server).stop());

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const LEASE = 'big';

/** The peak resident memory of a process so far, in KiB (VmHWM in /proc/PID/status). */
function peakKiB(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, `no VmHWM for ${pid}`);
  return Number(m[1]);
}

describe('a 32 MiB successor value stored by another role', () => {
  const cands: Candidate[] = [];
  const { dir, args } = postgresCandidates(server, () => cands);

  it('is never loaded: the standby says so, its peak memory stays, and the handoff happens', { timeout: 90_000 }, async () => {
    const pgs = await server;
    for (const id of ['a', 'b']) cands.push(startSidecar(dir.path, id, await args(LEASE, 'public.oversized'), T));
    const leader = await waitFor('a leader', () => leadersByStatus(cands)[0]?.c, 20_000);
    const standby = cands.find((c) => c !== leader)!;
    await new Promise((r) => setTimeout(r, 1500)); // past start-up, which sets the peak
    const before = peakKiB(standby.proc.pid);

    // Written again and again (a new version each time), so that every candidate reads it,
    // whatever the leader's renewals and the standby's claims write meanwhile.
    for (let i = 0; i < 10; i++) {
      pgs.sql(`UPDATE public.oversized SET successor = repeat('x', 33554432), version = version + 1 WHERE name = '${LEASE}'`, 'leases');
      await new Promise((r) => setTimeout(r, 150));
    }
    // The standby reads the row on the change's NOTIFY; the next write (a renewal, a claim) replaces it.
    const size = () => Number(pgs.sql(`SELECT octet_length(successor) FROM public.oversized WHERE name = '${LEASE}'`, 'leases').trim());
    await waitFor('the value to be overwritten', () => size() < 4096, 10_000);
    const grew = peakKiB(standby.proc.pid) - before;
    assert.ok(grew < 8 * 1024, `the standby's peak memory grew by ${grew} KiB reading the row`);
    const notice = /holds values over their bound \(successor: 33554432 bytes;/;
    await waitFor('the standby to say it read an oversized value', () => notice.test(standby.proc.stderr()), 10_000);

    leader.proc.kill('SIGTERM');
    assert.equal((await leader.proc.exited).code, 0, leader.proc.stderr());
    const next = await waitFor('the standby to lead', () => leadersByStatus([standby])[0], 10_000);
    assert.equal(next.c, standby);
    standby.proc.kill('SIGTERM');
    assert.equal((await standby.proc.exited).code, 0, standby.proc.stderr());
  });
});
