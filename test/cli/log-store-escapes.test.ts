/**
 * A peer stores a holder carrying what a terminal acts on beyond JSON's own escapes: a C1 control
 * (CSI, U+009B) and a bidi override (U+202E). A standby logs the holder it observes, in both log
 * formats: escaped, a `kubectl logs` on a terminal shows it as written, without acting on it, and
 * a JSON line still parses to the stored value (a real SQLite file, a real sidecar process).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';

const HOLDER = 'peer\u009b31m\u202eloot\u001b[2J';
/** What a terminal acts on: C0 (but the line's end), DEL, C1, and the invisible format characters. */
const actedOn = (text: string) => [...text].some((c) => (c !== '\n' && /\p{Cc}/u.test(c)) || /\p{Cf}/u.test(c));

describe('a holder with C1 controls and a bidi override, in the log', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');

  it('setup: a real SQLite file held by the hostile holder', () => {
    const d = new Database(db);
    d.pragma('journal_mode = WAL');
    d.exec(`CREATE TABLE leases (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token INTEGER NOT NULL,
      renew_time REAL NOT NULL, lease_duration_seconds REAL NOT NULL, acquire_time REAL NOT NULL DEFAULT 0, successor TEXT NOT NULL DEFAULT '')`);
    d.prepare('INSERT INTO leases VALUES (?, ?, ?, ?, ?, ?, ?)').run('esc', HOLDER, 5, Date.now() / 1000, 600, Date.now() / 1000, '');
    d.close();
  });

  for (const format of ['json', 'text']) {
    it(`--log-format ${format}: the holder escaped`, { timeout: 30_000 }, async () => {
      const p = startCli(['sidecar', '--db', db, '--lease', 'esc', '--identity', 'b', '--listen', 'off', '--log-format', format]);
      procs.push(p);
      const line = await waitFor(
        'the observed leader line',
        () =>
          p
            .stderr()
            .split('\n')
            .find((l) => l.includes('new leader observed')),
        20_000,
      );
      p.kill('SIGTERM');
      assert.equal((await p.exited).code, 0, p.stderr());
      assert.ok(!actedOn(p.stderr()), JSON.stringify(p.stderr()));
      if (format === 'json') assert.equal((JSON.parse(line) as { holder: string }).holder, HOLDER);
      else assert.match(line, /holder="peer\\u009b31m\\u202eloot\\u001b\[2J"/);
    });
  }
});
