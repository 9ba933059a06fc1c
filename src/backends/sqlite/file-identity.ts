import { readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { StoreOpenError } from '../../errors.js';

// What the database path and its -wal and -shm name on disk, so the store can tell whether
// the path still names the files it opened, and whether a new file there would be paired
// with another file's log. Kept apart from store.ts: it needs no native module.

/** "dev:ino" of the database file, its -wal and its -shm; '-' for one that is absent. */
export interface FileIdentity {
  main: string;
  wal: string;
  shm: string;
}

function devIno(path: string): string {
  try {
    const st = statSync(path);
    return `${st.dev}:${st.ino}`;
  } catch {
    return '-';
  }
}

export function identityOf(path: string): FileIdentity {
  return { main: devIno(path), wal: devIno(`${path}-wal`), shm: devIno(`${path}-shm`) };
}

/**
 * The database file and its -shm, without stat'ing the -wal: what the store compares before
 * every operation. A stat of the -wal before each commit would make each commit's sync commit
 * the filesystem's journal too: a kernel with multigrain timestamps gives the next write to a
 * file whose times were just read a fine-grained, new modification time, so every write changes
 * the -wal's inode and its fsync must commit it, where otherwise the commits within one clock
 * tick share a time and the fsync writes data only (docs/benchmarks.md, "SQLite durable
 * renewals against the disk").
 */
export function mainAndShmOf(path: string): Pick<FileIdentity, 'main' | 'shm'> {
  return { main: devIno(path), shm: devIno(`${path}-shm`) };
}

/** The database file and its -shm are the same files (the -wal is not compared: see sameFiles' caller). */
export function sameFiles(a: Pick<FileIdentity, 'main' | 'shm'>, b: Pick<FileIdentity, 'main' | 'shm'>): boolean {
  return a.main === b.main && a.shm === b.shm;
}

export function describeIdentity(id: FileIdentity): string {
  return id.main === '-' ? 'absent' : `${id.main}/${id.shm}`;
}

/**
 * Why a file now at the path must not be opened in place of `opened`, or null when it may.
 * SQLite pairs a database with the -wal and -shm beside it by name alone: a new database file
 * next to the old -wal and -shm would be read through the old log (a mix of two files), and a
 * checkpoint would copy the old file's pages into the new one. A file mounted over the path
 * has its -wal and -shm in the directory beneath, beside nothing of its own.
 */
export function unsafeReplacement(path: string, opened: FileIdentity, now: FileIdentity, mountinfo?: string): string | null {
  const mounted = mountPointAt(path, mountinfo);
  if (mounted) return `${mounted} is a mount point (a file mounted over it)`;
  if (now.main === '-') {
    if (now.wal !== '-' && now.wal === opened.wal) return `it was deleted but its -wal was left behind`;
    if (now.shm !== '-' && now.shm === opened.shm) return `it was deleted but its -shm was left behind`;
    return null;
  }
  if (now.wal !== '-' && now.wal === opened.wal) return `another file took its place beside the -wal of the file this candidate opened`;
  if (now.shm !== '-' && now.shm === opened.shm) return `another file took its place beside the -shm of the file this candidate opened`;
  return null;
}

/**
 * The path of the database file, its -wal or its -shm when one of them is a mount point of
 * this process's mount namespace (`mount --bind other.db leases.db`, a container's single-file
 * volume), else null. Such a file's -wal and -shm are not beside it for every process that
 * opens it, so WAL's shared memory and log cannot be trusted.
 */
export function mountPointAt(path: string, mountinfo?: string): string | null {
  let text = mountinfo;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/mountinfo', 'utf8');
    } catch {
      return null; // not Linux: nothing to check against
    }
  }
  let dir: string;
  try {
    dir = realpathSync(dirname(path));
  } catch {
    return null;
  }
  const names = new Set(['', '-wal', '-shm'].map((s) => join(dir, basename(path) + s)));
  for (const line of text.split('\n')) {
    // Field 5 is the mount point, with space, tab, newline and backslash written in octal.
    const point = line.split(' ')[4];
    if (point === undefined) continue;
    const decoded = point.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (names.has(decoded)) return decoded;
  }
  return null;
}

/** Throws StoreOpenError when the database file, its -wal or its -shm is a mount point (mountPointAt). */
export function refuseMountPoint(path: string): void {
  const mounted = mountPointAt(path);
  if (mounted) {
    throw new StoreOpenError(
      `the database file ${path}: ${mounted} is a mount point (a file mounted over it): SQLite finds the -wal and -shm by name beside the database, so they would not be this file's for every process, and a checkpoint could write one file's log into another. Mount the directory that holds the database instead`,
      { field: 'db' },
    );
  }
}
