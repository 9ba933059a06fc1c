/**
 * The two stores the fenced-register writers (fenced-writer.mjs) write through, behind one
 * shape, so that one writer loop records both: `write(key, token, value)` resolves to
 * 'accepted', 'refused' (the fence said the token is stale) or 'unknown', and `read(key)` to
 * the key's value and fence token as one snapshot.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { withPostgresFence, withSqliteFence } from '../../dist/src/fencing/index.js';

const STALE = 'LEASEHOLD_ERR_STALE_TOKEN';

/** SQLite: the file at `path`, written by withSqliteFence. */
export function openSqliteStore(path) {
  const db = new Database(path, { timeout: 10_000 });
  const upsert = db.prepare('INSERT INTO fenced_value (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
  const readValue = db.prepare('SELECT value FROM fenced_value WHERE key = ?');
  const readFence = db.prepare('SELECT token FROM leasehold_fences WHERE key = ?');
  const readBoth = db.transaction((key) => ({ value: readValue.get(key)?.value ?? '', token: readFence.get(key)?.token ?? 0 }));
  return {
    async write(key, token, value) {
      try {
        withSqliteFence(db, { key, token }, () => upsert.run(key, value));
        return 'accepted';
      } catch (err) {
        // Anything but a refusal (a busy timeout): recorded as unknown, the claim that is surely true.
        return err?.code === STALE ? 'refused' : 'unknown';
      }
    },
    async read(key) {
      return readBoth(key);
    },
    async close() {
      db.close();
    },
  };
}

/** PostgreSQL: the database at `url`, written by withPostgresFence at its default isolation (read committed). */
export function openPostgresStore(url) {
  // One connection: a writer is one client, as an app's leader would be.
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => {}); // an idle connection cut: the next query reports it
  return {
    async write(key, token, value) {
      try {
        await withPostgresFence(pool, { key, token }, (tx) =>
          tx.query('INSERT INTO fenced_value (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value', [key, value]),
        );
        return 'accepted';
      } catch (err) {
        if (err?.code === STALE) return 'refused';
        // Anything else is recorded as unknown. A connection error or a failed COMMIT may have
        // committed. A serialization failure (40001) or a deadlock (40P01) certainly rolled back,
        // so nothing was written, but it is no refusal: the model's "refused" says the token
        // was behind the highest accepted, which the database did not say. "Unknown" lets the
        // checker take it as not having happened, which is true, without claiming more.
        return 'unknown';
      }
    },
    async read(key) {
      // One statement, one snapshot (read committed takes it per statement): value and token together.
      const r = await pool.query(
        'SELECT (SELECT value FROM fenced_value WHERE key = $1) AS value, (SELECT token FROM leasehold_fences WHERE key = $1) AS token',
        [key],
      );
      return { value: r.rows[0].value ?? '', token: Number(r.rows[0].token ?? 0) };
    },
    async close() {
      await pool.end();
    },
  };
}
