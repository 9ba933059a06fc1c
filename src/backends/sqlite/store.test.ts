import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteLeaseStore, WATCH_EAGER_EVERY_MS } from './store.js';
import { FakeClock } from '../../testing/fake-clock.js';
import type { LeaseRecord } from '../lease-store.js';

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
  it('creates the tutorial table, column for column, plus a defaulted acquire_time and successor', async () => {
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
        ['successor', 'TEXT', 1, 0],
      ],
    );
    assert.deepEqual(
      cols.slice(-2).map((c) => c.dflt_value),
      ['0', "''"],
    );
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

  it("a write waiting on another's lock leaves the event loop free, and lands once the lock is let go", async () => {
    // SQLite's busy handler sleeps synchronously and counts the sleeps it asked for, not the time
    // that passed: under load a 448 ms busy timeout held a sidecar's event loop 870 ms, its renew
    // deadline's timer and `run`'s SIGKILL with it. Here the lock is let go by a timer that can
    // only fire while the write waits: a write that blocked the loop would run out its busy
    // timeout first and fail. Twice: the connection's first write, and a later one. SQLite applies
    // a PRAGMA's setting when it prepares the statement, so a switch prepared once per connection
    // (c3ee318, reverted) left the handler on for the first write, the one right after preparing.
    const path = fresh();
    const s = new SqliteLeaseStore(path, { busyTimeoutMs: 3000 });
    const blocked = async (write: () => Promise<unknown>): Promise<string[]> => {
      const blocker = new Database(path);
      blocker.exec('BEGIN IMMEDIATE');
      const events: string[] = [];
      const letGo = setTimeout(() => {
        events.push('timer fired');
        blocker.exec('ROLLBACK');
      }, 20);
      try {
        const written = write().then(
          () => events.push('written'),
          (e: { code: string }) => events.push(`refused ${e.code}`),
        );
        events.push('write sent');
        await written;
      } finally {
        clearTimeout(letGo);
        if (blocker.inTransaction) blocker.exec('ROLLBACK');
        blocker.close();
      }
      return events;
    };
    let v = '';
    assert.deepEqual(await blocked(async () => (v = await s.create('x', rec()))), ['write sent', 'timer fired', 'written'], "the connection's first write");
    assert.deepEqual(await blocked(() => s.update('x', rec({ holderIdentity: 'b' }), v)), ['write sent', 'timer fired', 'written'], 'a later write');
    assert.equal((await s.get('x'))!.record.holderIdentity, 'b');
    await s.close();
  });

  it('a write with waitForLock false answers unavailable at once on a locked file, without the busy timeout; the next write waits again', async () => {
    // A retried release must not wait on the lock at all (docs/design.md, "The end-of-term
    // gate"). The bounds are far apart: an answer within 500 ms is no wait of 1500 ms, however
    // slow the machine.
    const busyTimeoutMs = 1500;
    const path = fresh();
    const s = new SqliteLeaseStore(path, { busyTimeoutMs });
    const v = await s.create('x', rec());
    const gv = await s.createGroupRecord('g', {
      kind: 'member',
      index: 0,
      holderIdentity: 'a',
      session: 1,
      state: 'active',
      renewTime: t,
      leaseDurationSeconds: 15,
    });
    const blocker = new Database(path);
    blocker.exec('BEGIN IMMEDIATE');
    try {
      const timed = async (p: () => Promise<unknown>) => {
        const started = performance.now();
        return { answer: await code(p()), ms: performance.now() - started };
      };
      const noWait = { waitForLock: false };
      const calls = {
        update: await timed(() => s.update('x', rec({ holderIdentity: '' }), v, noWait)),
        create: await timed(() => s.create('y', rec(), noWait)),
        groupUpdate: await timed(() =>
          s.updateGroupRecord(
            'g',
            { kind: 'member', index: 0, holderIdentity: '', session: 1, state: 'leaving', renewTime: t, leaseDurationSeconds: 15 },
            gv,
            noWait,
          ),
        ),
        groupBatch: await timed(() =>
          s.writeGroupRecords(
            'g',
            [{ record: { kind: 'shard', index: 0, holderIdentity: 'a', owner: null, token: 1, acquireTime: null }, expectedVersion: null }],
            noWait,
          ),
        ),
      };
      for (const [name, c] of Object.entries(calls)) {
        assert.equal(c.answer, 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE', name);
        assert.ok(c.ms < 500, `${name} answered after ${Math.round(c.ms)} ms: it waited on the lock`);
      }
      // The busy timeout is restored: a write without the option waits it out again.
      const waited = await timed(() => s.update('x', rec({ holderIdentity: '' }), v));
      assert.equal(waited.answer, 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE');
      assert.ok(waited.ms >= busyTimeoutMs - 100, `a plain write gave up after ${Math.round(waited.ms)} ms`);
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
    }
    // Nothing was written, and once the lock is gone the same write lands.
    assert.equal((await s.get('x'))!.record.holderIdentity, 'a');
    assert.equal(await code(s.update('x', rec({ holderIdentity: '' }), v, { waitForLock: false })), 'ok');
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

describe('SqliteLeaseStore: the successor column', () => {
  const claim = { identity: 'b', claimedAt: new Date('2026-12-02T09:15:26.456Z') };
  const columnsOf = (path: string) => {
    const db = new Database(path, { readonly: true });
    try {
      return (db.prepare('PRAGMA table_info(leases)').all() as { name: string }[]).map((c) => c.name);
    } finally {
      db.close();
    }
  };
  /** An older table: leasehold's columns before the successor (acquire_time), with a row. */
  const oldTable = () => {
    const path = fresh();
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec(
      'CREATE TABLE leases (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token INTEGER NOT NULL, renew_time REAL NOT NULL, lease_duration_seconds REAL NOT NULL, acquire_time REAL NOT NULL DEFAULT 0)',
    );
    db.prepare('INSERT INTO leases VALUES (?, ?, ?, ?, ?, ?)').run('job', 'old', 3, 1_700_000_000.25, 5, 1_700_000_000);
    db.close();
    return path;
  };

  it('an older table: a reader (status) leaves it alone and keeps no claim; a writer adds the column and keeps claims', async () => {
    const path = oldTable();
    const before = readFileSync(path);
    const ro = new SqliteLeaseStore(path, { readonly: true });
    assert.equal(ro.successorClaims.kept(), false);
    const got = (await ro.get('job'))!;
    assert.equal(Object.hasOwn(got.record, 'successor'), false);
    await ro.close();
    assert.equal(columnsOf(path).includes('successor'), false, 'the reader added no column');
    assert.ok(readFileSync(path).equals(before), 'the reader wrote nothing');
    const s = new SqliteLeaseStore(path);
    try {
      assert.equal(s.successorClaims.kept(), true);
      assert.equal(columnsOf(path).at(-1), 'successor');
      const v1 = (await s.get('job'))!.version;
      assert.equal(v1, got.version, 'the new column, empty, leaves the version as it was');
      const v2 = await s.update('job', { ...got.record, successor: claim }, v1);
      assert.deepEqual((await s.get('job'))?.record.successor, claim);
      const ro2 = new SqliteLeaseStore(path, { readonly: true });
      assert.equal(ro2.successorClaims.kept(), true, 'a reader of the migrated table sees claims');
      assert.deepEqual(await ro2.get('job'), { record: { ...got.record, successor: claim }, version: v2 });
      await ro2.close();
    } finally {
      await s.close();
    }
  });

  it('a writer that knows nothing of the column (the Python candidates, raw SQL) still works beside claims', async () => {
    const path = fresh();
    const s = new SqliteLeaseStore(path);
    const peer = new Database(path);
    try {
      // The tutorial's statements, verbatim in their columns: the insert gets the default.
      peer
        .prepare('INSERT INTO leases (name, holder_identity, fencing_token, renew_time, lease_duration_seconds) VALUES (?, ?, ?, ?, ?)')
        .run('py', 'py', 1, 1_700_000_000, 5);
      const read = (await s.get('py'))!;
      assert.equal(Object.hasOwn(read.record, 'successor'), false);
      const v = await s.update('py', { ...read.record, successor: claim }, read.version);
      // The peer renews without a word about the claim: a conflict for leasehold, which re-reads.
      peer.prepare('UPDATE leases SET renew_time = ?, lease_duration_seconds = ? WHERE name = ?').run(1_700_000_001, 5, 'py');
      assert.equal(await code(s.update('py', { ...read.record, successor: null }, v)), 'LEASEHOLD_ERR_CONFLICT');
      const after = (await s.get('py'))!;
      assert.deepEqual(after.record.successor, claim, "the peer's write kept the claim it does not know");
      assert.equal(after.record.renewTime?.getTime(), 1_700_000_001_000);
    } finally {
      peer.close();
      await s.close();
    }
  });

  it('a malformed value written by a neighbour reads as no claim, never throws, and still moves the version', async () => {
    const path = fresh();
    const s = new SqliteLeaseStore(path);
    const peer = new Database(path);
    try {
      let v = await s.create('x', rec({ successor: claim }));
      for (const bad of [
        'garbage',
        '{"identity":5,"claimedAt":1}',
        '{"identity":"b","claimedAt":"2026-12-02T09:15:26.456Z"}',
        '{"identity":"b","claimedAt":1e300}',
        '[]',
        'null',
      ]) {
        peer.prepare('UPDATE leases SET successor = ? WHERE name = ?').run(bad, 'x');
        const got = (await s.get('x'))!;
        assert.equal(Object.hasOwn(got.record, 'successor'), false, bad);
        assert.notEqual(got.version, v, bad);
        v = got.version;
      }
    } finally {
      peer.close();
      await s.close();
    }
  });

  it("watch on a read-only store: another writer's create and update are each reported once, after the poll that sees the file move", async () => {
    const clock = new FakeClock();
    const path = fresh();
    const writer = new SqliteLeaseStore(path);
    await writer.create('other', rec({ holderIdentity: 'x' })); // the file and its table exist
    const reader = new SqliteLeaseStore(path, { readonly: true, clock });
    const seen: (string | null | undefined)[] = [];
    const stop = reader.watch('w', (e) => seen.push(e.record === null ? null : e.record?.record.holderIdentity), undefined);
    try {
      await writer.create('w', rec({ holderIdentity: 'a' }));
      await clock.advance(50);
      assert.deepEqual(seen, ['a']);
      const v = (await writer.get('w'))!.version;
      await writer.update('w', rec({ holderIdentity: 'b' }), v);
      await clock.advance(50);
      await clock.advance(50); // no change: nothing more
      assert.deepEqual(seen, ['a', 'b']);
      // Another lease's write moves the file, not this row: no event.
      const o = (await writer.get('other'))!.version;
      await writer.update('other', rec({ holderIdentity: 'y' }), o);
      await clock.advance(50);
      assert.deepEqual(seen, ['a', 'b']);
    } finally {
      stop();
      await reader.close();
      await writer.close();
    }
  });

  it('watch: while a pollQuicklyWhile question is true a commit by another connection is seen after the quick wait, else after the slow one; it is asked before each wait', async () => {
    const clock = new FakeClock();
    const path = fresh();
    const s = new SqliteLeaseStore(path, { clock });
    const other = new SqliteLeaseStore(path);
    let eager = false;
    const polls = { asked: 0 };
    const seen: (string | null | undefined)[] = [];
    const endQuick = s.successorClaims.pollQuicklyWhile('w', () => (polls.asked++, eager));
    const stop = s.watch('w', (e) => seen.push(e.record === null ? null : e.record?.record.holderIdentity), undefined);
    try {
      assert.equal(polls.asked, 1, 'polls.asked before the first wait');
      await other.create('w', rec({ holderIdentity: 'slow' }));
      await clock.advance(WATCH_EAGER_EVERY_MS);
      assert.deepEqual(seen, [], 'not eager: no poll before the slow interval');
      await clock.advance(50 - WATCH_EAGER_EVERY_MS);
      assert.deepEqual(seen, ['slow']);
      assert.equal(polls.asked, 2, 'one poll in 50 ms, then polls.asked again');
      eager = true;
      await clock.advance(50); // the wait chosen while not eager runs out
      const asks: number = polls.asked;
      const v = (await other.get('w'))!.version;
      await other.update('w', rec({ holderIdentity: 'quick' }), v);
      await clock.advance(WATCH_EAGER_EVERY_MS);
      assert.deepEqual(seen, ['slow', 'quick'], 'eager: seen after one quick wait');
      assert.equal(polls.asked, asks + 1, 'one poll');
      await clock.advance(50);
      assert.equal(polls.asked, asks + 1 + 50 / WATCH_EAGER_EVERY_MS, 'eager: a poll every quick interval');
      endQuick();
      await clock.advance(WATCH_EAGER_EVERY_MS);
      const ended = polls.asked;
      await clock.advance(100);
      assert.equal(polls.asked, ended, 'not asked once the asking ended');
      stop();
      const stopped = polls.asked;
      await clock.advance(500);
      assert.equal(polls.asked, stopped, 'no poll after stop');
      assert.equal(clock.pendingTimers(), 0);
    } finally {
      endQuick();
      stop();
      await other.close();
      await s.close();
    }
  });

  it('watch: everyMs sets the slow interval (the bench), and the quick one is never slower', async () => {
    const clock = new FakeClock();
    const s = new SqliteLeaseStore(fresh(), { clock });
    let asked = 0;
    let quick = false;
    const endQuick = s.successorClaims.pollQuicklyWhile('w', () => (asked++, quick));
    const stopSlow = s.watch('w', () => {}, undefined, { everyMs: 20 });
    await clock.advance(100);
    assert.equal(asked, 1 + 100 / 20);
    stopSlow();
    asked = 0;
    quick = true;
    const stopFast = s.watch('w', () => {}, undefined, { everyMs: 2 });
    await clock.advance(10);
    assert.equal(asked, 1 + 10 / 2);
    stopFast();
    endQuick();
    await s.close();
  });
});
