import Database from 'better-sqlite3';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { StoreOpenError, describeError } from '../errors.js';
import { selectRowSql, type RowColumns } from './sqlite-row-select.js';
import { foreignLog } from './sqlite-wal-owner.js';
import { refuseMountPoint } from './sqlite-file-identity.js';

// How a read-only tool (`leasehold status`, its --watch) reads the file: one connection per
// read, closed at once. A connection held open keeps the database's -wal and -shm alive after
// the last candidate exits (the last connection to close is the one that copies the log into
// the file and deletes it): a database then moved over the path would be read through the old
// log, and the old log copied into it.

export interface ReadResult<T> {
  value: T;
  columns: RowColumns;
}

/**
 * Opens `path`, runs `read` with the bounded SELECT (sqlite-row-select.ts), and closes it. The
 * connection is opened for writing when the user may (query_only: no statement can write):
 * closed last, it does what the last candidate would have done, copying the log into the file
 * and deleting it, where a read-only connection would leave them. A user who may not write the file gets a read-only one.
 */
export function readOnce<T>(path: string, busyTimeoutMs: number, read: (select: Database.Statement<[string]>, columns: RowColumns) => T): ReadResult<T> {
  refuseMountPoint(path);
  const foreign = foreignLog(path);
  if (foreign) throw new StoreOpenError(`the database file ${path}: ${foreign}`, { field: 'db' });
  let db: Database.Database;
  try {
    db = new Database(path, { timeout: busyTimeoutMs, fileMustExist: true });
  } catch (err) {
    throw new StoreOpenError(`cannot open SQLite lease store ${path}: ${describeError(err)}`, { cause: err, field: 'db' });
  }
  try {
    db.pragma('query_only = 1');
    return readWith(path, db, read);
  } finally {
    if (db.open) db.close();
  }
}

function readWith<T>(path: string, db: Database.Database, read: (select: Database.Statement<[string]>, columns: RowColumns) => T): ReadResult<T> {
  const names = (db.prepare('PRAGMA table_info(leases)').all() as { name: string }[]).map((c) => c.name);
  if (names.length === 0) throw new StoreOpenError(`cannot prepare SQLite lease store ${path}: it has no leases table`, { field: 'db' });
  const columns = { hasAcquireTime: names.includes('acquire_time'), hasSuccessor: names.includes('successor') };
  return { value: read(db.prepare(selectRowSql(columns)), columns), columns };
}

/**
 * A mark that changes when another process commits to the file: the database file's device and
 * inode, and the WAL index header at the start of the -shm, which every commit and checkpoint
 * rewrites. Read without opening the database (no connection stays open between reads) and
 * without stat'ing the -wal.
 */
export function changeMark(path: string): string {
  let main = '-';
  try {
    const st = statSync(path);
    main = `${st.dev}:${st.ino}:${st.size}`;
  } catch {
    // absent: the mark says so
  }
  let shm = '-';
  try {
    const fd = openSync(`${path}-shm`, 'r');
    try {
      const header = Buffer.alloc(48);
      shm = header.subarray(0, readSync(fd, header, 0, 48, 0)).toString('hex');
    } finally {
      closeSync(fd);
    }
  } catch {
    // no -shm: no process has the file open in WAL mode
  }
  return `${main}/${shm}`;
}
