/**
 * withSqliteFence with real processes on one SQLite file: a writer paused (SIGSTOP) past a
 * newer writer's write is refused when it resumes, and nothing of its write lands.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { REPO, start, waitFor, type Proc } from '../support/cli.js';
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

describe('withSqliteFence: 8 writer processes at once on one file', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it('no key goes back, no accepted write lost, nothing refused committed', { timeout: 180_000 }, async () => {
    const path = join(dir.path, 'many.db');
    const db = new Database(path, { timeout: 10_000 });
    try {
      db.pragma('journal_mode = WAL');
      createSqliteFenceTable(db);
      db.exec('CREATE TABLE fenced_data (key TEXT NOT NULL, token INTEGER NOT NULL, label TEXT NOT NULL)');
      const keys = ['k0', 'k1', 'k2'];
      for (let w = 0; w < 8; w++) {
        const arg = { store: 'sqlite', target: path, key: '', token: 1, label: `w${w}`, loop: { ms: 3_000, seed: 1000 + w, keys } };
        procs.push(start(process.execPath, ['--import', 'tsx', join(REPO, 'test/support/fenced-writer.ts'), JSON.stringify(arg)]));
      }
      await waitFor('the writers to be ready', () => procs.every((p) => p.stdout().includes('"ready":true')), 120_000);
      for (const p of procs) p.child.stdin!.write('go\n');
      // Until each writer's stdout is closed, not only until it exited: its report is one long
      // line, and 'exit' can come before the last of it is read here.
      await Promise.all(
        procs.map(async (p) => {
          await p.exited;
          if (!p.child.stdout!.closed) await once(p.child.stdout!, 'close');
        }),
      );
      const reports = procs.map((p) => {
        const line = p
          .stdout()
          .split('\n')
          .find((l) => l.startsWith('{"accepted"'));
        assert.ok(line, p.stderr());
        return JSON.parse(line) as { accepted: string[]; stale: number };
      });
      const accepted = new Set(reports.flatMap((r) => r.accepted));
      // BEGIN IMMEDIATE serializes the writers: rowid order is commit order.
      const rows = db.prepare('SELECT key, token, label FROM fenced_data ORDER BY rowid').all() as { key: string; token: number; label: string }[];
      const last = new Map<string, number>();
      for (const r of rows) {
        assert.ok(r.token >= (last.get(r.key) ?? 0), `key ${r.key}: token ${r.token} committed after ${last.get(r.key)}`);
        last.set(r.key, r.token);
        assert.ok(accepted.has(r.label), `${r.label} committed but its writer was refused`);
      }
      assert.equal(rows.length, accepted.size, 'every accepted write is in the file, and only those');
      for (const k of keys)
        assert.equal((db.prepare('SELECT token FROM leasehold_fences WHERE key = ?').get(k) as { token: number } | undefined)?.token, last.get(k));
      const stale = reports.reduce((a, r) => a + r.stale, 0);
      assert.ok(accepted.size > 8 && stale > 0, `accepted ${accepted.size}, stale ${stale}`);
    } finally {
      db.close();
    }
  });
});
