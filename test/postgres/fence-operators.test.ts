/**
 * withPostgresFence's check names its operators and functions in pg_catalog
 * (`OPERATOR(pg_catalog.=)`, `pg_catalog.now()`): unqualified, they were resolved on the
 * caller's search_path, and a schema listed before pg_catalog with a look-alike `=` let a stale
 * token's work commit. The SQL function (SET search_path = pg_catalog, pg_temp) was never fooled.
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
  await admin.query('CREATE TABLE fenced_work (label text NOT NULL)');
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

async function labels(c: pg.Client): Promise<string[]> {
  return (await c.query<{ label: string }>('SELECT label FROM fenced_work ORDER BY label')).rows.map((r) => r.label);
}

describe('withPostgresFence and names resolved on the search_path', () => {
  it("a look-alike `=` in a schema before pg_catalog does not let a stale token's work commit", async () => {
    const owner = await client();
    await withPostgresFence(owner, { key: 'low', token: 1 }, async () => undefined);
    await withPostgresFence(owner, { key: 'victim-3', token: 9 }, async () => undefined);
    await owner.query('CREATE SCHEMA opshadow');
    // Every text comparison made on this path is answered as if the key were 'low'.
    await owner.query("CREATE FUNCTION opshadow.eq_low(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$ SELECT $1 OPERATOR(pg_catalog.=) 'low' $$");
    await owner.query('CREATE OPERATOR opshadow.= (LEFTARG = text, RIGHTARG = text, FUNCTION = opshadow.eq_low)');
    const shadowed = await client({ options: '-c search_path=opshadow,pg_catalog,public' });
    // The SQL function pins its own search_path: refused, as it should be.
    await shadowed.query('BEGIN');
    await assert.rejects(shadowed.query("SELECT public.leasehold_fence('victim-3', 1)"), (e: pg.DatabaseError) => e.code === 'LH409');
    await shadowed.query('ROLLBACK');
    let outcome: unknown = 'committed';
    await withPostgresFence(shadowed, { key: 'victim-3', token: 1 }, (tx) => tx.query("INSERT INTO public.fenced_work VALUES ('stale via operator')")).catch(
      (e: unknown) => (outcome = e),
    );
    assert.ok(outcome instanceof StaleTokenError && outcome.highest === 9, `token 1 under a fence at 9: ${String(outcome)}`);
    assert.deepEqual(
      (await labels(owner)).filter((l) => l === 'stale via operator'),
      [],
    );
  });
});
