/**
 * A full NOTIFY queue does not stop an election (issue 30, item 3), on a real server. Any role
 * that may connect can fill the server's notification queue: one session LISTENs and stays idle
 * in a transaction (the queue is kept for it), another sends notifications until the server
 * refuses more. A transaction that notifies then fails at commit, so a lease write that
 * notified inside its own transaction (as the trigger did for leasehold's writes) failed, and
 * nobody could lead while it lasted. The queue is 8 GB before PostgreSQL 17
 * (max_notify_queue_pages, which could make it small, came in 17): filling it with notifications
 * of nearly the largest payload takes a minute or two.
 */
import { it, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import { NOTIFIES_AFTER_COMMIT, notifyFunction } from '../../src/backends/postgres/schema.js';
import { channelName } from '../../src/backends/postgres/notify.js';
import { startPostgres } from '../support/postgres.js';
import { waitFor } from '../support/cli.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { postgresCandidates } from '../support/postgres-candidates.js';

const server = startPostgres();
after(async () => (await server).stop());

const T = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };

const started: Candidate[] = [];
const { dir, args } = postgresCandidates(server, () => started);

/** Fills the server's NOTIFY queue as a role with only CONNECT can; returns the two sessions, to end after the case. */
async function fillNotifyQueue(url: string): Promise<pg.Client[]> {
  const connect = async () => {
    const c = new pg.Client({ connectionString: url, application_name: 'neighbour' });
    c.on('error', () => {});
    await c.connect();
    return c;
  };
  const listener = await connect();
  const filler = await connect();
  const sessions = [listener, filler];
  try {
    await listener.query('LISTEN anything');
    // Idle in a transaction: the server keeps every notification from now on for this session.
    await listener.query('BEGIN');
    await listener.query('SELECT 1');
    const t0 = Date.now();
    for (let batch = 0; ; batch++) {
      try {
        // 20000 distinct notifications of about 8 kB (the largest payload is 8000 bytes): 160 MB a commit.
        await filler.query("SELECT count(pg_notify('anything', rpad(g::text || '-' || $1, 7900, 'x'))) FROM generate_series(1, 20000) g", [String(batch)]);
      } catch (err) {
        assert.match(String(err), /too many notifications in the NOTIFY queue/);
        console.log(`postgres notify queue: full after ${Math.round((Date.now() - t0) / 1000)} s (${batch} batches)`);
        return sessions;
      }
      assert.ok(batch < 200, 'the NOTIFY queue never filled');
    }
  } catch (err) {
    for (const c of sessions) await c.end().catch(() => {});
    throw err;
  }
}

