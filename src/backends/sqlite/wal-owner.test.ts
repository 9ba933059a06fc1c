import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs, { copyFileSync, mkdirSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { committedFrames, foreignLog } from './wal-owner.js';

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

describe("foreignLog: a -wal that is not the database file's own", () => {
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
