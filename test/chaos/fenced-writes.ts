/**
 * The resource the shard chaos apps write to (test/chaos/shard-chaos.ts): a table of rows, each
 * written through the fence (withSqliteFence / withPostgresFence) in the same transaction as
 * the check, in the order they committed (`seq`). What the run is judged on is read back from
 * it, not from what the apps believe.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { createSqliteFenceTable, withSqliteFence } from '../../src/fencing/sqlite-fence.js';
import { createPostgresFenceTable, withPostgresFence } from '../../src/fencing/postgres-fence.js';
import type { FenceClaim } from '../../src/fencing/claim.js';
import type { WriteRow } from '../support/fenced-writes-judge.js';

/** The resource whose shards the apps write: keys `orders/shard/N`. */
export const RESOURCE = 'orders';

export interface FencedWrites {
  /** One row for `writer`, through the fence: StaleTokenError when `claim.token` is behind. */
  write(claim: FenceClaim, writer: string): Promise<void>;
  /** Every row, in commit order. */
  rows(): Promise<WriteRow[]>;
  /** Each key's highest token written so far. */
  highest(): Promise<Map<string, number>>;
  close(): Promise<void>;
}

/** Opens the resource (`target`: an SQLite file or a PostgreSQL URL); `create` makes its tables first. */
export async function openFencedWrites(store: 'sqlite' | 'postgres', target: string, create = false): Promise<FencedWrites> {
  if (store === 'sqlite') {
    const { default: Sqlite } = await import('better-sqlite3');
    const db: Database.Database = new Sqlite(target, { timeout: 5_000 });
    db.pragma('journal_mode = WAL');
    if (create) {
      createSqliteFenceTable(db);
      db.exec(
        'CREATE TABLE IF NOT EXISTS shard_writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, token INTEGER NOT NULL, writer TEXT NOT NULL)',
      );
    }
    return {
      write: async (claim, writer) => {
        withSqliteFence(db, claim, (tx) => tx.prepare('INSERT INTO shard_writes (key, token, writer) VALUES (?, ?, ?)').run(claim.key, claim.token, writer));
      },
      rows: async () => db.prepare('SELECT seq, key, token, writer FROM shard_writes ORDER BY seq').all() as WriteRow[],
      highest: async () =>
        new Map(
          (db.prepare('SELECT key, max(token) AS token FROM shard_writes GROUP BY key').all() as { key: string; token: number }[]).map((r) => [r.key, r.token]),
        ),
      close: async () => void db.close(),
    };
  }
  const { default: Pg } = await import('pg');
  const pool: pg.Pool = new Pg.Pool({ connectionString: target, max: 1 });
  pool.on('error', () => undefined); // a connection cut while idle; the next write reconnects
  if (create) {
    await createPostgresFenceTable(pool);
    await pool.query('CREATE TABLE IF NOT EXISTS shard_writes (seq bigserial PRIMARY KEY, key text NOT NULL, token bigint NOT NULL, writer text NOT NULL)');
  }
  return {
    write: async (claim, writer) => {
      await withPostgresFence(pool, claim, (tx) =>
        tx.query('INSERT INTO shard_writes (key, token, writer) VALUES ($1, $2, $3)', [claim.key, claim.token, writer]),
      );
    },
    rows: async () =>
      (await pool.query<{ seq: string; key: string; token: string; writer: string }>('SELECT seq, key, token, writer FROM shard_writes ORDER BY seq')).rows.map(
        (r) => ({
          seq: Number(r.seq),
          key: r.key,
          token: Number(r.token),
          writer: r.writer,
        }),
      ),
    highest: async () =>
      new Map(
        (await pool.query<{ key: string; token: string }>('SELECT key, max(token) AS token FROM shard_writes GROUP BY key')).rows.map((r) => [
          r.key,
          Number(r.token),
        ]),
      ),
    close: () => pool.end(),
  };
}
