import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HintThrottle, channelName, notifiedLease } from './notify.js';
import { clientConfig, describeTarget, parseTableName } from './config.js';
import { adminScript } from './schema.js';
import { FakeClock } from '../../testing/fake-clock.js';

it('a notification names a lease at most: a bare name, or the name in a JSON payload, never anything else of it', () => {
  assert.equal(notifiedLease('jobs'), 'jobs');
  // What a forger (or an earlier leasehold's trigger) sends: only the name is read.
  assert.equal(notifiedLease(JSON.stringify({ deleted: true, name: 'jobs', fencing_token: 2 ** 53 - 1, holder_identity: '', version: 99 })), 'jobs');
  assert.equal(notifiedLease('{not json'), '');
  assert.equal(notifiedLease(JSON.stringify({ name: 7 })), '');
});

it('each table has its own channel, within PostgreSQL 63 characters, however its name is split or long', () => {
  assert.notEqual(channelName('app_one', 'leases'), channelName('app', 'one_leases'));
  const long = 'x'.repeat(55);
  assert.notEqual(channelName('public', `${long}_a`), channelName('public', `${long}_b`));
  assert.equal(channelName('public', 'leases'), channelName('public', 'leases'));
  assert.match(channelName('public', 'leases'), /^leasehold_[0-9a-f]{40}$/);
  assert.ok(channelName('s'.repeat(63), 't'.repeat(63)).length <= 63);
});

it('a flood of hints costs a burst of 3 and then one delivery per interval', async () => {
  const clock = new FakeClock();
  const delivered = { n: 0 };
  const t = new HintThrottle(clock, 250, () => delivered.n++);
  for (let i = 0; i < 1000; i++) t.hint();
  assert.equal(delivered.n, 3, 'the burst: the first three at once');
  await clock.advance(249);
  assert.equal(delivered.n, 3);
  await clock.advance(1);
  assert.equal(delivered.n, 4, 'the rest of the flood is one hint, when the next token comes');
  // A steady flood of 100 per second for 10 s: at most one per 250 ms.
  for (let ms = 0; ms < 10_000; ms += 10) {
    t.hint();
    await clock.advance(10);
  }
  const total: number = delivered.n;
  assert.ok(total <= 4 + 40, `${String(total)} deliveries`);
  t.cancel();
});

it("a release right after a renewal is passed on at once, not at the end of the renewal's interval", async () => {
  const clock = new FakeClock();
  const delivered: number[] = [];
  const t = new HintThrottle(clock, 250, () => delivered.push(clock.monotonic()));
  // Renewals every 400 ms, each a hint; then a release 30 ms after one of them.
  for (let i = 0; i < 5; i++) {
    t.hint();
    await clock.advance(400);
  }
  t.hint(); // a renewal at 2000
  await clock.advance(30);
  t.hint(); // the release at 2030
  assert.deepEqual(delivered.slice(-2), [2000, 2030]);
  t.cancel();
});

it('a timer that fires a little early still costs its token: a flood gets one delivery per interval', async () => {
  const base = new FakeClock();
  const early = { now: () => base.now(), monotonic: () => base.monotonic(), setTimer: (fn: () => void, ms: number) => base.setTimer(fn, Math.max(0, ms - 1)) };
  const delivered = { n: 0 };
  const t = new HintThrottle(early, 250, () => delivered.n++);
  for (let ms = 0; ms < 10_000; ms += 10) {
    t.hint();
    await base.advance(10);
  }
  assert.ok(delivered.n <= 3 + 41, `${delivered.n} deliveries in 10 s`);
  t.cancel();
});

it('table names and URLs are checked without echoing a password', () => {
  assert.deepEqual(parseTableName('leases'), { schema: 'public', table: 'leases' });
  assert.deepEqual(parseTableName('ops.leases'), { schema: 'ops', table: 'leases' });
  for (const bad of ['Leases', 'a.b.c', 'x;drop', '', 'a.']) assert.throws(() => parseTableName(bad), /invalid PostgreSQL table/);
  assert.throws(
    () => clientConfig('postgres://u:hunter2@[x', 1000),
    (err: Error) => !err.message.includes('hunter2'),
  );
  assert.equal(describeTarget(clientConfig('postgres://u:hunter2@db.example:6543/leases?sslmode=require', 1000)), 'u@db.example:6543/leases');
});

