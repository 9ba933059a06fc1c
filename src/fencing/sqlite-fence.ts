/**
 * The fenced transaction for SQLite (better-sqlite3): the check of the writer's token and the
 * writer's own statements in one BEGIN IMMEDIATE transaction, so no other writer of the file can
 * pass the check between them, and a refused or failed write leaves nothing behind.
 */
import type Database from 'better-sqlite3';
import { InvalidConfigError, StaleTokenError } from '../errors.js';
import { checkClaim, type FenceClaim } from './claim.js';
import { sqliteFenceTable } from './fence-table.js';

export type SqliteDatabase = Database.Database;

export interface SqliteFenceOptions {
  /** The fence table (default `leasehold_fences`): a lowercase SQL identifier. */
  table?: string;
}

/** The fence table's DDL: one row per key, the highest token accepted for it. */
export function sqliteFenceDdl(options?: SqliteFenceOptions): string {
  const table = sqliteFenceTable(options?.table);
  return `CREATE TABLE IF NOT EXISTS ${table} (
  key TEXT PRIMARY KEY NOT NULL,
  token INTEGER NOT NULL CHECK (token >= 1),
  updated_at TEXT NOT NULL
)`;
}

/** Creates the fence table if it is absent (on request only: withSqliteFence never creates it). */
export function createSqliteFenceTable(db: SqliteDatabase, options?: SqliteFenceOptions): void {
  db.exec(sqliteFenceDdl(options));
}

const WORK_RULE = 'must be synchronous: better-sqlite3 runs a transaction on one thread, and work after an await would run outside it';

/**
 * Runs `work(db)` in one BEGIN IMMEDIATE transaction with the fence check: a token below the
 * highest accepted for the key is refused with StaleTokenError (LEASEHOLD_ERR_STALE_TOKEN)
 * before the work runs; an equal one is accepted, a higher one raises the fence. If the work
 * throws, everything rolls back, the fence included, and the error is rethrown.
 *
 * Called inside a transaction the caller already opened, better-sqlite3 makes this a savepoint
 * of it: the check then holds only as long as the caller's transaction commits what it did.
 */
export function withSqliteFence<T>(db: SqliteDatabase, claim: FenceClaim, work: (db: SqliteDatabase) => T, options?: SqliteFenceOptions): T {
  const { key, token } = checkClaim(claim);
  const table = sqliteFenceTable(options?.table);
  if (typeof work !== 'function')
    throw new InvalidConfigError(`invalid fenced work: ${typeof work}, not a function`, { field: 'work', rule: 'must be a function' });
  return fenceStatements(db, table).fencedTransaction.immediate(key, token, work) as T;
}

/**
 * The fence's read-only check: a token below the highest accepted for the key is refused with
 * StaleTokenError, anything else passes; nothing is written. An early answer only (the HTTP
 * wrapper's, before it reads a body): the write itself must still go through withSqliteFence,
 * which checks again and is the one that raises the fence.
 */
export function checkSqliteFence(db: SqliteDatabase, claim: FenceClaim, options?: SqliteFenceOptions): void {
  const { key, token } = checkClaim(claim);
  const table = sqliteFenceTable(options?.table);
  const statements = fenceStatements(db, table);
  const row = onTable(table, () => statements.select.get(key)) as { token: number } | undefined;
  if (row !== undefined && token < row.token) throw new StaleTokenError(token, row.token, key);
}

interface FenceStatements {
  select: Database.Statement;
  fencedTransaction: Database.Transaction<(key: string, token: number, work: (db: SqliteDatabase) => unknown) => unknown>;
}

/**
 * Prepared once per connection and table, not per write: preparing is the dearest part of a
 * one-row check, and under many writers it was done while holding the file's write lock.
 */
const preparedFences = new WeakMap<SqliteDatabase, Map<string, FenceStatements>>();

function fenceStatements(db: SqliteDatabase, table: string): FenceStatements {
  let byTable = preparedFences.get(db);
  if (byTable === undefined) preparedFences.set(db, (byTable = new Map<string, FenceStatements>()));
  const known = byTable.get(table);
  if (known !== undefined) return known;
  // Qualified with its schema: unqualified, SQLite looks in temp before main, and a temporary
  // table of the same name on this connection would take the check (a stale token would commit).
  const inMain = `main.${table}`;
  const select = prepareOnTable(db, table, `SELECT token FROM ${inMain} WHERE key = ?`);
  const upsert = prepareOnTable(
    db,
    table,
    `INSERT INTO ${inMain} (key, token, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET token = excluded.token, updated_at = excluded.updated_at`,
  );
  const fencedTransaction = db.transaction((key: string, token: number, work: (db: SqliteDatabase) => unknown): unknown => {
    const row = onTable(table, () => select.get(key)) as { token: number } | undefined;
    if (row !== undefined && token < row.token) throw new StaleTokenError(token, row.token, key);
    // An equal token (the same term writing again) changes nothing: no write to the fence row.
    if (row === undefined || token > row.token) upsert.run(key, token, new Date().toISOString());
    const result = work(db);
    if (isThenable(result)) {
      // Rolled back by the throw; the promise's own failure is not left unhandled.
      Promise.resolve(result).catch(() => undefined);
      throw new InvalidConfigError(`the fenced work returned a Promise: it ${WORK_RULE}; nothing was committed`, { field: 'work', rule: WORK_RULE });
    }
    // The work ran COMMIT or ROLLBACK itself: what it ran after that had no fence around it.
    if (!db.inTransaction) {
      const rule = 'must not end the transaction itself (COMMIT, ROLLBACK): statements after that run outside the fence';
      throw new InvalidConfigError(`the fenced work ended its transaction, and what it ran after that may have committed unfenced: it ${rule}`, {
        field: 'work',
        rule,
      });
    }
    return result;
  });
  const statements = { select, fencedTransaction };
  byTable.set(table, statements);
  return statements;
}

function prepareOnTable(db: SqliteDatabase, table: string, sql: string): Database.Statement {
  return onTable(table, () => db.prepare(sql));
}

/** Runs `use`, naming a missing fence table: never created silently, where the fence lives is the caller's schema. */
function onTable<T>(table: string, use: () => T): T {
  try {
    return use();
  } catch (err) {
    if (err instanceof Error && /^no such table/.test(err.message)) {
      const rule = 'must exist: create it with createSqliteFenceTable(db) or its DDL (docs/fencing.md)';
      throw new InvalidConfigError(`the fence table ${table} ${rule}`, { field: 'table', rule, cause: err });
    }
    throw err;
  }
}

function isThenable(value: unknown): boolean {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
