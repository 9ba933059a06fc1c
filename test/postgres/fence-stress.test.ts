/**
 * The PostgreSQL fence under load (from the hostile review, issue 42): 16 writers on one key, each
 * sometimes raising the term and otherwise writing with the token it last had (stale once
 * another raised), under each isolation level, through withPostgresFence and through the SQL
 * function in the caller's own transaction. Each work reads the highest token whose work has
 * committed and records it: a work that sees a higher token than its own ran after a newer
 * term's write committed, which the fence exists to prevent. Asserted: no such work, and every
 * call ends (no hang); failures other than a stale token are counted and printed.
 */
import { it, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { createPostgresFenceTable, withPostgresFence, StaleTokenError, type PgClientBase } from '../../src/fencing/index.js';

const serverStarted = startPostgres();
let server: PostgresServer;
const clients: pg.Client[] = [];
const WRITERS = 16;
const ROUNDS = 15;

before(async () => {
  server = await serverStarted;
  const admin = await client();
  await createPostgresFenceTable(admin, { withFunction: true });
  await admin.query('CREATE TABLE stress_log (key text NOT NULL, token bigint NOT NULL, seen bigint NOT NULL)');
});
after(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await (await serverStarted).stop();
});

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: server.url() });
  c.on('error', () => {});
  await c.connect();
  clients.push(c);
  return c;
}

/** The work: what the highest committed token is as this write runs, and this write. */
const work = (key: string, token: number) => async (tx: PgClientBase) => {
  const seen = Number((await tx.query<{ m: string }>('SELECT coalesce(max(token), 0) AS m FROM stress_log WHERE key = $1', [key])).rows[0]!.m);
  await tx.query('INSERT INTO stress_log VALUES ($1, $2, $3)', [key, token, seen]);
};

type Level = 'read committed' | 'repeatable read' | 'serializable';

async function storm(fenced: (c: pg.Client, token: number) => Promise<void>): Promise<Record<string, number>> {
  const writers = await Promise.all(Array.from({ length: WRITERS }, () => client()));
  let term = 1;
  const outcomes: Record<string, number> = {};
  const count = (what: string): void => void (outcomes[what] = (outcomes[what] ?? 0) + 1);
  await Promise.all(
    writers.map(async (c, i) => {
      let mine = 1;
      for (let round = 0; round < ROUNDS; round++) {
        // Deterministic spread: about one call in six raises the term.
        if ((i * 7 + round * 3) % 6 === 0) mine = ++term;
        try {
          await fenced(c, mine);
          count('committed');
        } catch (e) {
          count(e instanceof StaleTokenError || (e as { code?: string }).code === 'LH409' ? 'stale' : String((e as { code?: string }).code ?? e));
          if ((e as { code?: string }).code === 'LH409' || e instanceof StaleTokenError) mine = term;
        }
      }
    }),
  );
  return outcomes;
}

async function violations(key: string): Promise<{ token: number; seen: number }[]> {
  const admin = clients[0]!;
  return (
    await admin.query<{ token: number; seen: number }>('SELECT token::int AS token, seen::int AS seen FROM stress_log WHERE key = $1 AND seen > token', [key])
  ).rows;
}

describe('16 writers and raises on one key', () => {
  for (const level of ['read committed', 'repeatable read', 'serializable'] as Level[]) {
    it(`withPostgresFence, ${level}: no work runs after a newer term's work committed`, { timeout: 120_000 }, async () => {
      const key = `lib ${level}`;
      const outcomes = await storm((c, token) => withPostgresFence(c, { key, token }, work(key, token), { isolationLevel: level }));
      console.log(`withPostgresFence ${level}: ${JSON.stringify(outcomes)}`);
      assert.deepEqual(await violations(key), []);
      assert.ok((outcomes.committed ?? 0) > 0);
    });
    it(`SQL function in the caller's transaction, ${level}: no work runs after a newer term's work committed`, { timeout: 120_000 }, async () => {
      const key = `sql ${level}`;
      const outcomes = await storm(async (c, token) => {
        await c.query(`BEGIN ISOLATION LEVEL ${level.toUpperCase()}`);
        try {
          await c.query('SELECT public.leasehold_fence($1, $2)', [key, token]);
          await work(key, token)(c);
          await c.query('COMMIT');
        } catch (e) {
          await c.query('ROLLBACK');
          throw e;
        }
      });
      console.log(`leasehold_fence ${level}: ${JSON.stringify(outcomes)}`);
      assert.deepEqual(await violations(key), []);
      assert.ok((outcomes.committed ?? 0) > 0);
    });
  }
});