it('a trigger function an earlier leasehold made (it notified inside every write) is brought up to date by its owner; another role says once what to run', async () => {
  const pgServer = await server;
  const fn = notifyFunction('public', 'earlier');
  const channel = channelName('public', 'earlier');
  pgServer.sql(
    `CREATE TABLE public.earlier (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token BIGINT NOT NULL, renew_time DOUBLE PRECISION NOT NULL, lease_duration_seconds DOUBLE PRECISION NOT NULL, acquire_time DOUBLE PRECISION NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 1, successor TEXT NOT NULL DEFAULT '');
     CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN PERFORM pg_notify('${channel}', CASE WHEN TG_OP = 'DELETE' THEN OLD.name ELSE NEW.name END); RETURN NULL; END $f$;
     CREATE TRIGGER leasehold_notify AFTER INSERT OR UPDATE OR DELETE ON public.earlier FOR EACH ROW EXECUTE FUNCTION ${fn}();
     GRANT SELECT, INSERT, UPDATE ON public.earlier TO leasehold;`,
    'leases',
  );
  const body = () => pgServer.sql(`SELECT prosrc FROM pg_proc WHERE oid = '${fn}()'::regprocedure`, 'leases');
  const lines: string[] = [];
  const log = { debug() {}, error() {}, info: (m: string) => void lines.push(`info ${m}`), warn: (m: string) => void lines.push(`warn ${m}`) };
  // The function belongs to the administrator: kept, and said once.
  await (await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.earlier', log })).close();
  const refused = lines.filter((l) => /earlier leasehold_notify trigger function/.test(l));
  assert.equal(refused.length, 1, lines.join('\n'));
  assert.match(
    refused[0]!,
    /^warn .*while another session fills the server's NOTIFY queue, every lease write fails; an administrator runs: CREATE OR REPLACE FUNCTION/,
  );
  assert.doesNotMatch(body(), new RegExp(NOTIFIES_AFTER_COMMIT.replace('.', '\\.')));
  // The function is leasehold's role's: replaced at start, the trigger and the table untouched.
  pgServer.sql(`ALTER FUNCTION ${fn}() OWNER TO leasehold`, 'leases');
  lines.length = 0;
  const store = await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.earlier', log });
  const watcher = await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.earlier' });
  try {
    assert.ok(
      lines.some((l) => /^info .*trigger now leaves leasehold's writes to notify after they commit/.test(l)),
      lines.join('\n'),
    );
    assert.match(body(), new RegExp(NOTIFIES_AFTER_COMMIT.replace('.', '\\.')));
    // Hints still come: for leasehold's own write (after its commit), and for anybody else's (the trigger).
    let hints = 0;
    let healthy = false;
    const stop = watcher.watch(
      'e',
      () => hints++,
      (h) => (healthy = h),
    );
    await waitFor('the watch is listening', () => healthy, 5_000);
    await store.create('e', { holderIdentity: 'a', leaseDurationSeconds: 3, acquireTime: new Date(), renewTime: new Date(), leaseTransitions: 1 });
    await waitFor("a hint for leasehold's write", () => hints >= 1, 5_000);
    pgServer.sql("UPDATE public.earlier SET holder_identity = 'x' WHERE name = 'e'", 'leases');
    await waitFor("a hint for another writer's change", () => hints >= 2, 5_000);
    stop();
  } finally {
    await watcher.close();
    await store.close();
  }
});

it('with the NOTIFY queue full, a lease write still commits, and a killed leader is replaced by polling', { timeout: 600_000 }, async () => {
  const pgServer = await server;
  const sessions = await fillNotifyQueue(pgServer.url('reader'));
  const warnings: string[] = [];
  const log = { debug() {}, info() {}, error() {}, warn: (m: string, f?: Record<string, unknown>) => void warnings.push(`${m} ${JSON.stringify(f)}`) };
  const store = await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.leases', log });
  try {
    const rec = { holderIdentity: 'a', leaseDurationSeconds: 3, acquireTime: new Date(), renewTime: new Date(), leaseTransitions: 1 };
    const v1 = await store.create('direct', rec);
    const renewed = { ...rec, renewTime: new Date(rec.renewTime.getTime() + 1_000) };
    const v2 = await store.update('direct', renewed, v1);
    assert.deepEqual(await store.get('direct'), { record: renewed, version: v2 });
    await waitFor('the failed notification logged', () => warnings.find((w) => /postgres notification not sent/.test(w)), 5_000);
    assert.equal(warnings.filter((w) => /postgres notification not sent/.test(w)).length, 1, 'logged once, not per write');

    const backend = await args('queue');
    const cands = ['a', 'b'].map((id) => {
      const c = startSidecar(dir.path, id, backend, T);
      started.push(c);
      return c;
    });
    const first = await waitFor('a leader', () => validLeaders(cands)[0], 30_000);
    first.c.proc.kill('SIGKILL');
    await first.c.proc.exited;
    const t0 = Date.now();
    const next = await waitFor('the other candidate leads', () => validLeaders(cands).find((l) => l.c !== first.c), 20_000);
    console.log(`postgres notify queue full: failover by polling in ${Date.now() - t0} ms (lease 3 s)`);
    assert.ok(next.token > first.token);
    const survivor = next.c.proc.stderr();
    assert.ok((survivor.match(/postgres notification not sent/g) ?? []).length <= 1, survivor);
    // Only the notification failed: no write of an election did.
    for (const line of survivor.split('\n').filter((l) => /too many notifications/i.test(l))) assert.match(line, /postgres notification not sent/);
  } finally {
    for (const c of started) c.proc.kill('SIGKILL');
    await Promise.all(started.map((c) => c.proc.exited));
    await store.close();
    for (const c of sessions) await c.end().catch(() => {});
  }
});
