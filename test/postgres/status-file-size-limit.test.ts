/**
 * A status file the kernel cuts short: under a file-size limit (RLIMIT_FSIZE) write() takes
 * the bytes up to the limit and returns their count, with no error. A write that stopped short
 * is a failed write: status.json is never replaced by a cut copy, the sidecar says it cannot
 * write its status files, and at SIGTERM the lease is left to expire, not released. On
 * PostgreSQL, whose store writes no file of this process, so the limit breaks only the status
 * files (real processes on a real server).
 */
import { it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import { startPostgres } from '../support/postgres.js';
import { waitFor } from '../support/cli.js';
import { leadersByStatus, startSidecar, type Candidate } from '../support/sidecars.js';
import { postgresCandidates } from '../support/postgres-candidates.js';

const server = startPostgres();
after(async () => (await server).stop());

const T = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };
const started: Candidate[] = [];
const { dir, args } = postgresCandidates(server, () => started);

/** Under status.json's size, over every other status file's (is-leader, fencing-token, holder). */
const FSIZE_BYTES = 64;

it('status.json cut short by a file-size limit is a failed write: never on disk cut, and the lease is left to expire', { timeout: 60_000 }, async () => {
  const pgServer = await server;
  const a = startSidecar(dir.path, 'a', await args('fsize'), T);
  started.push(a);
  await waitFor('leadership', () => leadersByStatus([a]).length === 1, 20_000);
  execFileSync('prlimit', ['--pid', String(a.proc.pid), `--fsize=${FSIZE_BYTES}:${FSIZE_BYTES}`]);
  // A renewal rewrites status.json (validUntil moves on): it must fail, not land cut.
  await waitFor('a failed status write', () => a.proc.stderr().includes('cannot write status files'), 10_000);
  a.proc.kill('SIGTERM');
  const exit = await a.proc.exited;
  assert.equal(exit.code, 0, a.proc.stderr());
  const text = readFileSync(join(a.statusDir, 'status.json'), 'utf8');
  assert.doesNotThrow(() => JSON.parse(text), `status.json is whole: ${JSON.stringify(text)}`);
  assert.doesNotMatch(a.proc.stderr(), /"msg":"released lease"/);
  assert.match(a.proc.stderr(), /the step-down could not be written to the status files: the lease is left to expire, not released/);
  const store = await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.leases', readonly: true });
  try {
    assert.equal((await store.get('fsize'))?.record.holderIdentity, 'a', 'not released');
  } finally {
    await store.close();
  }
});
