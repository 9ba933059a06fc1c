import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { runCli, start, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

/**
 * A neighbour holds the database locked (`sqlite3 leases.db` left inside an exclusive
 * transaction) while a candidate or `leasehold status` starts: an outage of the store, not
 * bad input. status exits 3 with one line; a sidecar exits 1 with one line once the set-up's
 * patience runs out, so its supervisor restarts it.
 */
describe('a database locked by another process at start', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  function holdLock(db: string): Proc {
    const script = [
      'import sqlite3, sys, time',
      `c = sqlite3.connect(${JSON.stringify(db)}, isolation_level=None)`,
      "c.execute('PRAGMA locking_mode=EXCLUSIVE')",
      "c.execute('BEGIN EXCLUSIVE')",
      "c.execute('UPDATE leases SET fencing_token = fencing_token')",
      "print('locked', flush=True)",
      'time.sleep(60)',
    ].join('\n');
    const p = start('python3', ['-c', script]);
    procs.push(p);
    return p;
  }

  it('a write transaction held open (BEGIN IMMEDIATE) blocks writers only: status still reads the lease, a sidecar exits 1', { timeout: 90_000 }, async () => {
    const db = join(dir.path, 'immediate.db');
    const store = new SqliteLeaseStore(db);
    await store.create('y', { holderIdentity: 'peer', leaseDurationSeconds: 15, acquireTime: null, renewTime: new Date(), leaseTransitions: 2 });
    await store.close();
    const script = [
      'import sqlite3, time',
      `c = sqlite3.connect(${JSON.stringify(db)}, isolation_level=None)`,
      "c.execute('BEGIN IMMEDIATE')",
      "print('locked', flush=True)",
      'time.sleep(60)',
    ].join('\n');
    const lock = start('python3', ['-c', script]);
    procs.push(lock);
    await waitFor('the neighbour to hold the write lock', () => lock.stdout().includes('locked'), 10_000);
    // WAL: readers are not blocked by a writer (docs/neighbours.md says so).
    const status = await runCli(['status', '--db', db, '--lease', 'y']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^holder {3}peer$/m);
    const side = await runCli(['sidecar', '--db', db, '--lease', 'y', '--listen', 'off', '--log-format', 'text'], {}, undefined, 60_000);
    assert.equal(side.code, 1, side.stderr);
    assert.match(side.stderr, /^leasehold: .*locked by another process/m);
    lock.kill('SIGKILL');
    await lock.exited;
  });

  it('status exits 3 with one line, a sidecar exits 1 with one line; neither reports bad input', { timeout: 90_000 }, async () => {
    const db = join(dir.path, 'locked.db');
    await new SqliteLeaseStore(db).close(); // creates the table
    const lock = holdLock(db);
    await waitFor('the neighbour to hold the lock', () => lock.stdout().includes('locked'), 10_000);

    const status = await runCli(['status', '--db', db, '--lease', 'x']);
    assert.equal(status.code, 3, status.stderr);
    assert.equal(status.stderr.trim().split('\n').length, 1, status.stderr);
    assert.match(status.stderr, /locked by another process/);

    const statusDir = join(dir.path, 'status');
    const side = await runCli(
      ['sidecar', '--db', db, '--lease', 'x', '--listen', 'off', '--status-dir', statusDir, '--log-format', 'text'],
      {},
      undefined,
      60_000,
    );
    assert.equal(side.code, 1, side.stderr);
    assert.match(side.stderr, /^leasehold: .*locked by another process/m);
    assert.equal(
      side.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('leasehold:')).length,
      1,
      side.stderr,
    );
    lock.kill('SIGKILL');
    await lock.exited;
    assert.ok(existsSync(db));

    const after = await runCli(['status', '--db', db, '--lease', 'x']);
    assert.equal(after.code, 1, `the lock released, status reads the lease (absent): ${after.stderr}`);
  });
});
