import { closeSync, openSync, readSync, statSync, statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { StoreOpenError, describeError } from '../../errors.js';

// Kept apart from store.ts so the CLI can check --db before loading the native module
// (and a kubernetes sidecar never loads it at all).

const SQLITE_HEADER = 'SQLite format 3\0';

/** Throws StoreOpenError unless `path` is absent, empty, or starts with the SQLite header. Reads only. */
export function checkSqliteFile(path: string): void {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new StoreOpenError(`the database file ${path} is not a regular file`, { field: 'db' });
    size = st.size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    if (err instanceof StoreOpenError) throw err;
    throw new StoreOpenError(`the database file ${path} cannot be read: ${describeError(err)}`, { cause: err, field: 'db' });
  }
  if (size === 0) return;
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(16);
    readSync(fd, buf, 0, 16, 0);
    if (buf.toString('latin1') !== SQLITE_HEADER) {
      throw new StoreOpenError(`the database file ${path} is not an SQLite database (its header is not "SQLite format 3")`, { field: 'db' });
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Filesystems whose locks or shared memory do not hold across machines (statfs f_type magic
 * numbers from linux/magic.h). SQLite's locks are unreliable on them and WAL needs shared
 * memory on one host, so two machines sharing a database there could both lead.
 */
const NETWORK_FILESYSTEMS: Record<number, string> = {
  0x6969: 'nfs',
  0x517b: 'smb',
  0xff534d42: 'cifs',
  0xfe534d42: 'smb2',
  0x65735546: 'fuse',
  0x00c36400: 'ceph',
  0x5346414f: 'afs',
  0x01021997: '9p',
  0x01161970: 'gfs2',
  0x7461636f: 'ocfs2',
  0x0bd00bd0: 'lustre',
  0x47504653: 'gpfs',
  0x61756673: 'aufs',
  0x73717368: 'squashfs',
};

/** The filesystem type of the nearest existing directory at or above `path`. */
function filesystemType(path: string, statfs: (p: string) => { type: number }): number {
  let dir = resolve(path);
  for (;;) {
    try {
      return statfs(dir).type;
    } catch (err) {
      const parent = dirname(dir);
      if (parent === dir || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      dir = parent;
    }
  }
}

/**
 * Refuses a --db on a network filesystem (local mode is one machine) unless `allow` says every
 * candidate runs on this one machine. Throws StoreOpenError naming the filesystem and the way out.
 */
export function checkLocalFilesystem(path: string, allow: boolean, statfs: (p: string) => { type: number } = statfsSync): void {
  if (allow) return;
  let name: string | undefined;
  try {
    name = NETWORK_FILESYSTEMS[filesystemType(path, statfs) >>> 0];
  } catch {
    return; // unreadable: opening the database reports it with its own reason
  }
  if (name) {
    throw new StoreOpenError(
      `the database file ${path} is on a network filesystem (${name}): SQLite's locks are unreliable there and WAL needs shared memory on one host, so candidates on two machines could both lead. Local mode is one machine: across machines use the kubernetes (or postgres) backend; if every candidate runs on this one machine, set the store setting allowNetworkFilesystem: true`,
      { field: 'db' },
    );
  }
}
