import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteLeaseStore } from './sqlite-store.js';
import type { LeaseRecord } from './lease-store.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-sqlite-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `t${n++}.db`);
const t = new Date('2026-12-02T09:15:24.123Z');
const rec = (over: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: 'a',
  leaseDurationSeconds: 15,
  acquireTime: t,
  renewTime: t,
  leaseTransitions: 1,
  ...over,
});
const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code: string }) => e.code,
  );

describe('SqliteLeaseStore on a real file', () => {
  it('creates the tutorial table, column for column, plus a defaulted acquire_time', async () => {
    const path = fresh();
    await new SqliteLeaseStore(path).close();
    const db = new Database(path, { readonly: true });
    const cols = db.prepare('PRAGMA table_info(leases)').all() as { name: string; type: string; notnull: number; pk: number; dflt_value: string | null }[];
    db.close();
    assert.deepEqual(
      cols.map((c) => [c.name, c.type, c.notnull, c.pk]),
      [
        ['name', 'TEXT', 0, 1],
        ['holder_identity', 'TEXT', 1, 0],
        ['fencing_token', 'INTEGER', 1, 0],
        ['renew_time', 'REAL', 1, 0],
        ['lease_duration_seconds', 'REAL', 1, 0],
        ['acquire_time', 'REAL', 1, 0],
      ],
    );
    assert.equal(cols.at(-1)!.dflt_value, '0');
  });

  it('is durable: WAL with synchronous=FULL', async () => {
    const path = fresh();
    const s = new SqliteLeaseStore(path);
    await s.close();
    const db = new Database(path);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    db.close();
  });

  it('compare-and-swap: create once, update only from the version read', async () => {
    const s = new SqliteLeaseStore(fresh());
    assert.equal(await s.get('x'), null);
    const v1 = await s.create('x', rec());
    assert.equal(await code(s.create('x', rec())), 'LEASEHOLD_ERR_CONFLICT');
    const v2 = await s.update('x', rec({ renewTime: new Date(t.getTime() + 1000) }), v1);
    assert.notEqual(v1, v2);
    assert.equal(await code(s.update('x', rec({ holderIdentity: 'b' }), v1)), 'LEASEHOLD_ERR_CONFLICT', 'a stale version never overwrites');
    assert.equal((await s.get('x'))?.record.holderIdentity, 'a');
    assert.equal(await code(s.update('nope', rec(), v2)), 'LEASEHOLD_ERR_CONFLICT');
    const got = (await s.get('x'))!;
    assert.deepEqual(got.record, rec({ renewTime: new Date(t.getTime() + 1000) }));
    assert.equal(got.version, v2);
    await s.close();
  });

  it("a write by another connection (the tutorial's Python peers know no versions) is a conflict", async () => {
    const path = fresh();
    const s = new SqliteLeaseStore(path);
    const v = await s.create('x', rec());
    const other = new Database(path);
    other.prepare('UPDATE leases SET renew_time = ? WHERE name = ?').run(Date.now() / 1000, 'x');
    other.close();
    assert.equal(await code(s.update('x', rec({ holderIdentity: 'b' }), v)), 'LEASEHOLD_ERR_CONFLICT');
    await s.close();
  });

  it('reads rows written without acquire_time (tutorial peers) and survives reopening', async () => {
    const path = fresh();
    const db = new Database(path);
    db.exec(
      'CREATE TABLE leases (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token INTEGER NOT NULL, renew_time REAL NOT NULL, lease_duration_seconds REAL NOT NULL)',
    );
    db.prepare('INSERT INTO leases VALUES (?, ?, ?, ?, ?)').run('job', 'py', 7, 1_700_000_000.25, 5);
    db.close();
    const ro = new SqliteLeaseStore(path, { readonly: true });
    assert.equal((await ro.get('job'))?.record.acquireTime, null, 'read-only: works on the bare tutorial table');
    await ro.close();
    const s = new SqliteLeaseStore(path);
    const got = (await s.get('job'))!;
    assert.deepEqual(got.record, {
      holderIdentity: 'py',
      leaseDurationSeconds: 5,
      acquireTime: null,
      renewTime: new Date(1_700_000_000_250),
      leaseTransitions: 7,
    });
    await s.close();
  });

  it('a database deleted under it: the operation that finds it fails once as reopened, the next uses the new file', async () => {
    const path = fresh();
    const told: string[] = [];
    const store = new SqliteLeaseStore(path, { onReopen: (m) => told.push(m) });
    try {
      await store.create('r', rec());
      for (const f of ['', '-wal', '-shm']) rmSync(path + f, { force: true });
      assert.equal(await code(store.get('r')), 'LEASEHOLD_ERR_STORE_REOPENED');
      assert.equal(told.length, 1);
      assert.match(told[0]!, /was replaced or deleted/);
      assert.equal(await store.get('r'), null, 'the new file has no record');
      assert.equal(told.length, 1, 'told once per replacement');
    } finally {
      await store.close();
    }
  });

  it('a reader (status, --watch) follows a database replaced under it, instead of reading the dead file', async () => {
    const path = fresh();
    const a = new SqliteLeaseStore(path);
    await a.create('r', rec({ leaseTransitions: 5 }));
    await a.close();
    const reader = new SqliteLeaseStore(path, { readonly: true });
    try {
      assert.equal((await reader.get('r'))?.record.leaseTransitions, 5);
      for (const f of ['', '-wal', '-shm']) rmSync(path + f, { force: true });
      const b = new SqliteLeaseStore(path);
      await b.create('r', rec({ holderIdentity: 'other', leaseTransitions: 7 }));
      await b.close();
      assert.equal((await reader.get('r'))?.record.leaseTransitions, 7, 'the record of the file the path names now');
    } finally {
      await reader.close();
    }
  });

  it('refuses a file that is not SQLite, without changing it', () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'not a database\n');
    assert.throws(
      () => new SqliteLeaseStore(path),
      (e: { code: string; message: string }) => e.code === 'LEASEHOLD_ERR_STORE_OPEN' && /is not an SQLite database/.test(e.message),
    );
    assert.equal(readFileSync(path, 'utf8'), 'not a database\n');
  });

  it('a busy file surfaces as unavailable after the busy timeout, never as a silent failure', async () => {
    const path = fresh();
    const s = new SqliteLeaseStore(path, { busyTimeoutMs: 50 });
    const v = await s.create('x', rec());
    const blocker = new Database(path);
    blocker.exec('BEGIN IMMEDIATE');
    assert.equal(await code(s.update('x', rec(), v)), 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE');
    blocker.exec('ROLLBACK');
    blocker.close();
    assert.equal(await code(s.update('x', rec(), v)), 'ok');
    await s.close();
  });

  it('refuses a file on a network filesystem for every caller (the library too), creating nothing; allowNetworkFilesystem accepts it', async () => {
    const nfs = () => ({ type: 0x6969 });
    const path = fresh();
    assert.throws(
      () => new SqliteLeaseStore(path, { statfs: nfs }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'LEASEHOLD_ERR_STORE_OPEN');
        assert.match(err.message, /is on a network filesystem \(nfs\).*the store setting allowNetworkFilesystem: true$/);
        return true;
      },
    );
    assert.equal(existsSync(path), false, 'nothing created');
    const s = new SqliteLeaseStore(path, { statfs: nfs, allowNetworkFilesystem: true });
    await s.close();
    assert.equal(existsSync(path), true);
  });
});
