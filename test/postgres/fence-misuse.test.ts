/**
 * withPostgresFence used the wrong way on a real PostgreSQL, and what it must still promise: a
 * caller's client shared by two fenced writes at once (one BEGIN, the first COMMIT ending both),
 * a client already inside the caller's transaction, a work that ends the transaction itself or
 * goes on after a failed statement, and a pool client whose backend is killed while the work
 * waits. Each is refused or reported, never a stale write or a success that did not commit.
 */
import { it, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { createPostgresFenceTable, withPostgresFence, type PgClientBase } from '../../src/fencing/index.js';
import { LeaseholdError } from '../../src/errors.js';

const serverStarted = startPostgres();
let server: PostgresServer;
let pool: pg.Pool;
const clients: pg.Client[] = [];

before(async () => {
  server = await serverStarted;
  pool = new pg.Pool({ connectionString: server.url(), max: 8 });
  pool.on('error', () => {});
  await createPostgresFenceTable(pool);
  await pool.query('CREATE TABLE misuse_data (seq bigserial PRIMARY KEY, key text NOT NULL, label text NOT NULL)');
});
after(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await pool?.end();
  await (await serverStarted).stop();
});

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server.url() });
  c.on('error', () => {});
  await c.connect();
  clients.push(c);
  return c;
}
const insert = (key: string, label: string) => (tx: PgClientBase) => tx.query('INSERT INTO misuse_data (key, label) VALUES ($1, $2)', [key, label]);
const labels = async (key: string) =>
  (await pool.query<{ label: string }>('SELECT label FROM misuse_data WHERE key = $1 ORDER BY seq', [key])).rows.map((r) => r.label);
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: unknown) => (err instanceof LeaseholdError ? err.code : String(err)),
  );
async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setImmediate(resolve));
}

describe('withPostgresFence misused', () => {
  it('two fenced writes on one client at once run one after another: a newer writer waits, the old one never writes after it', async () => {
    const c = await client();
    const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await withPostgresFence(pool, { key: 'shared', token: 5 }, async () => undefined);
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let started!: () => void;
    const aStarted = new Promise<void>((resolve) => (started = resolve));
    const a = outcome(
      withPostgresFence(c, { key: 'shared', token: 5 }, async (tx) => {
        started();
        await gate;
        await insert('shared', 'old')(tx);
      }),
    );
    await aStarted;
    // A second write on the same client; before the fix its COMMIT ended the first's transaction.
    const b = outcome(withPostgresFence(c, { key: 'shared', token: 5 }, async () => undefined));
    let newerDone = false;
    const newer = outcome(withPostgresFence(pool, { key: 'shared', token: 6 }, insert('shared', 'newer'))).finally(() => (newerDone = true));
    await until(async () => {
      if (newerDone) return true;
      const blocked = await pool.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))', [pid]);
      return blocked.rowCount! > 0;
    });
    openGate();
    assert.equal(await a, 'ok');
    assert.equal(await newer, 'ok');
    await b;
    assert.deepEqual(await labels('shared'), ['old', 'newer']);
  });

  it('a client already inside the caller’s transaction is refused, and the caller’s transaction is left to the caller', async () => {
    const c = await client();
    await c.query('BEGIN');
    await insert('outer', 'outer')(c);
    await assert.rejects(
      withPostgresFence(c, { key: 'outer', token: 1 }, async () => undefined),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'LEASEHOLD_ERR_INVALID_CONFIG');
        assert.match(err.message, /already inside a transaction/);
        assert.doesNotMatch(err.message, /\n/);
        return true;
      },
    );
    await c.query('ROLLBACK');
    assert.deepEqual(await labels('outer'), []);
  });

  it('withPostgresFence called again inside its own work on the same client is refused, not left waiting', async () => {
    const c = await client();
    const inner = await withPostgresFence(c, { key: 'nested', token: 1 }, (tx) =>
      outcome(withPostgresFence(tx as pg.Client, { key: 'nested', token: 1 }, insert('nested', 'inner'))),
    );
    assert.equal(inner, 'LEASEHOLD_ERR_INVALID_CONFIG');
    assert.deepEqual(await labels('nested'), []);
  });

  it('a work that ends the transaction itself is reported, not a success', async () => {
    for (const end of ['COMMIT', 'ROLLBACK']) {
      const result = outcome(
        withPostgresFence(pool, { key: `ends-${end}`, token: 1 }, async (tx) => {
          await tx.query(end);
        }),
      );
      assert.equal(await result, 'LEASEHOLD_ERR_INVALID_CONFIG', end);
    }
  });

  it('a work that catches a failed statement and goes on is reported: its COMMIT was a rollback', async () => {
    const result = outcome(
      withPostgresFence(pool, { key: 'swallowed', token: 1 }, async (tx) => {
        await insert('swallowed', 'lost')(tx);
        await tx.query('SELECT 1/0').catch(() => undefined);
      }),
    );
    assert.equal(await result, 'LEASEHOLD_ERR_INVALID_CONFIG');
    assert.deepEqual(await labels('swallowed'), []);
  });

  it('a pool client whose backend is killed while the work waits fails the write, not the process', async () => {
    const result = outcome(
      withPostgresFence(pool, { key: 'killed', token: 1 }, async (tx) => {
        await insert('killed', 'lost')(tx);
        const pid = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        server.sql(`SELECT pg_terminate_backend(${pid})`);
        // The connection's end arrives while no query is running: the client emits 'error' (node-postgres sets _ended first).
        await until(async () => (tx as unknown as { _ended: boolean })._ended);
      }),
    );
    assert.notEqual(await result, 'ok');
    assert.deepEqual(await labels('killed'), []);
    assert.equal((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one, 1);
  });
});
