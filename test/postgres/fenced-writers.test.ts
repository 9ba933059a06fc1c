/**
 * Issue 42 on PostgreSQL, the short version of the writers in `npm run chaos -- --backend
 * workloads`: 16 writer processes with random tokens on 2 keys at once, each write through
 * withPostgresFence, the history recorded and judged by the independent checker (test/porcupine;
 * docs/testing.md "Recorded histories"): the accepted tokens per key never go down and no
 * accepted write is lost. The SQLite version is in test/sqlite/history-check.test.ts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from '../support/cli.js';
import { startPostgres } from '../support/postgres.js';
import { formatFencedWriters, runFencedWriters } from '../chaos/workloads.js';

describe('16 writers through withPostgresFence at once', () => {
  const dir = tempDir('leasehold-fenced-writers-');
  after(dir.cleanup);

  it('with random tokens on 2 keys: a linearizable fenced register, some writes accepted and some refused', { timeout: 300_000 }, async () => {
    const server = await startPostgres();
    try {
      const r = await runFencedWriters({ dir: dir.path, seconds: 3, writers: 16, keys: 2, store: 'postgres', postgresUrl: server.url() });
      console.log(formatFencedWriters(r, 3));
      assert.equal(r.verdict.code, 0, r.verdict.output);
      const ops = Number(/fenced: (\d+) operations on 2 keys: linearizable/.exec(r.verdict.output)?.[1]);
      // Two per writer at least: the window is fixed, so a loaded machine gets fewer in (67 at a
      // load of 14, where 100 was asked); the counts below say the fence was exercised both ways.
      assert.ok(ops >= 32, `enough operations to mean something: ${r.verdict.output}`);
      // Non-trivial: the fence both let writes through and turned stale ones away, and reads were judged.
      assert.ok(r.counts.accepted >= 10 && r.counts.refused >= 10, `accepted and refused writes: ${JSON.stringify(r.counts)}`);
      assert.ok(r.counts.reads >= 10, `reads: ${JSON.stringify(r.counts)}`);
    } finally {
      await server.stop();
    }
  });
});
