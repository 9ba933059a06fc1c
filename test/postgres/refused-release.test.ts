/**
 * A release the table refuses (issue 30): a CHECK forbidding an empty holder makes every
 * release fail. The leader says so in one error line naming the constraint, and the lease is
 * left to expire, on a real server.
 */
import { it, after } from 'node:test';
import assert from 'node:assert/strict';
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

it('a release refused by a CHECK on the table: one error line naming the constraint, and the lease is left to expire', { timeout: 60_000 }, async () => {
  const pgServer = await server;
  // The table as leasehold makes it, then a constraint of the administrator's.
  await (await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.checked' })).close();
  pgServer.sql("ALTER TABLE public.checked ADD CONSTRAINT holder_nonempty CHECK (holder_identity <> '')", 'leases');
  const a = startSidecar(dir.path, 'a', await args('refused', 'public.checked'), T);
  started.push(a);
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
  const store = await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.checked', readonly: true });
  try {
    assert.equal((await store.get('refused'))?.record.holderIdentity, 'a', 'not released');
  } finally {
    await store.close();
  }
});
