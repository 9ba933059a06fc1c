/**
 * Neighbours on the same PostgreSQL (issue 20, items 3 to 7), on a real server: what other
 * roles write or hold must not stop failover, and leasehold must not harm the shared server.
 * - forged notifications (a role with only CONNECT may NOTIFY any channel): a flood claiming
 *   releases during failover, a forged deletion with token 2^53 − 1;
 * - two tables whose old channel names collided;
 * - a table locked by another session: leasehold's backends stay within their bound, `status`
 *   and a starting sidecar give up in time with one line;
 * - a dropped table is reported by health, readiness and `status`;
 * - the SQL of docs/postgres.md, run by hand, serves a role without DDL rights; a table with
 *   an earlier leasehold's trigger still notifies;
 * - an sslmode or sslrootcert that cannot work is one line and exit 2.
 */
import { describe, it, after } from 'node:test';
import { readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import pg from 'pg';
import { channelName } from '../../src/backends/postgres/notify.js';
import { MAX_BACKENDS, PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import { PASSWORDS, startPostgres } from '../support/postgres.js';
import { freePort } from '../support/control-plane.js';
import { runCli, startCli, waitFor } from '../support/cli.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { postgresCandidates } from '../support/postgres-candidates.js';

const server = startPostgres();
after(async () => (await server).stop());

const T = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };
const LEASE_MS = 3_000;

/** A client of the test's own, as a neighbour would connect (never counted as leasehold's). */
async function neighbour(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, application_name: 'neighbour' });
  c.on('error', () => {});
  await c.connect();
  return c;
}

/** Both the channel of this version and the one of an earlier leasehold (`leasehold_<schema>_<table>`), so the forgery reaches either. */
function channels(schema: string, table: string): string[] {
  return [channelName(schema, table), `leasehold_${schema}_${table}`.slice(0, 63)];
}

