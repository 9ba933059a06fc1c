import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { StoreOpenError } from '../errors.js';

// Kept apart from sqlite-store.ts so the CLI can check --db before loading the native module
// (and a kubernetes sidecar never loads it at all).

const SQLITE_HEADER = 'SQLite format 3\0';

/** Throws StoreOpenError unless `path` is absent, empty, or starts with the SQLite header. Reads only. */
export function checkSqliteFile(path: string): void {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new StoreOpenError(`--db ${path} is not a regular file`);
    size = st.size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    if (err instanceof StoreOpenError) throw err;
    throw new StoreOpenError(`--db ${path} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  if (size === 0) return;
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(16);
    readSync(fd, buf, 0, 16, 0);
    if (buf.toString('latin1') !== SQLITE_HEADER) {
      throw new StoreOpenError(`--db ${path} is not an SQLite database (its header is not "SQLite format 3")`);
    }
  } finally {
    closeSync(fd);
  }
}
