/**
 * A backup moved over the database as the docs say (every candidate stopped first) while a
 * reader still had the old file open: `leasehold status --watch`, or a neighbour's read-only
 * connection. SQLite pairs a database with the -wal beside it by name, so a log kept alive by
 * that reader would be read over the backup and copied into it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { REPO, runCli, start, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus, startSidecar, type Candidate } from '../support/sidecars.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const LEASE = 'restored';

/** A backup of a lease database: the lease released at token 100, and a table of the app's own. */
function backupAt100(path: string): void {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.exec(`CREATE TABLE leases (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token INTEGER NOT NULL,
      renew_time REAL NOT NULL, lease_duration_seconds REAL NOT NULL, acquire_time REAL NOT NULL DEFAULT 0, successor TEXT NOT NULL DEFAULT '')`);
    db.prepare('INSERT INTO leases VALUES (?, ?, ?, ?, ?, ?, ?)').run(LEASE, '', 100, Date.now() / 1000, 2, 0, '');
    db.exec("CREATE TABLE extra (note TEXT); INSERT INTO extra VALUES ('kept')");
  } finally {
    db.close();
  }
}

function tablesOf(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('a backup restored over the database while a reader had the old file open', () => {
  const owned: Array<Proc | Candidate> = [];
  const dir = scratchDir(() => owned);

  /** Two candidates on `db` until one leads (token 1), then both stopped as the docs say (SIGTERM). */
  async function runAndStop(work: string, db: string, whileRunning: () => Promise<void>) {
    const cands = ['a', 'b'].map((id) => startSidecar(work, id, ['--db', db, '--lease', LEASE], T));
    owned.push(...cands);
    await waitFor('a leader', () => leadersByStatus(cands).length === 1, 15_000);
    await whileRunning();
    for (const c of cands) c.proc.kill('SIGTERM');
    for (const c of cands) assert.equal((await c.proc.exited).code, 0, c.proc.stderr());
  }

  it('status --watch: the next candidate continues the backup (token 101) and the backup keeps its table', async () => {
    const work = join(dir.path, 'watch');
    mkdirSync(work);
    const db = join(work, 'leases.db');
    const backup = join(work, 'backup.db');
    backupAt100(backup);
    let watcher: Proc | null = null;
    await runAndStop(work, db, async () => {
      watcher = startCli(['status', '--watch', '--db', db, '--lease', LEASE]);
      owned.push(watcher);
      await waitFor('the watcher to print the leader', () => /held\s+holder [ab]/.test(watcher!.stdout()), 10_000);
    });
    // The watcher opens the file for each read and closes it at once, so a log may exist for the
    // moment of a read; one it kept open would be there for good.
    await waitFor('the log gone although the watcher runs', () => !existsSync(`${db}-wal`), 5_000, 5).catch(() => {
      assert.fail('the watcher kept the log alive after the last candidate exited');
    });
    renameSync(backup, db);
    const c = startSidecar(work, 'c', ['--db', db, '--lease', LEASE], T);
    owned.push(c);
    const led = await waitFor('c to lead', () => leadersByStatus([c])[0], 15_000);
    assert.equal(led.token, 101, "the next token after the backup's 100");
    await waitFor('the watcher to show c at token 101', () => /holder c\s+token 101/.test(watcher!.stdout()), 10_000);
    c.proc.kill('SIGTERM');
    assert.equal((await c.proc.exited).code, 0, c.proc.stderr());
    watcher!.kill('SIGTERM');
    await watcher!.exited;
    // The backup's own table kept; the candidate added only its write counts (lease-version.ts).
    assert.deepEqual(tablesOf(db), ['extra', 'lease_versions', 'leases']);
  });

  it("a neighbour's read-only connection kept the old log: a candidate refuses it in one line, exit 2, and writes nothing", async () => {
    const work = join(dir.path, 'neighbour');
    mkdirSync(work);
    const db = join(work, 'leases.db');
    const backup = join(work, 'backup.db');
    backupAt100(backup);
    const script = `const D = require('better-sqlite3'); const db = new D(process.argv[1], { readonly: true });
      db.prepare('SELECT count(*) FROM leases').get(); process.stdout.write('open\\n'); setInterval(() => {}, 1000);`;
    let neighbour: Proc | null = null;
    await runAndStop(work, db, async () => {
      neighbour = start(process.execPath, ['-e', script, db], {}, REPO);
      owned.push(neighbour);
      await waitFor('the neighbour to open the file', () => neighbour!.stdout().includes('open'), 10_000);
    });
    assert.equal(existsSync(`${db}-wal`), true, 'the neighbour kept the old log');
    renameSync(backup, db);
    const before = sha256(db);
    const c = await runCli(['sidecar', '--db', db, '--lease', LEASE, '--identity', 'c', '--listen', 'off', '--status-dir', join(work, 'status-c')]);
    assert.equal(c.code, 2, c.stderr);
    const lines = c.stderr.trim().split('\n');
    assert.equal(lines.length, 1, c.stderr);
    assert.match(
      lines[0]!,
      /--db: the database file .*leases\.db: its -wal \(.*leases\.db-wal\) is older than the database file and holds pages that would overwrite it/,
    );
    const status = await runCli(['status', '--db', db, '--lease', LEASE]);
    assert.equal(status.code, 2, status.stderr);
    assert.match(status.stderr, /is older than the database file/);
    neighbour!.kill('SIGKILL');
    await neighbour!.exited;
    assert.equal(sha256(db), before, 'the backup was not written');
  });
});