describe('neighbours on PostgreSQL', () => {
  let cands: Candidate[] = [];
  /** Every process a case started, killed after the block even if the case failed midway. */
  const started: Candidate[] = [];
  const launch = (id: string, backend: string[], t = T) => {
    const c = startSidecar(dir.path, id, backend, t);
    started.push(c);
    return c;
  };
  const clients: pg.Client[] = [];
  const { dir, args } = postgresCandidates(server, () => started);
  after(async () => {
    for (const c of clients) await c.end().catch(() => {});
  });
  const stopAll = async () => {
    for (const c of cands) c.proc.kill('SIGKILL');
    await Promise.all(cands.map((c) => c.proc.exited));
    cands = [];
  };
  /** Reads of the table so far, as the server counts them (index and sequential scans). */
  const reads = async (c: pg.Client, table: string) => {
    await c.query('SELECT pg_stat_clear_snapshot()');
    const r = await c.query<{ n: string }>('SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) AS n FROM pg_stat_user_tables WHERE relid = to_regclass($1)', [
      table,
    ]);
    return Number(r.rows[0]?.n ?? 0);
  };

  it(
    'a flood of forged "released" notifications from a role with only CONNECT neither blocks failover nor makes candidates hammer the database',
    { timeout: 120_000 },
    async () => {
      const server_ = await server;
      const forger = await neighbour(server_.url('reader'));
      clients.push(forger);
      const admin = await neighbour(server_.url('postgres'));
      clients.push(admin);
      cands = await Promise.all(['a', 'b', 'c'].map(async (id) => launch(id, await args('forged', 'public.forged'))));
      const leader = await waitFor('a leader', () => validLeaders(cands)[0], 30_000);
      await new Promise((r) => setTimeout(r, 1_000)); // the standbys have read the lease and wait on their watch
      // Every 20 ms, to every channel: "released", each with a new version, as a trigger would send it.
      let version = 1_000;
      let forging = true;
      const forge = (async () => {
        while (forging) {
          const payload = JSON.stringify({
            name: 'forged',
            holder_identity: '',
            fencing_token: leader.token,
            renew_time: Date.now() / 1000,
            lease_duration_seconds: 3,
            acquire_time: 0,
            version: version++,
          });
          for (const ch of channels('public', 'forged')) await forger.query('SELECT pg_notify($1, $2)', [ch, payload]);
          await forger.query('SELECT pg_notify($1, $2)', [channelName('public', 'forged'), 'forged']);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      try {
        // While the leader holds: the forgery does not make the standbys read at its pace.
        const before = await reads(admin, 'public.forged');
        await new Promise((r) => setTimeout(r, 5_000));
        const during = (await reads(admin, 'public.forged')) - before;
        // 2 standbys, at most one read per 250 ms hint each, a poll and the leader's renewals: far
        // below the 50 notifications a second each of them received.
        console.log(`postgres neighbours: ${during} reads of the table in 5 s under ${Math.round(5_000 / 20)} × 3 forged notifications`);
        assert.ok(during < 120, `${during} reads in 5 s: the forged notifications drive the reads`);
        assert.ok(
          validLeaders(cands).some((l) => l.c === leader.c),
          'the leader kept its lease',
        );
        // Failover under the flood: within a lease duration plus the usual margin.
        const killedAt = Date.now();
        leader.c.proc.kill('SIGKILL');
        await leader.c.proc.exited;
        const next = await waitFor('a new leader under the forged flood', () => validLeaders(cands).find((l) => l.c !== leader.c), LEASE_MS + 6_000, 20);
        const failoverMs = Date.now() - killedAt;
        console.log(`postgres neighbours: SIGKILL failover under forged "released" notifications in ${failoverMs} ms (lease 3 s)`);
        assert.ok(next.token > leader.token);
        assert.equal(validLeaders(cands).length, 1);
      } finally {
        forging = false;
        await forge;
        await stopAll();
      }
    },
  );

  it('a forged "deleted" notification carrying token 2^53 − 1 does not poison the next term', { timeout: 60_000 }, async () => {
    const server_ = await server;
    const forger = await neighbour(server_.url('reader'));
    clients.push(forger);
    cands = await Promise.all(['a', 'b'].map(async (id) => launch(id, await args('poison', 'public.poison'))));
    const first = await waitFor('a leader', () => validLeaders(cands)[0], 30_000);
    await new Promise((r) => setTimeout(r, 1_000));
    const payload = JSON.stringify({
      deleted: true,
      name: 'poison',
      holder_identity: 'x',
      fencing_token: Number.MAX_SAFE_INTEGER,
      renew_time: 0,
      lease_duration_seconds: 3,
      acquire_time: 0,
      version: 1,
    });
    for (const ch of channels('public', 'poison')) await forger.query('SELECT pg_notify($1, $2)', [ch, payload]);
    await new Promise((r) => setTimeout(r, 500));
    first.c.proc.kill('SIGTERM'); // releases: the standby takes the next term
    await first.c.proc.exited;
    const next = await waitFor('the standby leads', () => validLeaders(cands).find((l) => l.c !== first.c), 15_000);
    assert.equal(next.token, first.token + 1, 'the token follows the row, not the forged notification');
    await stopAll();
  });

  it('tables whose old channel names collided (app_one.leases, app.one_leases) elect a leader each', { timeout: 60_000 }, async () => {
    const server_ = await server;
    for (const schema of ['app_one', 'app']) server_.sql(`CREATE SCHEMA IF NOT EXISTS ${schema} AUTHORIZATION leasehold`, 'leases');
    cands = [launch('one', await args('shared-name', 'app_one.leases'))];
    await waitFor('a leader on app_one.leases', () => validLeaders(cands)[0], 30_000);
    await new Promise((r) => setTimeout(r, 1_000));
    const other = launch('two', await args('shared-name', 'app.one_leases'));
    cands.push(other);
    await waitFor('a leader on app.one_leases too', () => validLeaders(cands).find((l) => l.c === other), 3 * LEASE_MS + 5_000);
    assert.equal(validLeaders(cands).length, 2, 'one leader per table');
    await stopAll();
  });

  /** Holds ACCESS EXCLUSIVE on the table from another session for `seconds`; resolves when the lock is taken. */
  const lockTable = async (table: string, seconds: number) => {
    const holder = await neighbour((await server).url('postgres'));
    clients.push(holder);
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    // Never rejects: the case may end the holder early (pg_terminate_backend).
    return (async () => {
      await holder.query(`SELECT pg_sleep(${seconds})`);
      await holder.query('COMMIT');
    })().catch(() => {});
  };

  it(
    `a table locked for 20 s: each candidate holds at most ${MAX_BACKENDS} backend(s), the leader steps down, and one leader follows`,
    { timeout: 120_000 },
    async () => {
      const server_ = await server;
      const admin = await neighbour(server_.url('postgres'));
      clients.push(admin);
      cands = await Promise.all(['a', 'b', 'c'].map(async (id) => launch(id, await args('locked', 'public.locked'))));
      await waitFor('a leader', () => validLeaders(cands)[0], 30_000);
      const count = async () =>
        Number((await admin.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'leasehold'")).rows[0]!.n);
      const lockedAt = Date.now();
      const released = lockTable('public.locked', 20);
      let max = 0;
      let samples = 0;
      let steppedDown = false;
      while (Date.now() - lockedAt < 20_000) {
        max = Math.max(max, await count());
        samples++;
        if (validLeaders(cands).length === 0) steppedDown = true;
        await new Promise((r) => setTimeout(r, 100));
      }
      await released;
      console.log(`postgres neighbours: table locked 20 s under 3 candidates: at most ${max} leasehold backends (${samples} samples)`);
      assert.ok(max <= 3 * MAX_BACKENDS, `${max} backends for 3 candidates: more than ${MAX_BACKENDS} each`);
      assert.ok(steppedDown, 'the leader stepped down while it could not renew');
      await waitFor('one leader after the lock', () => (validLeaders(cands).length === 1 ? true : undefined), 3 * LEASE_MS + 10_000);
      await new Promise((r) => setTimeout(r, 1_000));
      assert.equal(validLeaders(cands).length, 1);
      for (let i = 0; i < 20; i++) {
        assert.ok((await count()) <= 3 * MAX_BACKENDS);
        await new Promise((r) => setTimeout(r, 100));
      }
      await stopAll();
    },
  );

  it('`leasehold status` and a starting sidecar give up on a locked table in bounded time, with one line', { timeout: 120_000 }, async () => {
    const server_ = await server;
    const backend = await args('locked-open', 'public.locked_open');
    const setup = launch('setup', backend); // creates the table and the lease
    cands = [setup];
    await waitFor('a leader', () => validLeaders(cands)[0], 30_000);
    setup.proc.kill('SIGTERM');
    await setup.proc.exited;
    cands = [];
    const released = lockTable('public.locked_open', 40);
    try {
      let t0 = Date.now();
      const st = await runCli(['status', ...backend], {}, undefined, 35_000);
      const statusMs = Date.now() - t0;
      console.log(`postgres neighbours: status on a locked table: exit ${st.code} after ${statusMs} ms: ${st.stderr.trim()}`);
      assert.equal(st.code, 3, st.stderr);
      assert.equal(st.stderr.trim().split('\n').length, 1, st.stderr);
      assert.match(
        st.stderr,
        /^leasehold: postgres .* no answer within \d+ ms \(canceling statement due to lock timeout\): is another session holding a lock on the table\?\n$/,
      );
      assert.ok(statusMs < 15_000, `status took ${statusMs} ms`);
      t0 = Date.now();
      const sc = await runCli(['sidecar', ...backend, '--listen', 'off'], {}, undefined, 35_000);
      const openMs = Date.now() - t0;
      console.log(`postgres neighbours: sidecar start on a locked table: exit ${sc.code} after ${openMs} ms`);
      assert.equal(sc.code, 1, sc.stderr);
      assert.equal(sc.stderr.trim().split('\n').length, 1, sc.stderr);
      assert.match(sc.stderr, /no answer within \d+ ms .*lock/);
      assert.ok(openMs < 15_000, `opening took ${openMs} ms`);
    } finally {
      const killer = await neighbour(server_.url('postgres'));
      await killer.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'neighbour' AND query LIKE 'SELECT pg_sleep%'");
      await killer.end();
      await released;
    }
  });

  it('a dropped table: health, readiness and status say so', { timeout: 60_000 }, async () => {
    const server_ = await server;
    const backend = await args('dropped', 'public.dropped');
    const port = await freePort();
    const statusDir = join(dir.path, 'status-a');
    const proc = startCli([
      'sidecar',
      ...backend,
      '--identity',
      'a',
      '--status-dir',
      statusDir,
      '--listen',
      `127.0.0.1:${port}`,
      '--lease-duration',
      T.leaseDuration,
      '--renew-deadline',
      T.renewDeadline,
      '--retry-period',
      T.retryPeriod,
    ]);
    cands = [{ id: 'a', statusDir, proc }];
    started.push(...cands);
    await waitFor('a leader', () => validLeaders(cands)[0], 30_000);
    server_.sql('DROP TABLE public.dropped', 'leases');
    const get = async (path: string) => {
      const r = await fetch(`http://127.0.0.1:${port}${path}`).catch(() => null);
      return r ? { status: r.status, body: await r.text() } : null;
    };
    for (const path of ['/healthz', '/readyz']) {
      const r = await waitFor(
        `${path} reports the dropped table`,
        async () => {
          const got = await get(path);
          return got && got.status === 503 && /does not exist \(it was dropped\)/.test(got.body) ? got : undefined;
        },
        15_000,
      );
      assert.match(r.body, /^unavailable: store: the lease table public.dropped does not exist \(it was dropped\)/);
    }
    const st = await runCli(['status', ...backend]);
    assert.equal(st.code, 2, st.stderr);
    assert.match(st.stderr, /^leasehold: no lease table public.dropped on .*: no candidate has run with it yet, or it was dropped\n$/);
    await stopAll();
  });

  it(
    'the SQL in docs/postgres.md, run by an administrator, serves a role that may not create anything; handoffs still go through NOTIFY',
    { timeout: 120_000 },
    async () => {
      const server_ = await server;
      const doc = readFileSync(new URL('../../docs/postgres.md', import.meta.url), 'utf8');
      const sql = /<!-- admin-sql -->\n```sql\n([\s\S]*?)\n```/.exec(doc)?.[1];
      assert.ok(sql, 'docs/postgres.md has the administrator SQL block');
      server_.sql('CREATE DATABASE byhand');
      server_.sql('REVOKE CREATE ON SCHEMA public FROM PUBLIC', 'byhand');
      // Exactly as an administrator would: psql with the page's text.
      const psql = spawn(
        '/bin/sh',
        ['-c', `"$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p ${server_.port} -U postgres -d byhand`],
        { env: { ...process.env, PGPASSWORD: PASSWORDS.postgres }, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let err = '';
      psql.stderr.on('data', (d: Buffer) => (err += d.toString()));
      psql.stdin.end(sql);
      const code = await new Promise((r) => psql.once('exit', r));
      assert.equal(code, 0, err);
      const url = server_.url().replace(/\/leases$/, '/byhand');
      assert.equal(
        server_.sql("SELECT has_schema_privilege('leasehold', 'public', 'CREATE') OR has_database_privilege('leasehold', 'byhand', 'CREATE')", 'byhand').trim(),
        'f',
        'the role has no DDL rights',
      );
      const slow = { leaseDuration: '10s', renewDeadline: '7s', retryPeriod: '5s' };
      cands = await Promise.all(['a', 'b'].map(async (id) => launch(id, await args('byhand', 'public.leases', url), slow)));
      const first = await waitFor('a leader on the table made by hand', () => validLeaders(cands)[0], 30_000);
      for (const c of cands) assert.doesNotMatch(c.proc.stderr(), /without the leasehold_notify trigger|older leasehold_notify trigger/);
      await new Promise((r) => setTimeout(r, 1_000));
      const t0 = Date.now();
      first.c.proc.kill('SIGTERM');
      await waitFor('the standby leads', () => validLeaders(cands).find((l) => l.c !== first.c), 15_000, 5);
      const ms = Date.now() - t0;
      console.log(`postgres neighbours: handoff on the table made by hand in ${ms} ms (retry period 5 s)`);
      assert.ok(ms < 2_000, `handoff took ${ms} ms: the trigger made by hand did not notify`);
      await stopAll();
    },
  );

  it("a table with an earlier leasehold's trigger (another channel): reported at start, and a watch still hears leasehold's writes", async () => {
    const server_ = await server;
    // As the earlier leasehold made it: a JSON payload on `leasehold_<schema>_<table>`.
    server_.sql(
      `CREATE TABLE public.oldtrig (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token BIGINT NOT NULL, renew_time DOUBLE PRECISION NOT NULL, lease_duration_seconds DOUBLE PRECISION NOT NULL, acquire_time DOUBLE PRECISION NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 1);
       CREATE FUNCTION public.oldtrig_leasehold_notify() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN PERFORM pg_notify('leasehold_public_oldtrig', json_build_object('name', NEW.name)::text); RETURN NULL; END $f$;
       CREATE TRIGGER leasehold_notify AFTER INSERT OR UPDATE OR DELETE ON public.oldtrig FOR EACH ROW EXECUTE FUNCTION public.oldtrig_leasehold_notify();
       ALTER TABLE public.oldtrig OWNER TO leasehold;`,
      'leases',
    );
    const warnings: string[] = [];
    const log = { debug() {}, info() {}, error() {}, warn: (m: string) => void warnings.push(m) };
    const watcher = await PostgresLeaseStore.open({ url: server_.url(), table: 'public.oldtrig', log });
    const writer = await PostgresLeaseStore.open({ url: server_.url(), table: 'public.oldtrig' });
    try {
      assert.ok(
        warnings.some((w) => /older leasehold_notify trigger \(it notifies another channel\)/.test(w)),
        warnings.join('; '),
      );
      let hints = 0;
      let healthy = false;
      const stop = watcher.watch(
        'old',
        () => hints++,
        (h) => (healthy = h),
      );
      await waitFor('the watch is listening', () => healthy, 5_000);
      const before = hints;
      await writer.create('old', { holderIdentity: 'a', leaseDurationSeconds: 3, acquireTime: new Date(), renewTime: new Date(), leaseTransitions: 1 });
      await waitFor("a hint for leasehold's own write", () => hints > before, 5_000);
      stop();
    } finally {
      await writer.close();
      await watcher.close();
    }
  });

  it('sslmode=bogus and a missing sslrootcert: one line, exit 2, for the sidecar and status', async () => {
    const server_ = await server;
    for (const cmd of [['sidecar', '--listen', 'off'], ['status']]) {
      const bogus = await runCli([...cmd, '--backend', 'postgres', '--lease', 'x', '--postgres-url', `${server_.url()}?sslmode=bogus`]);
      assert.equal(bogus.code, 2, bogus.stderr);
      assert.equal(
        bogus.stderr,
        'leasehold: --postgres-url: invalid sslmode in the PostgreSQL URL: "bogus": must be one of disable, prefer, require, verify-ca, verify-full, no-verify\n',
      );
      const env = await runCli([...cmd, '--backend', 'postgres', '--lease', 'x', '--postgres-url', server_.url()], { PGSSLMODE: 'bogus' });
      assert.equal(env.code, 2, env.stderr);
      assert.match(env.stderr, /^leasehold: invalid PGSSLMODE: "bogus": must be one of/);
      const missing = await runCli([
        ...cmd,
        '--backend',
        'postgres',
        '--lease',
        'x',
        '--postgres-url',
        `${server_.url()}?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt`,
      ]);
      assert.equal(missing.code, 2, missing.stderr);
      assert.equal(
        missing.stderr,
        'leasehold: --postgres-url: invalid sslrootcert in the PostgreSQL URL: "/nonexistent/ca.crt": no such file; it must be a readable PEM file\n',
      );
    }
  });
});
