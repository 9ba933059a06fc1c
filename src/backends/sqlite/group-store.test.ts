/**
 * What the SQLite store does with the shard groups' records beyond the contract
 * (group-store.contract.test.ts): the table is its own and made only when a group is used, writes
 * in plain SQL move the version, a file replaced under the store voids every version read from
 * the old one, and values no store wrote are refused or bounded, never guessed at.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteLeaseStore } from './store.js';
import { CHANGES_INDEX } from './group-table.js';
import { contractShard, contractSlot } from '../../testing/group-store-contract.js';
import { FakeClock } from '../../testing/fake-clock.js';
import { GroupCache } from '../../shards/group-cache.js';
import type { VersionedGroupRecord } from '../group-store.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-sqlite-groups-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `g${n++}.db`);
const code = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code: string }) => e.code,
  );
function tablesOf(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT name FROM sqlite_schema WHERE type IN ('table', 'trigger') ORDER BY name").pluck().all() as string[];
  } finally {
    db.close();
  }
}
/** Runs `fn` on a connection of its own, as the sqlite3 shell would. */
function raw<T>(path: string, fn: (db: Database.Database) => T): T {
  const db = new Database(path);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

// The leases table with its write counts and their triggers (lease-version.ts).
const LEASE_TABLES = ['lease_versions', 'leases', 'leases_version_insert', 'leases_version_update'];

describe('SqliteLeaseStore as a group store, on a real file', () => {
  it("a file no group uses keeps the tutorial's table alone; the first group call adds lease_groups, its counter and triggers", async () => {
    const path = fresh();
    const store = new SqliteLeaseStore(path);
    try {
      await store.create('lease', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: new Date(), leaseTransitions: 1 });
      assert.deepEqual(tablesOf(path), LEASE_TABLES);
      assert.deepEqual(await store.listGroup('g'), []);
      assert.deepEqual(tablesOf(path), [
        'lease_groups',
        'lease_groups_deletion',
        'lease_groups_deletions',
        'lease_groups_key_move',
        'lease_groups_mark_seed',
        'lease_groups_version',
        'lease_groups_version_insert',
        'lease_groups_version_update',
        ...LEASE_TABLES,
      ]);
      // A lease and a group of the same name never meet.
      await store.createGroupRecord('lease', contractSlot(0));
      assert.equal((await store.get('lease'))?.record.holderIdentity, 'a');
    } finally {
      await store.close();
    }
  });

  it("each write's version draw reads the index on version, not every row; a file made before the index gets it at its first group call", async () => {
    const path = fresh();
    const first = new SqliteLeaseStore(path);
    await first.createGroupRecord('g', contractSlot(0)).finally(() => first.close());
    // As a file written by a release without the index.
    raw(path, (db) => db.exec('DROP INDEX lease_groups_by_version'));
    const store = new SqliteLeaseStore(path);
    try {
      await store.listGroup('g');
      const plan = raw(path, (db) =>
        db
          .prepare('EXPLAIN QUERY PLAN SELECT coalesce(max(version), 0) FROM lease_groups')
          .all()
          .map((r) => (r as { detail: string }).detail),
      );
      // Without the index the draw is a SCAN of the table on every write: a batch of N writes reads N × N rows.
      assert.deepEqual(plan, ['SEARCH lease_groups USING COVERING INDEX lease_groups_by_version']);
    } finally {
      await store.close();
    }
  });

  it('a write in plain SQL that leaves the version alone moves it all the same: the earlier version is stale', async () => {
    const path = fresh();
    const store = new SqliteLeaseStore(path);
    try {
      const v1 = await store.createGroupRecord('g', contractShard(0));
      raw(path, (db) => db.prepare("UPDATE lease_groups SET holder_identity = 'by-hand' WHERE group_name = 'g'").run());
      const [after] = await store.listGroup('g');
      assert.equal((after!.record as { holderIdentity: string }).holderIdentity, 'by-hand');
      assert.notEqual(after!.version, v1);
      assert.equal(await code(store.updateGroupRecord('g', contractShard(0, { token: 2 }), v1)), 'LEASEHOLD_ERR_CONFLICT');
    } finally {
      await store.close();
    }
  });

  it('with its counter row deleted, versions go on past every version still in the table', async () => {
    const path = fresh();
    const store = new SqliteLeaseStore(path);
    try {
      const seen = [await store.createGroupRecord('g', contractSlot(0)), await store.createGroupRecord('g', contractSlot(1))];
      seen.push(await store.updateGroupRecord('g', contractSlot(1, { session: 2 }), seen[1]!));
      raw(path, (db) => db.exec('DELETE FROM lease_groups_version'));
      const next = await store.updateGroupRecord('g', contractSlot(0, { session: 2 }), seen[0]!);
      assert.ok(!seen.includes(next), `${next} was issued before`);
      assert.equal(await code(store.updateGroupRecord('g', contractSlot(1, { session: 3 }), seen[1]!)), 'LEASEHOLD_ERR_CONFLICT');
    } finally {
      await store.close();
    }
  });

  it('a file replaced under the store: the call that finds it fails as reopened, and no version read from the old file matches the new one', async () => {
    const path = fresh();
    const store = new SqliteLeaseStore(path);
    try {
      const v1 = await store.createGroupRecord('g', contractSlot(0));
      const v2 = await store.updateGroupRecord('g', contractSlot(0, { session: 2 }), v1);
      for (const f of ['', '-wal', '-shm']) rmSync(path + f, { force: true });
      // A new file (a backup restored, say) whose record has the very counter the old one had.
      const other = new SqliteLeaseStore(path);
      const w1 = await other.createGroupRecord('g', contractSlot(0));
      await other.updateGroupRecord('g', contractSlot(0, { session: 2 }), w1);
      await other.close();
      assert.equal(await code(store.listGroup('g')), 'LEASEHOLD_ERR_STORE_REOPENED');
      const [now] = await store.listGroup('g');
      assert.equal(now!.version.split('.')[1], v2.split('.')[1], 'the same counter in the new file');
      assert.equal(await code(store.updateGroupRecord('g', contractSlot(0, { session: 3 }), v2)), 'LEASEHOLD_ERR_CONFLICT');
      assert.equal(await code(store.updateGroupRecord('g', contractSlot(0, { session: 3 }), now!.version)), 'ok');
    } finally {
      await store.close();
    }
  });

  it('a value over its bound is read as a note of its size and told once; a value no store writes is an invalid record', async () => {
    const path = fresh();
    const told: string[] = [];
    const store = new SqliteLeaseStore(path, { onOversized: (m) => told.push(m) });
    try {
      await store.createGroupRecord('g', contractSlot(0));
      raw(path, (db) => db.prepare("UPDATE lease_groups SET holder_identity = ? WHERE group_name = 'g'").run('x'.repeat(10_000)));
      for (let i = 0; i < 2; i++) {
        const [got] = await store.listGroup('g');
        assert.equal((got!.record as { holderIdentity: string }).holderIdentity, '(a value of 10000 bytes)');
      }
      assert.equal(told.length, 1);
      assert.match(told[0]!, /record member\/0 of group g .*holder_identity: 10000 bytes/);
      raw(path, (db) => db.prepare("UPDATE lease_groups SET state = 'gone\n' WHERE group_name = 'g'").run());
      await assert.rejects(
        store.listGroup('g'),
        (e: { code: string; message: string }) => e.code === 'LEASEHOLD_ERR_INVALID_RECORD' && /state "gone\\n"/.test(e.message),
      );
    } finally {
      await store.close();
    }
  });

  it('a reader (status) lists a group without writing, [] from a file no group has used, and its watch hints at a change', async () => {
    const path = fresh();
    const writer = new SqliteLeaseStore(path);
    const clock = new FakeClock();
    const reader = new SqliteLeaseStore(path, { readonly: true, clock });
    try {
      assert.deepEqual(await reader.listGroup('g'), []);
      assert.deepEqual(tablesOf(path), LEASE_TABLES, 'the reader created nothing');
      await writer.createGroupRecord('g', contractSlot(0));
      assert.deepEqual(
        (await reader.listGroup('g')).map((r) => r.record),
        [contractSlot(0)],
      );
      await assert.rejects(reader.createGroupRecord('g', contractSlot(1)), { code: 'LEASEHOLD_ERR_BACKEND' });
      let hints = 0;
      const stop = reader.watchGroup('g', () => hints++);
      try {
        await clock.advance(50);
        assert.equal(hints, 0, 'nothing changed');
        await writer.createGroupRecord('other', contractSlot(0));
        await clock.advance(50);
        assert.equal(hints, 0, "another group's write");
        await writer.createGroupRecord('g', contractSlot(1));
        await clock.advance(50);
        assert.equal(hints, 1);
      } finally {
        stop();
      }
    } finally {
      await reader.close();
      await writer.close();
    }
  });

  it('a file made before the changes index gets it from the first group call, keeps its records and versions, and changes are read through it', async () => {
    const path = fresh();
    const first = new SqliteLeaseStore(path);
    const v0 = await first.createGroupRecord('g', contractSlot(0));
    for (let i = 0; i < 64; i++) await first.createGroupRecord('g', contractShard(i));
    await first.close();
    // What the previous schema made: the same table, counter and triggers, without the index.
    raw(path, (db) => db.exec(`DROP INDEX ${CHANGES_INDEX}`));
    const indexes = () => raw(path, (db) => db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND name = ?").pluck().all(CHANGES_INDEX));
    assert.deepEqual(indexes(), []);
    const store = new SqliteLeaseStore(path);
    try {
      const full = await store.readGroupChanges('g', undefined);
      assert.deepEqual(indexes(), [CHANGES_INDEX]);
      assert.equal(full.full, true);
      assert.equal(full.records.length, 65);
      assert.equal(full.records.find((r) => r.record.kind === 'member')?.version, v0, 'the versions read before are still the versions');
      const v1 = await store.updateGroupRecord('g', contractSlot(0, { session: 2 }), v0);
      const next = await store.readGroupChanges('g', full.cursor);
      // The deletion marks came with the index: the file's first group call made what it lacked.
      assert.deepEqual(next, { records: [{ record: contractSlot(0, { session: 2 }), version: v1 }], cursor: v1, full: false, deletionMark: full.deletionMark });
      assert.equal(typeof full.deletionMark, 'string', 'the group made before marks has none');
      // The read goes through the index, so its cost is the changes', not the group's size.
      const plan = raw(path, (db) =>
        db
          .prepare("EXPLAIN QUERY PLAN SELECT * FROM lease_groups WHERE group_name = 'g' AND version > 5")
          .all()
          .map((r) => (r as { detail: string }).detail)
          .join('; '),
      );
      assert.match(plan, new RegExp(`USING INDEX ${CHANGES_INDEX} \\(group_name=\\? AND version>\\?\\)`));
      // Opened again, nothing more to make: the schema is whole.
      await store.readGroupChanges('g', next.cursor);
      assert.deepEqual(indexes(), [CHANGES_INDEX]);
    } finally {
      await store.close();
    }
  });

  it('a file made before deletion marks: a reader counts its records until a writer opens it, which adds them; then a deletion by hand moves the mark', async () => {
    const path = fresh();
    const first = new SqliteLeaseStore(path);
    await first.createGroupRecord('g', contractSlot(0));
    for (let i = 0; i < 3; i++) await first.createGroupRecord('g', contractShard(i));
    await first.close();
    // What the schema before them made: no deletions table, no trigger.
    raw(path, (db) =>
      db.exec('DROP TRIGGER lease_groups_deletion; DROP TRIGGER lease_groups_key_move; DROP TRIGGER lease_groups_mark_seed; DROP TABLE lease_groups_deletions'),
    );
    const reader = new SqliteLeaseStore(path, { readonly: true });
    const store = new SqliteLeaseStore(path);
    try {
      const counted = await reader.readGroupChanges('g', undefined);
      assert.equal(counted.total, 4, 'a file without marks is counted');
      raw(path, (db) => db.exec("DELETE FROM lease_groups WHERE kind = 'shard' AND idx = 0"));
      const stillCounted = await reader.readGroupChanges('g', counted.cursor);
      assert.deepEqual({ full: stillCounted.full, total: stillCounted.total }, { full: false, total: 3 }, 'the deletion shows in the count');
      assert.deepEqual(tablesOf(path).includes('lease_groups_deletions'), false, 'the reader created the table');

      const full = await store.readGroupChanges('g', undefined);
      assert.equal(full.records.length, 3);
      assert.equal(typeof full.deletionMark, 'string', 'a writer made no mark for the group');
      // The reader too, now the file has them (a cursor is its store's own).
      const idle = await reader.readGroupChanges('g', (await reader.readGroupChanges('g', undefined)).cursor);
      assert.deepEqual({ full: idle.full, marked: typeof idle.deletionMark, total: idle.total }, { full: false, marked: 'string', total: undefined });
      // A process of the version before marks: its deletions (a sqlite3 shell's too) go through the file's trigger.
      raw(path, (db) => db.exec("DELETE FROM lease_groups WHERE kind = 'shard' AND idx = 1"));
      const after = await store.readGroupChanges('g', full.cursor);
      assert.equal(after.full, false);
      assert.ok(typeof after.deletionMark === 'string', `the deletion left no mark: ${String(after.deletionMark)}`);
      // A record moved to another key by hand: gone from its old one, so marked as a deletion there.
      raw(path, (db) => db.exec("UPDATE lease_groups SET idx = 7 WHERE kind = 'shard' AND idx = 2"));
      const moved = await store.readGroupChanges('g', after.cursor);
      assert.notEqual(moved.deletionMark, after.deletionMark, 'a key moved by hand left no mark');
      assert.deepEqual(
        moved.records.map((r) => `${r.record.kind}/${r.record.index}`),
        ['shard/7'],
      );
      // The marks row deleted by hand reads as none: a reader cannot tell (GroupCache reads in full).
      raw(path, (db) => db.exec('DELETE FROM lease_groups_deletions'));
      assert.equal((await store.readGroupChanges('g', moved.cursor)).deletionMark, null);
      // A new group's mark is there from its first record, before any deletion.
      await store.createGroupRecord('h', contractSlot(0));
      await store.createGroupRecord('h', contractShard(0));
      let h = await store.readGroupChanges('h', undefined);
      assert.equal(typeof h.deletionMark, 'string');
      /** The next read of h from the last: its mark moved (a deletion shown). */
      const hMoved = async () => {
        const next = await store.readGroupChanges('h', h.cursor);
        const shown = next.deletionMark !== h.deletionMark;
        h = next;
        return shown;
      };
      // Its mark row deleted by hand with a record, then made again by the store's own create:
      // past the counter, not the mark a reader holds.
      raw(path, (db) =>
        db.exec("DELETE FROM lease_groups WHERE group_name = 'h' AND kind = 'shard'; DELETE FROM lease_groups_deletions WHERE group_name = 'h'"),
      );
      await store.createGroupRecord('h', contractShard(1));
      assert.equal(await hMoved(), true, 'a deletion with the mark row made again read as none');
      // A REPLACE INTO a new key after a deletion, and an INSERT OR ABORT: the outer conflict
      // policy does not reach the mark (it neither resets it nor fails).
      raw(path, (db) => db.exec("DELETE FROM lease_groups WHERE group_name = 'h' AND kind = 'shard' AND idx = 1"));
      raw(path, (db) => db.exec("REPLACE INTO lease_groups (group_name, kind, idx, holder_identity, token) VALUES ('h', 'shard', 5, '', 1)"));
      assert.equal(await hMoved(), true, 'a REPLACE INTO after the deletion reset the mark');
      raw(path, (db) => db.exec("INSERT OR ABORT INTO lease_groups (group_name, kind, idx, holder_identity, token) VALUES ('h', 'shard', 6, '', 1)"));
      assert.equal(await hMoved(), false);
      // The deletion trigger dropped by hand while the store runs: made again at its next call,
      // and every group's mark moves, so a deletion made meanwhile is not missed.
      raw(path, (db) => db.exec("DROP TRIGGER lease_groups_deletion; DELETE FROM lease_groups WHERE group_name = 'h' AND idx = 5"));
      assert.equal(await hMoved(), true, 'a deletion made while its trigger was dropped left the mark');
      assert.ok(tablesOf(path).includes('lease_groups_deletion'), 'the trigger was not made again');
      // Dropped and made again by hand between two calls of the store: the schema moved under it.
      raw(path, (db) => {
        const sql = db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'lease_groups_deletion'").pluck().get() as string;
        db.exec(`DROP TRIGGER lease_groups_deletion; DELETE FROM lease_groups WHERE group_name = 'h' AND idx = 6; ${sql}`);
      });
      assert.equal(await hMoved(), true, 'a deletion made while its trigger was dropped and made again left the mark');
    } finally {
      await reader.close();
      await store.close();
    }
  });

  it('a cursor the file cannot continue from gets a full read: the file replaced, its counter reset below the cursor', async () => {
    const path = fresh();
    const store = new SqliteLeaseStore(path);
    try {
      await store.createGroupRecord('g', contractSlot(0));
      await store.createGroupRecord('g', contractShard(0));
      await store.createGroupRecord('g', contractShard(2));
      const cursor = (await store.readGroupChanges('g', undefined)).cursor;
      // The newest records and then the counter row deleted by hand: the next draw is below the
      // cursor. (With only the newest deleted, it would be past it: each deletion draws a version
      // for its mark, as a write does.)
      raw(path, (db) => db.exec("DELETE FROM lease_groups WHERE kind = 'shard'; DELETE FROM lease_groups_version"));
      await store.createGroupRecord('g', contractShard(1));
      const reset = await store.readGroupChanges('g', cursor);
      assert.equal(reset.full, true);
      assert.deepEqual(
        reset.records.map((r) => r.record).sort((a, b) => a.kind.localeCompare(b.kind)),
        [contractSlot(0), contractShard(1)],
      );

      for (const f of ['', '-wal', '-shm']) rmSync(path + f, { force: true });
      const other = new SqliteLeaseStore(path);
      for (let i = 0; i < 8; i++) await other.createGroupRecord('g', contractShard(i));
      await other.close();
      assert.equal(await code(store.readGroupChanges('g', reset.cursor)), 'LEASEHOLD_ERR_STORE_REOPENED');
      const replaced = await store.readGroupChanges('g', reset.cursor);
      assert.equal(replaced.full, true, 'a cursor from the old file was continued in the new one');
      assert.equal(replaced.records.length, 8);
    } finally {
      await store.close();
    }
  });

  it("a version set by hand below a member's cursor: no change to its reads, found at the read after a write it made lose", async () => {
    const path = fresh();
    const store = new SqliteLeaseStore(path);
    try {
      await store.createGroupRecord('g', contractSlot(0));
      for (let i = 0; i < 4; i++) await store.createGroupRecord('g', contractShard(i));
      const cache = new GroupCache(store, 'g');
      const writer = cache.writer();
      await cache.read();
      const shard = (list: VersionedGroupRecord[], i: number) => list.find((r) => r.record.kind === 'shard' && r.record.index === i)!;
      const before = shard(cache.snapshot(), 2);
      // The sqlite3 shell: the row rewritten with a version of its own, below the cursor (no draw).
      raw(path, (db) => db.exec("UPDATE lease_groups SET token = 7, version = 1 WHERE kind = 'shard' AND idx = 2"));
      assert.equal(shard(await cache.read(), 2).version, before.version, 'a read by change brought it');
      await assert.rejects(writer.updateGroupRecord('g', contractShard(2, { token: 2 }), before.version), { code: 'LEASEHOLD_ERR_CONFLICT' });
      const after = await cache.read();
      assert.deepEqual(shard(after, 2).record, contractShard(2, { token: 7 }), 'the copy after the lost write');
      assert.deepEqual(after.map((r) => r.version).sort(), (await store.listGroup('g')).map((r) => r.version).sort());
    } finally {
      await store.close();
    }
  });

  it('a reader (status) reads changes without writing: a full read of nothing from a file no group has used, then what a writer wrote', async () => {
    const path = fresh();
    const writer = new SqliteLeaseStore(path);
    const reader = new SqliteLeaseStore(path, { readonly: true });
    try {
      await writer.create('lease', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: new Date(), leaseTransitions: 1 });
      const none = await reader.readGroupChanges('g', undefined);
      // No table to read a mark from: a file no group has used counts its records (none).
      assert.deepEqual({ ...none, cursor: '' }, { records: [], cursor: '', full: true, total: 0 });
      assert.deepEqual(tablesOf(path), LEASE_TABLES, 'the reader created nothing');
      const v = await writer.createGroupRecord('g', contractSlot(0));
      const all = await reader.readGroupChanges('g', none.cursor);
      // Each store names its own file generation in a version; the counter is the file's.
      assert.deepEqual(
        all.records.map((r) => [r.record, r.version.split('.')[1]]),
        [[contractSlot(0), v.split('.')[1]]],
      );
      await writer.createGroupRecord('g', contractShard(0));
      const next = await reader.readGroupChanges('g', all.cursor);
      assert.deepEqual(
        next.records.map((r) => r.record),
        [contractShard(0)],
      );
      assert.equal(next.full, false);
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});
