/**
 * A release the table refuses (issue 30): a CHECK forbidding an empty holder, in a database
 * file made by hand, makes every release fail. The leader says so in one error line naming the
 * constraint, and the lease is left to expire. Real processes on a real file.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus, startSidecar, type Candidate } from '../support/sidecars.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const cands: Candidate[] = [];
const dir = scratchDir(() => cands);

it('a release refused by a CHECK on the table: one error line naming the constraint, and the lease is left to expire', { timeout: 60_000 }, async () => {
  const db = join(dir.path, 'checked.db');
  // The tutorial's table, with a constraint of the administrator's.
  const raw = new Database(db);
  raw.exec(`CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder_identity TEXT NOT NULL CONSTRAINT holder_nonempty CHECK (holder_identity <> ''),
    fencing_token INTEGER NOT NULL,
    renew_time REAL NOT NULL,
    lease_duration_seconds REAL NOT NULL
  )`);
  raw.close();
  const a = startSidecar(dir.path, 'a', ['--db', db, '--lease', 'refused'], T);
  cands.push(a);
  await waitFor('leadership', () => leadersByStatus([a]).length === 1, 20_000);
  a.proc.kill('SIGTERM');
  const exit = await a.proc.exited;
  assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}`);
  const lines = a.proc
    .stderr()
    .split('\n')
    .filter((l) => /holder_nonempty/.test(l));
  assert.equal(lines.length, 1, a.proc.stderr());
  assert.match(lines[0]!, /error/);
  assert.match(lines[0]!, /the store refused the release: the lease is left to expire/);
  const store = new SqliteLeaseStore(db, { readonly: true });
  try {
    assert.equal((await store.get('refused'))?.record.holderIdentity, 'a', 'not released');
  } finally {
    await store.close();
  }
});
