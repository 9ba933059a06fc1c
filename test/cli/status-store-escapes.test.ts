/**
 * A peer stores a fencing token that is text carrying terminal escapes (any process with write
 * access to the file can). `leasehold status` and `status --watch` quote it in their error line:
 * escaped, it cannot clear the screen, set the window title or forge a line.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';

const HOSTILE = '7\u001b]0;pwned\u0007\u001b[2J\u009b31m\nforged line';
/** Whether `text` holds what a terminal acts on: C0 (newline aside, checked as one line), DEL and C1 controls. */
const rawControl = (text: string) => [...text].some((c) => c !== '\n' && (c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f)));

describe('a fencing token stored as text with terminal escapes', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');

  it('setup: a real SQLite file with the hostile token', () => {
    const d = new Database(db);
    d.pragma('journal_mode = WAL');
    d.exec(`CREATE TABLE leases (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token INTEGER NOT NULL,
      renew_time REAL NOT NULL, lease_duration_seconds REAL NOT NULL)`);
    d.prepare('INSERT INTO leases VALUES (?, ?, ?, ?, ?)').run('esc', 'peer', HOSTILE, Date.now() / 1000, 15);
    d.close();
  });

  it('status: one escaped line', async () => {
    const r = await runCli(['status', '--db', db, '--lease', 'esc']);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.split('\n').length, 2, JSON.stringify(r.stderr)); // one line and its newline
    assert.ok(!rawControl(r.stderr.trimEnd()), JSON.stringify(r.stderr));
    assert.match(r.stderr, /^leasehold: the stored fencing token 7\\u001b\]0;pwned\\u0007\\u001b\[2J\\u009b31m\\u000aforged line is not an integer/);
  });

  it('status --watch: the same escaped line, once, and it keeps watching', { timeout: 30_000 }, async () => {
    const w = startCli(['status', '--watch', '--db', db, '--lease', 'esc']);
    procs.push(w);
    await waitFor('the watch to report the record', () => w.stderr().includes('(still watching)'), 15_000);
    w.kill('SIGTERM');
    assert.equal((await w.exited).code, 0, w.stderr());
    const lines = w.stderr().trimEnd().split('\n');
    assert.equal(lines.length, 1, JSON.stringify(w.stderr()));
    assert.ok(!rawControl(lines[0]!), JSON.stringify(w.stderr()));
    assert.match(lines[0]!, /the stored fencing token 7\\u001b\]0;pwned.* is not an integer .*\(still watching\)$/);
    assert.ok(!rawControl(w.stdout()), JSON.stringify(w.stdout()));
  });
});
