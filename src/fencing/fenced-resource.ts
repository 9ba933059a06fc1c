import type Database from 'better-sqlite3';
import { requireDriver } from '../backends/driver.js';
import { StaleTokenError, isLeaseholdError } from '../errors.js';
import { createSqliteFenceTable, withSqliteFence } from './sqlite-fence.js';

export interface FencedWrite {
  accepted: boolean;
  /** The highest token the resource had accepted before this write. */
  highest: number;
  reason: string;
}

export interface ResourceValue {
  value: string | null;
  writtenBy: string | null;
  fencingToken: number;
}

/** The demo's one fence key, in the default fence table of its file. */
const RESOURCE_KEY = 'resource';

/**
 * A protected resource that checks fencing tokens, as in the tutorial's step 6 (same table, so
 * its Python code can share the file). It remembers the highest token it has accepted and
 * rejects any lower one; equal is accepted (the same leader writing again in its term). It is
 * withSqliteFence's demo: the check and the write happen in one BEGIN IMMEDIATE transaction,
 * so two writers cannot both pass the check.
 *
 * This is where correctness comes from. The lease only makes it likely that one writer is
 * active; this check makes a stale writer harmless.
 */
export class FencedSqliteResource {
  private readonly db: Database.Database;

  constructor(path: string) {
    // Loaded here, not at import: `leasehold/fencing`'s readLeadership works without the driver.
    const Sqlite = requireDriver<typeof Database>('better-sqlite3', 'FencedSqliteResource');
    this.db = new Sqlite(path, { timeout: 5_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db
      .transaction(() => {
        this.db.exec(
          'CREATE TABLE IF NOT EXISTS resource (id INTEGER PRIMARY KEY CHECK (id = 1), value TEXT, written_by TEXT, fencing_token INTEGER NOT NULL DEFAULT 0)',
        );
        this.db.exec('INSERT OR IGNORE INTO resource (id, value, written_by, fencing_token) VALUES (1, NULL, NULL, 0)');
        // Every accepted write, in order: an audit trail (and what the chaos tests check).
        this.db.exec(
          'CREATE TABLE IF NOT EXISTS accepted_writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT, written_by TEXT, fencing_token INTEGER NOT NULL)',
        );
        createSqliteFenceTable(this.db);
      })
      .immediate();
  }

  /** Writes only if `token` ≥ the highest token accepted so far. */
  write(value: string, writtenBy: string, token: number): FencedWrite {
    // A RangeError, as before the fence helpers: no term of leasehold's has a token below 1.
    if (!Number.isSafeInteger(token) || token < 1) throw new RangeError(`fencing token must be a positive safe integer, got ${token}`);
    try {
      return withSqliteFence(this.db, { key: RESOURCE_KEY, token }, (): FencedWrite => {
        // The demo's own column is checked too: the tutorial's Python writer raises only that
        // one, and a file written before the fence table existed has its history only there.
        const { fencing_token: highest } = this.db.prepare('SELECT fencing_token FROM resource WHERE id = 1').get() as { fencing_token: number };
        if (token < highest) throw new StaleTokenError(token, highest, RESOURCE_KEY);
        this.db.prepare('UPDATE resource SET value = ?, written_by = ?, fencing_token = ? WHERE id = 1').run(value, writtenBy, token);
        this.db.prepare('INSERT INTO accepted_writes (value, written_by, fencing_token) VALUES (?, ?, ?)').run(value, writtenBy, token);
        return { accepted: true, highest, reason: `accepted with fencing token ${token}` };
      });
    } catch (err) {
      if (!isLeaseholdError(err, 'LEASEHOLD_ERR_STALE_TOKEN')) throw err;
      const { highest } = err as StaleTokenError;
      // The tutorial's wording: the demo has one row, so no key is named.
      return { accepted: false, highest, reason: new StaleTokenError(token, highest).message };
    }
  }

  /** Like write(), but throws StaleTokenError (LEASEHOLD_ERR_STALE_TOKEN) on rejection. */
  writeOrThrow(value: string, writtenBy: string, token: number): void {
    const r = this.write(value, writtenBy, token);
    if (!r.accepted) throw new StaleTokenError(token, r.highest);
  }

  read(): ResourceValue {
    const r = this.db.prepare('SELECT value, written_by, fencing_token FROM resource WHERE id = 1').get() as {
      value: string | null;
      written_by: string | null;
      fencing_token: number;
    };
    return { value: r.value, writtenBy: r.written_by, fencingToken: r.fencing_token };
  }

  /** Every accepted write, oldest first. */
  history(): { value: string | null; writtenBy: string | null; fencingToken: number }[] {
    return (
      this.db.prepare('SELECT value, written_by, fencing_token FROM accepted_writes ORDER BY seq').all() as {
        value: string | null;
        written_by: string | null;
        fencing_token: number;
      }[]
    ).map((r) => ({ value: r.value, writtenBy: r.written_by, fencingToken: r.fencing_token }));
  }

  close(): void {
    this.db.close();
  }
}
