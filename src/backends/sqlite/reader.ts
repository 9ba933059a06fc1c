import Database from 'better-sqlite3';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { StoreOpenError, describeError } from '../../errors.js';
import { hasLeaseVersions } from './lease-version.js';
import { selectRowSql, type RowColumns } from './row-select.js';
import { foreignLog } from './wal-owner.js';
import { refuseMountPoint } from './file-identity.js';

// How a read-only tool (`leasehold status`, its --watch) reads the file: one connection per
// read, closed at once. A connection held open keeps the database's -wal and -shm alive after
// the last candidate exits (the last connection to close is the one that copies the log into
// the file and deletes it): a database then moved over the path would be read through the old
// log, and the old log copied into it.

/** Bytes of a database file a user who can create neither its -wal nor its -shm may read into memory. */
export const MAX_COPY_BYTES = 64 * 1024 * 1024;

export interface ReadResult<T> {
  value: T;
  columns: RowColumns;
}

/**
 * Opens `path`, runs `read` with the bounded SELECT (row-select.ts), and closes it. The
 * connection is opened for writing when the user may (query_only: no statement can write):
 * closed last, it does what the last candidate would have done, copying the log into the file
 * and deleting it, where a read-only connection would leave them. A user who may not write the
 * file gets a read-only one. A user who cannot create the -wal and -shm either (another user's
 * directory, no candidate running) reads a copy of the file when there is no -wal: then the file
 * holds every commit.
 */
export function readOnce<T>(path: string, busyTimeoutMs: number, read: (select: Database.Statement<[string]>, columns: RowColumns) => T): ReadResult<T> {
  return readConnection(path, busyTimeoutMs, (db) => readWith(path, db, read));
}

/**
 * Opens `path` for one read as readOnce does (the same connection, or the same copy), runs `use`
 * on it, and closes it: for what a reader reads besides a lease (the group records).
 */
export function readConnection<T>(path: string, busyTimeoutMs: number, use: (db: Database.Database) => T): T {
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
    return use(db);
  } catch (err) {
    if (!/^SQLITE_(READONLY|CANTOPEN)/.test((err as { code?: string }).code ?? '')) throw err;
    db.close();
    return readCopy(path, err, use);
  } finally {
    if (db.open) db.close();
  }
}

function readWith<T>(path: string, db: Database.Database, read: (select: Database.Statement<[string]>, columns: RowColumns) => T): ReadResult<T> {
  const names = (db.prepare('PRAGMA table_info(leases)').all() as { name: string }[]).map((c) => c.name);
  if (names.length === 0) throw new StoreOpenError(`cannot prepare SQLite lease store ${path}: it has no leases table`, { field: 'db' });
  const columns = {
    hasAcquireTime: names.includes('acquire_time'),
    hasSuccessor: names.includes('successor'),
    hasWriteVersion: hasLeaseVersions(db),
  };
  return { value: read(db.prepare(selectRowSql(columns)), columns), columns };
}

/**
 * A WAL database whose -wal and -shm this user can neither find nor create: SQLite cannot open
 * it in place. With no -wal beside it, the file holds every commit, so a copy of it, unchanged
 * while it was read, is the database. Otherwise the line says what this user lacks.
 */
function readCopy<T>(path: string, cause: unknown, use: (db: Database.Database) => T): T {
  const cannot = (why: string) =>
    new StoreOpenError(
      `cannot read SQLite lease store ${path} as this user: ${why} (SQLite: ${describeError(cause)}). Run status as a user who may create files in its directory, or while a candidate has it open`,
      { cause, field: 'db' },
    );
  if (existsSync(`${path}-wal`)) throw cannot(`its -wal holds commits not yet in the file, and reading them needs a -shm this user cannot create or write`);
  const before = statSync(path, { bigint: true });
  if (before.size > MAX_COPY_BYTES)
    throw cannot(`it is ${before.size} bytes, over the ${MAX_COPY_BYTES} bytes read into memory when its -wal and -shm cannot be created`);
  const image = readBounded(path, Number(before.size));
  const after = statSync(path, { bigint: true });
  if (existsSync(`${path}-wal`) || after.ctimeNs !== before.ctimeNs || after.size !== before.size) {
    throw cannot('a candidate opened it while it was read, and its -wal and -shm cannot be shared by this user');
  }
  // The copy is read in memory: marked as a rollback-journal database, it needs no -wal or -shm.
  if (image.length > 19) image[18] = image[19] = 1;
  const db = new Database(image, { readonly: true });
  try {
    return use(db);
  } finally {
    db.close();
  }
}

function readBounded(path: string, size: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, buf, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
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
