/**
 * What withPostgresFence sends, on a real PostgreSQL: the round trips of a fenced write (the
 * protocol's ReadyForQuery messages, one per round trip) against the same write in a
 * transaction of its own; and where the fence is, whatever the caller's search_path: a
 * look-alike fence table in a schema earlier on it, or a temporary one, never takes the check,
 * neither withPostgresFence's nor the SQL function's.
 */
import { it, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { createPostgresFenceTable, postgresFenceDdl, withPostgresFence, StaleTokenError, type PgClientBase } from '../../src/fencing/index.js';

const serverStarted = startPostgres();
let server: PostgresServer;
const clients: pg.Client[] = [];

before(async () => {
  server = await serverStarted;
  const admin = await client();
  await createPostgresFenceTable(admin, { withFunction: true });
  await admin.query('CREATE TABLE protocol_data (id int PRIMARY KEY, value bigint NOT NULL)');
  await admin.query('INSERT INTO protocol_data VALUES (1, 0)');
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

/** Round trips of `run` on `c`: the server ends each with one ReadyForQuery. */
async function roundTrips(c: pg.Client, run: () => Promise<unknown>): Promise<number> {
  const connection = (c as unknown as { connection: NodeJS.EventEmitter }).connection;
  let n = 0;
  const count = (): void => void n++;
  connection.on('readyForQuery', count);
  try {
    await run().catch(() => undefined);
    return n;
  } finally {
    connection.off('readyForQuery', count);
  }
}

const update = (value: number) => (tx: PgClientBase) => tx.query('UPDATE protocol_data SET value = $1 WHERE id = 1', [value]);

describe('withPostgresFence round trips', () => {
  it("a write of the fence's term costs the round trips of the same write in a transaction: BEGIN and the check go together", async () => {
    const c = await client();
    const inTransaction = await roundTrips(c, async () => {
      await c.query('BEGIN');
      await update(1)(c);
      await c.query('COMMIT');
    });
    assert.equal(inTransaction, 3);
    // A write finding the fence at its token (every write of a term but its first): the same.
    // The key's first write (which inserts its row) and a new term's (which raises it): one
    // more, the ROLLBACK of the share-locked read sent with the check that raises the row.
    for (const [token, trips] of [
      [4, inTransaction + 1],
      [4, inTransaction],
      [5, inTransaction + 1],
      [5, inTransaction],
    ] as const) {
      assert.equal(await roundTrips(c, () => withPostgresFence(c, { key: 'trips', token }, update(token))), trips, `token ${token}`);
    }
    for (const isolationLevel of ['read committed', 'repeatable read', 'serializable'] as const) {
      assert.equal(await roundTrips(c, () => withPostgresFence(c, { key: 'trips', token: 5 }, update(5), { isolationLevel })), inTransaction, isolationLevel);
    }
    assert.equal((await c.query<{ value: number }>('SELECT value::int AS value FROM protocol_data')).rows[0]!.value, 5);
    // Refused: the check (which read the highest token), the ROLLBACK; the work never sent.
    let stale: unknown;
    const refused = await roundTrips(c, () => withPostgresFence(c, { key: 'trips', token: 3 }, update(3)).catch((e: unknown) => (stale = e)));
    assert.ok(stale instanceof StaleTokenError && stale.highest === 5, String(stale));
    assert.equal(refused, 2);
    assert.equal((await c.query<{ value: number }>('SELECT value::int AS value FROM protocol_data')).rows[0]!.value, 5);
  });

  it('a key with quotes and backslashes goes as one escaped literal, the same key the SQL function sees', async () => {
    const c = await client();
    const key = String.raw`it's \'; DROP TABLE protocol_data; --\x`;
    await withPostgresFence(c, { key, token: 2 }, update(2));
    assert.deepEqual((await c.query('SELECT token::int FROM leasehold_fences WHERE key = $1', [key])).rows, [{ token: 2 }]);
    await assert.rejects(c.query('SELECT public.leasehold_fence($1, 1)', [key]), (e: pg.DatabaseError) => e.code === 'LH409');
    assert.equal((await c.query<{ ok: boolean }>("SELECT to_regclass('public.protocol_data') IS NOT NULL AS ok")).rows[0]!.ok, true);
  });
});

describe('withPostgresFence locks', () => {
  it('writers of one term share the fence row: one does not wait for another to commit; a raise waits for both', { timeout: 60_000 }, async () => {
    const [a, b, c, watcher] = [await client(), await client(), await client(), await client()];
    await watcher.query('CREATE TABLE shared_writes (key text NOT NULL, label text NOT NULL)');
    const write = (key: string, label: string) => (tx: PgClientBase) => tx.query('INSERT INTO shared_writes VALUES ($1, $2)', [key, label]);
    for (const isolationLevel of ['read committed', 'repeatable read', 'serializable'] as const) {
      const key = `shared ${isolationLevel}`;
      await withPostgresFence(a, { key, token: 5 }, write(key, 'first'));
      let inWork!: () => void;
      let release!: () => void;
      const started = new Promise<void>((r) => (inWork = r));
      const released = new Promise<void>((r) => (release = r));
      const open = withPostgresFence(
        a,
        { key, token: 5 },
        async (tx) => {
          await write(key, 'a, held open')(tx);
          inWork();
          await released;
        },
        { isolationLevel },
      );
      await started;
      // The same term on another connection: done while A's transaction is still open.
      await withPostgresFence(b, { key, token: 5 }, write(key, 'b, same term'), { isolationLevel });
      // A new term: its raise waits for A's commit.
      let raised = false;
      const raise = withPostgresFence(c, { key, token: 6 }, write(key, 'c, new term'), { isolationLevel }).then(() => (raised = true));
      const waitsOnLock = async () =>
        (
          await watcher.query<{ w: string | null }>('SELECT wait_event_type AS w FROM pg_stat_activity WHERE pid = $1', [
            (c as unknown as { processID: number }).processID,
          ])
        ).rows[0]?.w === 'Lock';
      while (!(await waitsOnLock())) await new Promise((r) => setImmediate(r));
      assert.equal(raised, false, isolationLevel);
      release();
      await open;
      await raise;
      await assert.rejects(withPostgresFence(b, { key, token: 5 }, write(key, 'b, stale')), (e: unknown) => e instanceof StaleTokenError && e.highest === 6);
      const labels = (await watcher.query<{ label: string }>('SELECT label FROM shared_writes WHERE key = $1', [key])).rows.map((r) => r.label);
      assert.deepEqual(labels.sort(), ['a, held open', 'b, same term', 'c, new term', 'first'], isolationLevel);
    }
  });
});

describe('the SQL function locks', () => {
  it('callers of one term share the fence row in their own transactions; a raise waits for them', { timeout: 60_000 }, async () => {
    const [a, b, c, watcher] = [await client(), await client(), await client(), await client()];
    const fence = (tx: pg.Client, token: number) => tx.query('SELECT public.leasehold_fence($1, $2)', ['sql shared', token]);
    await fence(a, 5);
    await a.query('BEGIN');
    await fence(a, 5);
    // Another caller of the same term: through while A's transaction is open.
    await b.query('BEGIN');
    await fence(b, 5);
    await b.query('COMMIT');
    await c.query('BEGIN');
    let raised = false;
    const raise = fence(c, 6).then(() => (raised = true));
    const waitsOnLock = async () =>
      (
        await watcher.query<{ w: string | null }>('SELECT wait_event_type AS w FROM pg_stat_activity WHERE pid = $1', [
          (c as unknown as { processID: number }).processID,
        ])
      ).rows[0]?.w === 'Lock';
    while (!(await waitsOnLock())) await new Promise((r) => setImmediate(r));
    assert.equal(raised, false);
    await a.query('COMMIT');
    await raise;
    await c.query('COMMIT');
    await b.query('BEGIN');
    await assert.rejects(fence(b, 5), (e: pg.DatabaseError) => e.code === 'LH409' && /behind the highest token accepted for it \(6\)/.test(e.message));
    await b.query('ROLLBACK');
  });
});

describe('the fence is in its own schema, whatever the search_path', () => {
  it('a look-alike table in a schema earlier on the search_path, or a temporary one, does not take the check', async () => {
    const owner = await client();
    await withPostgresFence(owner, { key: 'placed', token: 9 }, update(9));
    // The look-alikes, empty: a check that used one would accept any token.
    await owner.query('CREATE SCHEMA lookalike');
    await owner.query(postgresFenceDdl({ table: 'lookalike.leasehold_fences' }));
    const earlier = await client({ options: '-c search_path=lookalike,public' });
    assert.equal((await earlier.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s, 'lookalike');
    const temporary = await client();
    await temporary.query(
      'CREATE TEMPORARY TABLE leasehold_fences (key text PRIMARY KEY, token bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())',
    );
    for (const [name, c] of [
      ['an earlier schema', earlier],
      ['a temporary table', temporary],
    ] as const) {
      let ran = false;
      await assert.rejects(
        withPostgresFence(c, { key: 'placed', token: 5 }, async () => void (ran = true)),
        (e: unknown) => e instanceof StaleTokenError && e.highest === 9,
        name,
      );
      assert.equal(ran, false, name);
      await c.query('BEGIN');
      await assert.rejects(c.query("SELECT public.leasehold_fence('placed', 5)"), (e: pg.DatabaseError) => e.code === 'LH409', name);
      await c.query('ROLLBACK');
    }
    assert.equal((await owner.query<{ n: number }>('SELECT count(*)::int AS n FROM lookalike.leasehold_fences')).rows[0]!.n, 0);
    assert.equal((await temporary.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_temp.leasehold_fences')).rows[0]!.n, 0);
    assert.deepEqual((await owner.query("SELECT token::int FROM public.leasehold_fences WHERE key = 'placed'")).rows, [{ token: 9 }]);
  });
});
