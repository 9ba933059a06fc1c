import { closeSync, fstatSync, openSync, readSync, statSync, type BigIntStats } from 'node:fs';
import { endianness } from 'node:os';

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
 * Reads one frame at a time: the memory used does not grow with the log. `lastCommit`: the
 * number of the last committed frame (1 is the first); `salt`: the header's, as the -shm holds it.
 */
export function committedFrames(fd: number): { pageSize: number; pages: Map<number, number>; dbPages: number; lastCommit: number; salt: Buffer } | null {
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
  let lastCommit = 0;
  for (let at = WAL_HEADER, n = 1; readSync(fd, frame, 0, frame.length, at) === frame.length; at += frame.length, n++) {
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
      lastCommit = n;
    }
  }
  return pages.size === 0 ? null : { pageSize, pages, dbPages, lastCommit, salt: Buffer.from(salt) };
}

const SHM_HEADER = 136;
/** WalIndexHdr.iVersion, the -shm's format (SQLite's WALINDEX_MAX_VERSION). */
const SHM_VERSION = 3007000;

/** What the -shm says of the checkpoints of one log: frames copied into the file, and frames perhaps copied. */
export interface Backfill {
  /** WalCkptInfo.nBackfill: every frame up to it is in the file (each page's latest among them). */
  copied: number;
  /** The larger of it and nBackfillAttempted, which a checkpoint sets before it copies: frames up to it may be in the file. */
  attempted: number;
}

/**
 * What the -shm beside a log whose header salt is `salt` says of its checkpoints, or null when it
 * does not tell: absent, unreadable, not initialised, its two header copies torn apart by a
 * writer, or describing another generation of the log (another salt). The -shm is SQLite's
 * shared memory, in the host's byte order; read only, never written.
 */
export function backfilledFrames(shmPath: string, salt: Buffer): Backfill | null {
  let fd: number;
  try {
    fd = openSync(shmPath, 'r');
  } catch {
    return null;
  }
  try {
    const b = Buffer.alloc(SHM_HEADER);
    if (readSync(fd, b, 0, SHM_HEADER, 0) < SHM_HEADER) return null;
    const u32 = (at: number) => (endianness() === 'LE' ? b.readUInt32LE(at) : b.readUInt32BE(at));
    // The header is written twice (0 and 48) so a reader can tell a torn copy; the salt as the log's header holds it, byte for byte.
    if (u32(0) !== SHM_VERSION || b[12] !== 1 || !b.subarray(0, 48).equals(b.subarray(48, 96)) || !b.subarray(32, 40).equals(salt)) return null;
    const copied = u32(96);
    return copied <= u32(16) ? { copied, attempted: Math.max(copied, u32(128)) } : null;
  } catch {
    return null; // unreadable (a directory, an I/O error): it tells nothing
  } finally {
    closeSync(fd);
  }
}

const sameBackfill = (a: Backfill | null, b: Backfill | null) => a?.copied === b?.copied && a?.attempted === b?.attempted;

/** Reads of the log and the -shm tried while a checkpoint moves the -shm under them; the last without the later frames' check. */
const TRIES = 4;

/**
 * True when writing the committed frames of the log open at `wal` into `dbPath` would change it
 * (a page or its size). Where the -shm says a checkpoint copied the log only part way (a reader's
 * snapshot stopped it at nBackfill), the pages whose latest frame is within the copied ones are
 * compared: a checkpoint copies each page's latest frame or nothing of it, so every such page is
 * in the file as that frame has it. The others may be older there, or absent, but never as a
 * committed frame past the ones a checkpoint may have copied has them: a file that holds one of
 * those pages (a copy of the database taken after more commits, checkpointed: a hostile review's
 * case) is not the one the checkpoint wrote. Not the size: a checkpoint sets it only when it
 * copies the whole log.
 *
 * A live database's checkpoint may run while this reads: it sets nBackfillAttempted before it
 * copies and nBackfill after. So the log is read after the -shm, and the -shm read again after
 * the file: when either moved, the reads are done again (a second review's find: a page copied
 * past the nBackfill read refused the file's own log). A -shm still moving after TRIES reads is
 * a log that something checkpoints all the time: the last read drops the later frames' check.
 */
function logChangesFile(dbPath: string, wal: number): boolean {
  const shm = `${dbPath}-shm`;
  for (let tries = 1; ; tries++) {
    const salt = walSalt(wal);
    const before = backfilledFrames(shm, salt);
    const log = committedFrames(wal);
    if (!log) return false;
    // A restart of the log between the two reads: the -shm read described the one before.
    const backfill = log.salt.equals(salt) ? before : null;
    const changes = comparedWith(dbPath, wal, log, backfill, tries < TRIES);
    if (tries >= TRIES || sameBackfill(backfill, backfilledFrames(shm, log.salt))) return changes;
  }
}

/** The salt in the log's header as it is now (a restart writes a new one), or 8 zero bytes when it cannot be read. */
function walSalt(wal: number): Buffer {
  const header = Buffer.alloc(WAL_HEADER);
  return readSync(wal, header, 0, WAL_HEADER, 0) === WAL_HEADER ? Buffer.from(header.subarray(16, 24)) : Buffer.alloc(8);
}

