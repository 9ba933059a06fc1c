/**
 * withSqliteFence with real processes on one SQLite file: a writer paused (SIGSTOP) past a
 * newer writer's write is refused when it resumes, and nothing of its write lands.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { pausedWriterScenario } from '../support/fenced-pause.js';
import { createSqliteFenceTable, withSqliteFence } from '../../src/fencing/index.js';

describe('withSqliteFence: a writer paused past a newer write', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it('resumes, is refused with LEASEHOLD_ERR_STALE_TOKEN, and commits nothing', { timeout: 120_000 }, async () => {
    const path = join(dir.path, 'data.db');
    const db = new Database(path, { timeout: 10_000 });
    try {
      db.pragma('journal_mode = WAL');
      createSqliteFenceTable(db);
      db.exec('CREATE TABLE fenced_data (key TEXT NOT NULL, token INTEGER NOT NULL, label TEXT NOT NULL)');
      const out = await pausedWriterScenario(
        {
          store: 'sqlite',
          target: path,
          write: async (key, token, label) =>
            void withSqliteFence(db, { key, token }, (tx) => tx.prepare('INSERT INTO fenced_data (key, token, label) VALUES (?, ?, ?)').run(key, token, label)),
          labels: async () => (db.prepare('SELECT label FROM fenced_data ORDER BY rowid').all() as { label: string }[]).map((r) => r.label),
          fence: async (key) => (db.prepare('SELECT token FROM leasehold_fences WHERE key = ?').get(key) as { token: number } | undefined)?.token,
        },
        'billing',
        procs,
      );
      assert.deepEqual(
        [out.a.written, out.a.code, out.a.key, out.a.presented, out.a.highest],
        [false, 'LEASEHOLD_ERR_STALE_TOKEN', 'billing', 1, 2],
        JSON.stringify(out.a),
      );
      assert.match(out.a.message!, /fencing token 1 for key "billing" is behind the highest token accepted for it \(2\)/);
      assert.deepEqual(out.labels, ['A: first value', 'B: fresh value'], "nothing of A's stale write committed");
      assert.equal(out.fence, 2);
    } finally {
      db.close();
    }
  });
});