// A library caller gave `url` and `table`, not --postgres-url: the message names them in words,
// never echoes the URL (it may hold a password), and `field` lets the CLI add its flag.
it('tells a library caller about the PostgreSQL table and URL in words, with no CLI flag and no password', () => {
  const url = (rest: string) => `postgres://u:hunter2@db.example/leases${rest}`;
  const refusals: [() => unknown, RegExp, string][] = [
    [() => parseTableName('Bad-Name'), /^invalid PostgreSQL table "Bad-Name": must be table or schema\.table/, 'postgresTable'],
    [() => clientConfig('postgres://u:hunter2@[x', 1000, {}), /^invalid PostgreSQL URL: not a URL/, 'postgresUrl'],
    [() => clientConfig('mysql://u:hunter2@db.example/leases', 1000, {}), /^invalid PostgreSQL URL: the scheme must be postgres:\/\//, 'postgresUrl'],
    [() => clientConfig(url('?sslmode=bogus'), 1000, {}), /^invalid sslmode in the PostgreSQL URL: "bogus"/, 'postgresUrl'],
    [() => clientConfig(url('?sslrootcert=/nonexistent/ca.crt'), 1000, {}), /^invalid sslrootcert in the PostgreSQL URL: /, 'postgresUrl'],
  ];
  for (const [refuse, pattern, field] of refusals) {
    assert.throws(refuse, (err: Error & { code?: string; field?: string }) => {
      assert.equal(err.code, 'LEASEHOLD_ERR_INVALID_CONFIG');
      assert.match(err.message, pattern);
      assert.doesNotMatch(err.message, /--[a-z]/);
      assert.ok(!err.message.includes('hunter2'), err.message);
      assert.equal(err.field, field);
      return true;
    });
  }
});

it('sslmode prefer, require and verify-ca are sent as verify-full, what node-postgres does with them anyway, so it prints no warning', () => {
  for (const mode of ['prefer', 'require', 'verify-ca']) {
    const c = clientConfig(`postgres://u:p%40ss@db.example:6543/leases?sslmode=${mode}&sslrootcert=/dev/null`, 1000, {});
    assert.equal(c.connectionString, 'postgres://u:p%40ss@db.example:6543/leases?sslmode=verify-full&sslrootcert=/dev/null');
  }
  const compat = 'postgres://u@db.example/leases?uselibpqcompat=true&sslmode=require';
  assert.equal(clientConfig(compat, 1000, {}).connectionString, compat, 'libpq semantics asked for: left alone');
  assert.equal(clientConfig('postgres://u@h/d?sslmode=disable', 1000, {}).connectionString, 'postgres://u@h/d?sslmode=disable');
});

it('an sslmode node-postgres does not know, in the URL or PGSSLMODE, and an unreadable sslrootcert are refused in one line', () => {
  const url = (q: string) => `postgres://u:hunter2@db.example/leases?${q}`;
  const refused = (fn: () => unknown, pattern: RegExp) =>
    assert.throws(fn, (err: Error & { code?: string }) => {
      assert.equal(err.code, 'LEASEHOLD_ERR_INVALID_CONFIG');
      assert.match(err.message, pattern);
      assert.ok(!err.message.includes('hunter2') && !err.message.includes('\n'), err.message);
      return true;
    });
  refused(
    () => clientConfig(url('sslmode=bogus'), 1000, {}),
    /^invalid sslmode in the PostgreSQL URL: "bogus": must be one of disable, prefer, require, verify-ca, verify-full, no-verify$/,
  );
  refused(() => clientConfig(undefined, 1000, { PGSSLMODE: 'bogus' }), /^invalid PGSSLMODE: "bogus": must be one of/);
  refused(
    () => clientConfig(url('sslmode=verify-full&sslrootcert=/nonexistent/ca.crt'), 1000, {}),
    /^invalid sslrootcert in the PostgreSQL URL: "\/nonexistent\/ca.crt": no such file; it must be a readable PEM file$/,
  );
  for (const mode of ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']) clientConfig(url(`sslmode=${mode}`), 1000, { PGSSLMODE: mode });
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-ca-'));
  try {
    writeFileSync(join(dir, 'ca.crt'), 'not checked here: node-postgres reads it\n');
    clientConfig(url(`sslmode=verify-full&sslrootcert=${join(dir, 'ca.crt')}`), 1000, {});
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('docs/postgres.md prints exactly the SQL leasehold runs, for an administrator to run by hand', () => {
  const doc = readFileSync(new URL('../../../docs/postgres.md', import.meta.url), 'utf8');
  const block = /<!-- admin-sql -->\n```sql\n([\s\S]*?)\n```/.exec(doc)?.[1];
  assert.equal(block, adminScript('public', 'leases', 'leasehold'));
});
