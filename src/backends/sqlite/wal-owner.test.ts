import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs, { copyFileSync, mkdirSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { backfilledFrames, committedFrames, foreignLog } from './wal-owner.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-wal-owner-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A WAL database with `rows` commits still in its log, as a killed process leaves it: copied while open. */
function killedWith(rows: number, order: 'db-then-wal' | 'wal-then-db', checkpoint = false): string {
  const src = join(dir, `src-${++n}.db`);
  const db = new Database(src);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (v)');
  for (let i = 0; i < rows; i++) db.prepare('INSERT INTO t VALUES (?)').run(i);
  if (checkpoint) db.pragma('wal_checkpoint(PASSIVE)');
  const out = join(dir, `copy-${n}`);
  mkdirSync(out);
  const path = join(out, 'l.db');
  for (const f of order === 'db-then-wal' ? ['', '-wal'] : ['-wal', '']) copyFileSync(src + f, path + f);
  db.close();
  return path;
}

/**
 * A live database right after a checkpoint that a reader's snapshot stopped part way: the file
 * written after the log's last commit, and a newer image of a page it holds still in the log.
 * Returns the writer (open) and the path; the reader's snapshot is over.
 */
function afterPartialCheckpoint(): { path: string; w: Database.Database; copied: number } {
  const path = join(dir, `live-${++n}.db`);
  const w = new Database(path);
  w.pragma('journal_mode = WAL');
  w.pragma('wal_autocheckpoint = 0');
  w.exec("CREATE TABLE t (v); INSERT INTO t VALUES ('a')");
  const r = new Database(path, { readonly: true });
  r.exec('BEGIN');
  r.prepare('SELECT count(*) FROM t').get(); // the snapshot: a checkpoint copies no frame past it
  w.prepare('UPDATE t SET v = ?').run('b');
  try {
    pastLogChange(path);
    const [ck] = w.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
    r.exec('COMMIT');
    r.close();
    assert.ok(ck!.checkpointed > 0 && ck!.checkpointed < ck!.log, `the checkpoint copied ${ck!.checkpointed} of ${ck!.log} frames`);
    assert.ok(fs.statSync(path, { bigint: true }).ctimeNs > fs.statSync(`${path}-wal`, { bigint: true }).ctimeNs, 'the file changed after the log');
    return { path, w, copied: ck!.checkpointed };
  } catch (err) {
    if (r.open) r.close();
    w.close();
    throw err;
  }
}

/**
 * Waits until the file system's clock (it ticks coarsely) has passed the last change of `path`'s
 * log, so the next change of the file comes after it: by writing a probe until its change time
 * does, for at most 5 s.
 */
function pastLogChange(path: string): void {
  const logChanged = fs.statSync(`${path}-wal`, { bigint: true }).ctimeNs;
  const probe = join(dir, `probe-${n}`);
  const until = Date.now() + 5_000;
  for (let i = 0; Date.now() < until; i++) {
    fs.writeFileSync(probe, String(i));
    if (fs.statSync(probe, { bigint: true }).ctimeNs > logChanged) return;
  }
  assert.fail("the file system's clock did not pass the log's last change within 5 s");
}

/** The salt in the header of `path`'s log (a writer starting the log over writes a new one). */
function readFirstSalt(path: string): Buffer {
  const fd = fs.openSync(`${path}-wal`, 'r');
  try {
    const header = Buffer.alloc(32);
    fs.readSync(fd, header, 0, 32, 0);
    return header.subarray(16, 24);
  } finally {
    fs.closeSync(fd);
  }
}

describe("foreignLog: a -wal that is not the database file's own", () => {
  it("accepts a live database's log after a checkpoint a reader stopped part way: the -shm says which frames the file holds", () => {
    const { path, w, copied } = afterPartialCheckpoint();
    try {
      const fd = fs.openSync(`${path}-wal`, 'r');
      const salt = committedFrames(fd)!.salt;
      fs.closeSync(fd);
      assert.deepEqual(
        backfilledFrames(`${path}-shm`, salt),
        { copied, attempted: copied },
        "the checkpoint's count: the create and the insert, not the update",
      );
      assert.equal(backfilledFrames(`${path}-shm`, Buffer.alloc(8)), null, "another generation's salt");
      assert.equal(backfilledFrames(join(dir, 'absent-shm'), salt), null);
      assert.equal(foreignLog(path), null);
    } finally {
      w.close();
    }
  });

  it('still refuses a replaced file read through the old log with its own -shm, after a partial checkpoint', () => {
    const { path, w } = afterPartialCheckpoint();
    try {
      // Another database moved over the path while the old file's log and -shm stay.
      const other = join(dir, `other-${n}.db`);
      const o = new Database(other);
      o.exec("CREATE TABLE backup (v); INSERT INTO backup VALUES ('kept')");
      o.close();
      copyFileSync(other, `${path}.new`);
      fs.renameSync(`${path}.new`, path);
      assert.match(foreignLog(path) ?? '', /is older than the database file and holds pages that would overwrite it/);
    } finally {
      w.close();
    }
  });

  it("accepts its own log when a checkpoint copies pages while it reads: the -shm's move is seen and the reads done again", () => {
    const { path, w } = afterPartialCheckpoint();
    try {
      // The -shm as the check's first read finds it, before a checkpoint that then copies the rest.
      copyFileSync(`${path}-shm`, `${path}.shm-before`);
      w.prepare('UPDATE t SET v = ?').run('state2');
      pastLogChange(path);
      w.pragma('wal_checkpoint(PASSIVE)');
      const real = fs.openSync;
      let shmOpens = 0;
      fs.openSync = (p: fs.PathLike, ...rest: unknown[]) =>
        (real as (...a: unknown[]) => number)(String(p) === `${path}-shm` && ++shmOpens === 1 ? `${path}.shm-before` : p, ...rest);
      syncBuiltinESMExports();
      try {
        assert.equal(foreignLog(path), null);
        assert.ok(shmOpens >= 3, `the -shm read ${shmOpens} times: before, after, and again`);
      } finally {
        fs.openSync = real;
        syncBuiltinESMExports();
      }
    } finally {
      w.close();
    }
  });

  it('still refuses a copy of the same database taken after more commits and moved over the path: it holds a page as a frame past the checkpoint has it', () => {
    const { path, w } = afterPartialCheckpoint();
    try {
      w.prepare('UPDATE t SET v = ?').run('state2');
      // A backup of the database as it stood then: its file and log copied, the log applied.
      const backup = join(dir, `backup-${n}.db`);
      for (const f of ['', '-wal']) copyFileSync(path + f, backup + f);
      const b = new Database(backup);
      b.pragma('wal_checkpoint(TRUNCATE)');
      b.close();
      w.prepare('UPDATE t SET v = ?').run('state3');
      pastLogChange(path);
      fs.renameSync(backup, path);
      assert.match(foreignLog(path) ?? '', /is older than the database file and holds pages that would overwrite it/);
    } finally {
      w.close();
    }
  });

  it("accepts its own log when a writer starts it over while it reads: a complete checkpoint, then the next commit from the log's first frame", () => {
    // The shard bench met this growing to 32 members on one file at N = 4096 (again after the
    // -shm's partial case was fixed): the file newer than the log right after a checkpoint that
    // copied the whole log, then, while the new member read, the next commit started the log
    // over (a new salt, its frames from the first) with pages the file does not hold yet.
    const path = join(dir, `restart-${++n}.db`);
    const w = new Database(path);
    try {
      w.pragma('journal_mode = WAL');
      w.pragma('wal_autocheckpoint = 0');
      w.exec("CREATE TABLE t (v); INSERT INTO t VALUES ('a')");
      w.prepare('UPDATE t SET v = ?').run('b');
      pastLogChange(path);
      const [ck] = w.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
      assert.equal(ck!.checkpointed, ck!.log, 'the checkpoint copied the whole log');
      assert.ok(fs.statSync(path, { bigint: true }).ctimeNs > fs.statSync(`${path}-wal`, { bigint: true }).ctimeNs, 'the file changed after the log');
      const saltBefore = readFirstSalt(path);
      const real = fs.openSync;
      let shmOpens = 0;
      let walOpens = 0;
      // The commit comes once the check has begun: at its first read of the -shm.
      fs.openSync = (p: fs.PathLike, ...rest: unknown[]) => {
        if (String(p) === `${path}-shm` && ++shmOpens === 1) w.prepare('UPDATE t SET v = ?').run('c');
        if (String(p) === `${path}-wal`) walOpens++;
        return (real as (...a: unknown[]) => number)(p, ...rest);
      };
      syncBuiltinESMExports();
      try {
        assert.equal(foreignLog(path), null);
      } finally {
        fs.openSync = real;
        syncBuiltinESMExports();
      }
      assert.ok(shmOpens >= 1, 'the check read the -shm');
      assert.equal(walOpens, 2, 'the log found written while it was compared, and checked again from the path');
      assert.notDeepEqual(readFirstSalt(path), saltBefore, 'the commit started the log over');
    } finally {
      w.close();
    }
  });

  it("still refuses another file's log whose permissions change while it is checked: a chmod writes nothing", () => {
    const path = killedWith(3, 'db-then-wal');
    const other = join(dir, `other-chmod-${n}.db`);
    const o = new Database(other);
    o.exec("CREATE TABLE backup (v); INSERT INTO backup VALUES ('kept')");
    o.close();
    pastLogChange(path);
    copyFileSync(other, path);
    const real = fs.openSync;
    let chmods = 0;
    // At the check's first read of the -shm (absent here): the log's ctime moves, its mtime not.
    fs.openSync = (p: fs.PathLike, ...rest: unknown[]) => {
      if (String(p) === `${path}-shm` && chmods++ === 0) fs.chmodSync(`${path}-wal`, 0o600);
      return (real as (...a: unknown[]) => number)(p, ...rest);
    };
    syncBuiltinESMExports();
    try {
      assert.match(foreignLog(path) ?? '', /is older than the database file and holds pages that would overwrite it/);
    } finally {
      fs.openSync = real;
      syncBuiltinESMExports();
    }
    assert.ok(chmods >= 1, "the log's permissions changed during the check");
  });

  it('reads the committed frames as recovery would', () => {
    const path = killedWith(3, 'db-then-wal');
    const fd = fs.openSync(`${path}-wal`, 'r');
    const log = committedFrames(fd);
    fs.closeSync(fd);
    assert.ok(log);
    assert.equal(log.pageSize, 4096);
    assert.ok(log.pages.size >= 2 && log.dbPages >= 2);
  });

  it("accepts a killed process's own log, and nothing when there is no log", () => {
    assert.equal(foreignLog(killedWith(3, 'db-then-wal')), null);
    assert.equal(foreignLog(join(dir, 'absent.db')), null);
  });

  it("a log deleted while it is being compared with the file (the last connection's close) is no log, not an error", () => {
    const path = killedWith(3, 'wal-then-db', true);
    const real = fs.openSync;
    let opens = 0;
    // As the closing connection does right after its checkpoint: the log goes once the check has
    // begun reading it.
    fs.openSync = (p: fs.PathLike, ...rest: unknown[]) => {
      const fd = (real as (...a: unknown[]) => number)(p, ...rest);
      if (String(p) === `${path}-wal` && ++opens === 1) unlinkSync(p);
      return fd;
    };
    syncBuiltinESMExports();
    try {
      assert.equal(foreignLog(path), null);
      assert.ok(opens >= 1 && !fs.existsSync(`${path}-wal`), 'the log was deleted while it was being read');
    } finally {
      fs.openSync = real;
      syncBuiltinESMExports();
    }
  });

  it('accepts a log whose pages the file already holds, even when the file changed last (a checkpoint)', () => {
    assert.equal(foreignLog(killedWith(3, 'wal-then-db', true)), null);
  });

  it('refuses a log when another file took the path after the log was last written', () => {
    const path = killedWith(3, 'db-then-wal');
    const other = join(dir, 'other.db');
    const o = new Database(other);
    o.exec("CREATE TABLE backup (v); INSERT INTO backup VALUES ('kept')");
    o.close();
    copyFileSync(other, path);
    assert.match(foreignLog(path) ?? '', /is older than the database file and holds pages that would overwrite it/);
    // Opened by SQLite it would be read through the log: the backup's table gone.
    const db = new Database(path, { readonly: true });
    assert.deepEqual(db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all(), ['t']);
    db.close();
  });
});
