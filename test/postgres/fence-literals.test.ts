/**
 * withPostgresFence's key as a literal, and a Client shared with other queries (issue 42), on a
 * real PostgreSQL; from a hostile review.
 *
 * - The key is spliced in as a literal by pg's escapeLiteral, which is not encoding-aware; a
 *   role's `client_encoding = 'SJIS'` with `backslash_quote = on` would let a key with an SJIS
 *   lead byte before a backslash end the literal early, but node-postgres names UTF8 at
 *   start-up, which outranks the role's setting.
 * - `standard_conforming_strings = off` on the role does not let a key escape its literal.
 * - What docs/fencing.md says of a Client shared with fenced writes: an unfenced query another
 *   request sends on it while a fenced check is in flight is dispatched by node-postgres inside
 *   the fenced transaction; when the check refuses a stale token, that write resolves as done
 *   and is rolled back with it. Not detectable by the helper; the docs tell users to keep such a
 *   Client for fenced writes only, and this test holds the docs to what happens.
 */
import { it, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { createPostgresFenceTable, withPostgresFence, StaleTokenError } from '../../src/fencing/index.js';

const serverStarted = startPostgres();
let server: PostgresServer;
const clients: pg.Client[] = [];

before(async () => {
  server = await serverStarted;
  const admin = await client();
  await createPostgresFenceTable(admin, { withFunction: true });
  await admin.query('CREATE TABLE literal_work (label text NOT NULL)');
});
after(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await (await serverStarted).stop();
});

async function client(config: pg.ClientConfig = {}): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server.url(), ...config });
  c.on('error', () => {});
  await c.connect();
  clients.push(c);
  return c;
}

async function fenceOf(c: pg.Client, key: string): Promise<number | undefined> {
  const rows = (await c.query<{ token: number }>('SELECT token::int AS token FROM public.leasehold_fences WHERE key = $1', [key])).rows;
  return rows[0]?.token;
}

describe('the key as a literal', () => {
  it('a role on client_encoding SJIS and backslash_quote on; a key with an SJIS lead byte before a backslash is one literal', async () => {
    const admin = await client();
    await withPostgresFence(admin, { key: 'victim-1', token: 9 }, async () => undefined);
    // A DBA's settings for a legacy Shift-JIS application sharing the role; both are user-settable.
    server.sql("ALTER ROLE leasehold SET client_encoding = 'SJIS'");
    server.sql("ALTER ROLE leasehold SET backslash_quote = 'on'");
    try {
      const legacy = await client();
      // node-postgres names UTF8 at start-up, which outranks the role's setting: the escape
      // then meets only UTF-8, where no byte of a multibyte character is a backslash or quote.
      assert.equal((await legacy.query<{ e: string }>("SELECT current_setting('client_encoding') AS e")).rows[0]!.e, 'UTF8');
      assert.equal((await legacy.query<{ b: string }>("SELECT current_setting('backslash_quote') AS b")).rows[0]!.b, 'on');
      // "Á" is C3 81 in UTF-8: 0x81 is an SJIS lead byte and takes the first of the two
      // backslashes escapeLiteral writes; `\'` is then a quote and the next quote ends the literal.
      const key = "\u00c1\\'; UPDATE public.leasehold_fences SET token = 1; SELECT 1 AS token --";
      let outcome: unknown;
      await withPostgresFence(legacy, { key, token: 1 }, (tx) => tx.query("INSERT INTO literal_work VALUES ('injected key')")).then(
        () => (outcome = 'committed'),
        (e: unknown) => (outcome = e),
      );
      assert.equal(outcome, 'committed');
      assert.equal(await fenceOf(admin, key), 1);
      assert.equal(await fenceOf(admin, 'victim-1'), 9, `victim's fence lowered by a key; withPostgresFence gave ${String(outcome)}`);
    } finally {
      server.sql('ALTER ROLE leasehold RESET client_encoding');
      server.sql('ALTER ROLE leasehold RESET backslash_quote');
    }
  });

  it('standard_conforming_strings off on the role; a key with quotes and backslashes is one literal', async () => {
    const admin = await client();
    server.sql('ALTER ROLE leasehold SET standard_conforming_strings = off');
    try {
      const legacy = await client();
      assert.equal((await legacy.query<{ s: string }>("SELECT current_setting('standard_conforming_strings') AS s")).rows[0]!.s, 'off');
      await withPostgresFence(admin, { key: 'victim-2', token: 9 }, async () => undefined);
      for (const key of ["a\\'; UPDATE public.leasehold_fences SET token = 1; --", "b\\\\''\\", "c'; SELECT 1 AS token --", '\\']) {
        await withPostgresFence(legacy, { key, token: 3 }, async () => undefined);
        assert.equal(await fenceOf(admin, key), 3, JSON.stringify(key));
        await assert.rejects(
          withPostgresFence(legacy, { key, token: 2 }, async () => undefined),
          StaleTokenError,
        );
      }
      assert.equal(await fenceOf(admin, 'victim-2'), 9);
    } finally {
      server.sql('ALTER ROLE leasehold RESET standard_conforming_strings');
    }
  });
});

describe('a Client shared by fenced writes and other queries', () => {
  it('an unfenced write sent on it during a refused check resolves and is rolled back, as the docs warn', { timeout: 60_000 }, async () => {
    const [shared, raiser, watcher] = [await client(), await client(), await client()];
    await watcher.query('CREATE TABLE shared_notes (note text NOT NULL)');
    await withPostgresFence(shared, { key: 'shared-1', token: 5 }, async () => undefined);
    // A new term's raise, held open: the shared client's check (token 5) waits on its row lock.
    await raiser.query('BEGIN');
    await raiser.query("UPDATE public.leasehold_fences SET token = 10 WHERE key = 'shared-1'");
    const fenced = withPostgresFence(shared, { key: 'shared-1', token: 5 }, async () => undefined).catch((e: unknown) => e);
    const pid = (shared as unknown as { processID: number }).processID;
    const waiting = async () =>
      (await watcher.query<{ w: string | null }>('SELECT wait_event_type AS w FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]?.w === 'Lock';
    while (!(await waiting())) await new Promise((r) => setImmediate(r));
    // Another request of the app, on the same client, writing something unrelated.
    const unrelated = shared.query("INSERT INTO shared_notes VALUES ('unrelated')");
    await raiser.query('COMMIT');
    const refused = await fenced;
    assert.ok(refused instanceof StaleTokenError, String(refused));
    await unrelated; // resolved: the app believes it written
    const notes = (await watcher.query<{ note: string }>('SELECT note FROM shared_notes')).rows.map((r) => r.note);
    // docs/fencing.md ("One client, several fenced writes at once") warns of exactly this.
    assert.deepEqual(notes, [], 'the unrelated write outlived the refused fenced transaction: docs/fencing.md no longer says what happens');
  });
});