/** logChangesFile's comparison for one read of the log and the -shm (`backfill`, null: none that describes it). */
function comparedWith(
  dbPath: string,
  wal: number,
  log: NonNullable<ReturnType<typeof committedFrames>>,
  backfill: Backfill | null,
  laterFrames: boolean,
): boolean {
  const partial = backfill !== null && backfill.copied > 0 && backfill.copied < log.lastCommit;
  const frameOf = (offset: number) => (offset - WAL_HEADER - FRAME_HEADER) / (FRAME_HEADER + log.pageSize) + 1;
  const db = statOrNull(dbPath);
  if (!db || (!partial && db.size !== BigInt(log.dbPages) * BigInt(log.pageSize))) return true;
  const main = openSync(dbPath, 'r');
  try {
    const a = Buffer.alloc(log.pageSize);
    const b = Buffer.alloc(log.pageSize);
    const fileHas = (page: number, offset: number) => {
      readSync(wal, a, 0, a.length, offset);
      return readSync(main, b, 0, b.length, (page - 1) * log.pageSize) === b.length && a.equals(b);
    };
    for (const [page, offset] of log.pages) {
      if (page > log.dbPages || (partial && frameOf(offset) > backfill.copied)) continue;
      if (!fileHas(page, offset)) return true;
    }
    if (!partial || !laterFrames) return false;
    const header = Buffer.alloc(4);
    for (let f = backfill.attempted + 1; f <= log.lastCommit; f++) {
      const at = WAL_HEADER + (f - 1) * (FRAME_HEADER + log.pageSize);
      readSync(wal, header, 0, 4, at);
      if (fileHas(header.readUInt32BE(0), at + FRAME_HEADER)) return true;
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
 * write is the case this catches. It refuses wrongly a chmod of the file just before every
 * process using it was killed, a process killed in the middle of a log's first checkpoint (pages
 * copied, nothing yet stored in the -shm to say so), and a later frame that rewrote a page byte
 * for byte as the file has it; the line says how to go on.
 *
 * A checkpoint that a reader's snapshot stopped part way writes the file after the log's last
 * commit and leaves newer pages in the log: a live database's ctimes look so until its next
 * commit, and the -shm says so until its next checkpoint. The -shm tells that case
 * (backfilledFrames): the pages whose latest frame is among its nBackfill copied ones must be in
 * the file as those frames have them, and no page of the file may be as a committed frame past
 * the ones a checkpoint may have copied has it, read again while a checkpoint moves the -shm
 * (logChangesFile). Before, a process starting in that moment exited 2: the shard bench met
 * it growing to 32 members on one file at N = 4096, twice. A replaced file's old log keeps its
 * own -shm: a file unrelated to it differs in the copied pages, and a copy of the same database
 * taken after more commits holds a later frame's page (the tests hold both). A -shm that does not
 * describe this log (absent, another salt, torn, unreadable) leaves the whole log compared, as
 * before. A log written while it is compared (a commit, or the first commit after a checkpoint
 * that copied it all, which starts the log over with pages the file does not hold yet) is one in
 * use: the whole check runs again from the path, and a log as new as the file or newer is
 * taken, as at the start; one written during each of LOG_IN_USE_TRIES checks is taken too. So a
 * process still on an old file that commits to its log while a newcomer checks it gets the log
 * taken, as it did when it committed just before the check: such a writer is not detected.
 * What stays open: a replacement equal to the old file in every copied page and in no
 * later frame's page: a copy taken right at that checkpoint, which is that file's own history,
 * or such a copy changed elsewhere only in pages the old log wrote again later, whose changes the
 * old log would then overwrite (a second review's case). Stop every process before restoring.
 */
export function foreignLog(dbPath: string): string | null {
  const walPath = `${dbPath}-wal`;
  for (let tries = 1; tries <= LOG_IN_USE_TRIES; tries++) {
    const verdict = judgeLog(dbPath, walPath);
    if (verdict === 'foreign')
      return `its -wal (${walPath}) is older than the database file and holds pages that would overwrite it: it is the log of another file (a database moved over ${dbPath} while a process kept the old file's log open?), and SQLite would read ${dbPath} through it and copy it in. Nothing was read or written. If ${dbPath} was replaced, move ${walPath} and ${dbPath}-shm away (they hold the old file's last writes); if they are its own (only its permissions changed after every process using it was killed), apply the log first: sqlite3 ${dbPath} 'PRAGMA wal_checkpoint(TRUNCATE)'`;
    if (verdict === 'own') return null;
  }
  // Written during every check: a log in use, as the first test of times would take it.
  return null;
}

/**
 * Checks of the log that found it written while they compared it, before it is taken as one in
 * use. Each is a whole check again, from the path: the log there may be another inode by then.
 */
const LOG_IN_USE_TRIES = 4;

/**
 * One check of the -wal at `walPath` (foreignLog): 'own' when it may be applied (or there is
 * none), 'foreign' when it is another file's, 'written' when it was written while it was
 * compared. The commit after a checkpoint that copied the whole log starts it over (a new
 * salt, frames from the first) with pages the file does not hold yet: read so, a live log
 * looked foreign, and the shard bench's 32nd member exited 2. A write sets the log's mtime
 * (its ctime moves too for a chmod, a link or a rename, which write nothing), or its size.
 */
function judgeLog(dbPath: string, walPath: string): 'own' | 'foreign' | 'written' {
  // Opened once and read only through this descriptor: the last connection's close checkpoints
  // its log into the file (the file's ctime moves past the log's) and then deletes the log, which
  // an open descriptor still reads whole.
  let wal: number;
  try {
    wal = openSync(walPath, 'r');
  } catch {
    return 'own';
  }
  try {
    const log = fstatSync(wal, { bigint: true });
    const db = statOrNull(dbPath);
    if (!db || log.size <= WAL_HEADER) return 'own';
    if (db.ctimeNs <= log.ctimeNs) return 'own';
    if (!logChangesFile(dbPath, wal)) return 'own';
    const after = fstatSync(wal, { bigint: true });
    return after.mtimeNs === log.mtimeNs && after.size === log.size ? 'foreign' : 'written';
  } finally {
    closeSync(wal);
  }
}
