/**
 * No release while "not leader" is not on the status volume: a sidecar whose step-down cannot
 * be written leaves the lease to expire, so the next leader cannot start while this one's
 * files still say "leader" with a validUntil ahead (real processes on a real SQLite file).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus, startSidecar, type Candidate } from '../support/sidecars.js';

const TIMING = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };
const LEFT_TO_EXPIRE = /"level":"error","msg":"the step-down could not be written to the status files: the lease is left to expire, not released"/;

function holder(db: string, lease: string): string {
  const raw = new Database(db, { readonly: true });
  try {
    return (raw.prepare('SELECT holder_identity FROM leases WHERE name = ?').get(lease) as { holder_identity: string }).holder_identity;
  } finally {
    raw.close();
  }
}

/**
 * A limit under every descriptor but stdin, stdout and stderr: those open stay usable, and
 * every open() fails (EMFILE), even when a descriptor closes in between (a status write's own).
 */
const NOFILE_NO_MORE = 3;

describe('a leader whose step-down cannot reach its status files', () => {
  const cands: Candidate[] = [];
  const dir = scratchDir(() => cands);

  /** Starts a leader, breaks its status writes with `breakWrites`, SIGTERMs it: the lease must stay its own. */
  async function scenario(lease: string, breakWrites: (c: Candidate) => void, repair: (c: Candidate) => void) {
    const db = join(dir.path, `${lease}.db`);
    const a = startSidecar(dir.path, `a-${lease}`, ['--db', db, '--lease', lease], TIMING);
    cands.push(a);
    await waitFor('a to lead', () => leadersByStatus([a]).length === 1, 20_000);
    try {
      // Inside the try: a break that fails part-way (a bind mount made, its remount refused) is repaired too.
      breakWrites(a);
      // A renewal rewrites the files (validUntil moves on): its failure shows the writes now fail.
      await waitFor('a failed status write', () => a.proc.stderr().includes('cannot write status files'), 10_000);
      a.proc.kill('SIGTERM');
      const exit = await a.proc.exited;
      assert.equal(exit.code, 0, a.proc.stderr());
    } finally {
      repair(a);
    }
    assert.equal(holder(db, lease), a.id, `the lease is not released: it expires\n${a.proc.stderr()}`);
    assert.doesNotMatch(a.proc.stderr(), /"msg":"released lease"/);
    assert.match(a.proc.stderr(), LEFT_TO_EXPIRE);
  }

  it('a status directory that became read-only: the lease is left to expire', { timeout: 60_000 }, async () => {
    // Root ignores permission bits, so as root the folder becomes a read-only bind mount.
    const root = process.getuid?.() === 0;
    let mounted = false;
    await scenario(
      'readonly',
      (a) => {
        if (root) {
          execFileSync('mount', ['--bind', a.statusDir, a.statusDir]);
          mounted = true;
          execFileSync('mount', ['-o', 'remount,bind,ro', a.statusDir]);
        } else {
          chmodSync(a.statusDir, 0o555);
        }
      },
      (a) => {
        if (mounted) execFileSync('umount', [a.statusDir]);
        else chmodSync(a.statusDir, 0o755);
      },
    );
  });

  it('descriptors exhausted: the lease is left to expire', { timeout: 60_000 }, async () => {
    await scenario(
      'nofile',
      (a) => execFileSync('prlimit', ['--pid', String(a.proc.pid), `--nofile=${NOFILE_NO_MORE}:${NOFILE_NO_MORE}`]),
      () => {},
    );
  });
});
