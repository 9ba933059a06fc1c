import { closeSync, fstatSync, openSync, readSync, statSync, type BigIntStats } from 'node:fs';

// Whether the -wal beside a database file is another file's log. SQLite pairs a database with
// the -wal beside it by name alone, and nothing in a -wal names its database: a file moved over
// the path while a process kept the old log (a reader left open, every candidate killed) would
// be read through that log, and the first checkpoint would copy the old file's pages into it.
// Kept apart from store.ts: it needs no native module.

const WAL_HEADER = 32;
const FRAME_HEADER = 24;
/** Magic numbers of a WAL header: the low bit says the checksums' byte order (1: big-endian). */
const MAGIC_LE = 0x377f0682;
const MAGIC_BE = 0x377f0683;

function statOrNull(path: string): BigIntStats | null {
  try {
    return statSync(path, { bigint: true });
  } catch {
    return null;
  }
}

/** SQLite's WAL checksum over `data` (a multiple of 8 bytes), continuing from `s`. */
function checksum(data: Buffer, bigEndian: boolean, s: [number, number]): [number, number] {
  let [s0, s1] = s;
  for (let i = 0; i < data.length; i += 8) {
    const x0 = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const x1 = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

/**
 * The committed frames of the -wal open at `fd` as SQLite's recovery would find them: each
 * page's latest image (its offset in the -wal), the page size, and the database size in pages
 * after the last commit. Null when it holds no committed frame (empty, a bad header).
 * Reads one frame at a time: the memory used does not grow with the log.
 */
export function committedFrames(fd: number): { pageSize: number; pages: Map<number, number>; dbPages: number } | null {
  const header = Buffer.alloc(WAL_HEADER);
  if (readSync(fd, header, 0, WAL_HEADER, 0) < WAL_HEADER) return null;
  const magic = header.readUInt32BE(0);
  if (magic !== MAGIC_LE && magic !== MAGIC_BE) return null;
  const bigEndian = magic === MAGIC_BE;
  const pageSize = header.readUInt32BE(8) === 1 ? 65536 : header.readUInt32BE(8);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return null;
  let sum = checksum(header.subarray(0, 24), bigEndian, [0, 0]);
  if (sum[0] !== header.readUInt32BE(24) || sum[1] !== header.readUInt32BE(28)) return null;
  const salt = header.subarray(16, 24);
  const frame = Buffer.alloc(FRAME_HEADER + pageSize);
  const pending = new Map<number, number>();
  const pages = new Map<number, number>();
  let dbPages = 0;
  for (let at = WAL_HEADER; readSync(fd, frame, 0, frame.length, at) === frame.length; at += frame.length) {
    if (!frame.subarray(8, 16).equals(salt)) break;
    sum = checksum(frame.subarray(0, 8), bigEndian, sum);
    sum = checksum(frame.subarray(FRAME_HEADER), bigEndian, sum);
    if (sum[0] !== frame.readUInt32BE(16) || sum[1] !== frame.readUInt32BE(20)) break;
    pending.set(frame.readUInt32BE(0), at + FRAME_HEADER);
    const commitSize = frame.readUInt32BE(4);
    if (commitSize !== 0) {
      for (const [page, offset] of pending) pages.set(page, offset);
      pending.clear();
      dbPages = commitSize;
    }
  }
  return pages.size === 0 ? null : { pageSize, pages, dbPages };
}

/** True when writing the committed frames of the log open at `wal` into `dbPath` would change it (a page or its size). */
function logChangesFile(dbPath: string, wal: number): boolean {
  const log = committedFrames(wal);
  if (!log) return false;
  const db = statOrNull(dbPath);
  if (!db || db.size !== BigInt(log.dbPages) * BigInt(log.pageSize)) return true;
  const main = openSync(dbPath, 'r');
  try {
    const a = Buffer.alloc(log.pageSize);
    const b = Buffer.alloc(log.pageSize);
    for (const [page, offset] of log.pages) {
      if (page > log.dbPages) continue;
      readSync(wal, a, 0, a.length, offset);
      if (readSync(main, b, 0, b.length, (page - 1) * log.pageSize) !== b.length || !a.equals(b)) return true;
    }
    return false;
  } finally {
    closeSync(main);
  }
}

/**
 * Why the -wal beside `dbPath` must not be applied to it, or null when it may (or there is none).
 *
 * In WAL mode a database file changes only when a checkpoint copies its own log's pages into it,
 * so a log that belongs to the file was written to at or after the file's last change, unless
 * that change was a checkpoint that already copied every page the log holds. So: the database
 * file's inode changed (written, renamed over the path, chmod-ed) after the log's did, and the
 * log's committed pages differ from the file's. A file moved over the path after its log's last
 * write is the case this catches; a partial checkpoint, or a chmod of the file, just before every
 * process using it was killed is one it refuses wrongly, and the line says how to go on. So is a
 * live database in the moment between a checkpoint that a reader's snapshot stopped (it writes
 * the file after the log's last commit and leaves pages in the log) and the next commit: a
 * process starting then exits 2 (the shard bench met it growing 8 members to 32 on one file at
 * N = 4096) and may simply be started again. Waiting for the next commit is no cure: a process
 * that kept a replaced file's log commits to it just the same. Telling the two apart needs
 * evidence from the -shm (its checkpoint's nBackfill: the file's own log has every frame up to it
 * copied in, and only later frames differ); not built.
 */
export function foreignLog(dbPath: string): string | null {
  const walPath = `${dbPath}-wal`;
  // Opened once and read only through this descriptor: the last connection's close checkpoints
  // its log into the file (the file's ctime moves past the log's) and then deletes the log, which
  // an open descriptor still reads whole.
  let wal: number;
  try {
    wal = openSync(walPath, 'r');
  } catch {
    return null;
  }
  try {
    const log = fstatSync(wal, { bigint: true });
    const db = statOrNull(dbPath);
    if (!db || log.size <= WAL_HEADER) return null;
    if (db.ctimeNs <= log.ctimeNs) return null;
    if (!logChangesFile(dbPath, wal)) return null;
  } finally {
    closeSync(wal);
  }
  return `its -wal (${walPath}) is older than the database file and holds pages that would overwrite it: it is the log of another file (a database moved over ${dbPath} while a process kept the old file's log open?), and SQLite would read ${dbPath} through it and copy it in. Nothing was read or written. If ${dbPath} was replaced, move ${walPath} and ${dbPath}-shm away (they hold the old file's last writes); if they are its own (only its permissions changed after every process using it was killed), apply the log first: sqlite3 ${dbPath} 'PRAGMA wal_checkpoint(TRUNCATE)'`;
}
