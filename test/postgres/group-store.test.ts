/**
 * What the PostgreSQL store does with the shard groups' records beyond the contract
 * (group-store.contract.test.ts), on a real server: the table is made only when a group is used,
 * in the lease table's schema; a role that may create nothing is told the SQL to run; another
 * role's write in psql moves the version and is hinted to a watch (the table's triggers), and one
 * that bypasses them is found by a member's lost write; values no store wrote are bounded or
 * refused; a dropped table is named as such.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import { createStatements, groupAdminScript } from '../../src/backends/postgres/schema.js';
import pg from 'pg';
import { contractHeader, contractShard, contractSlot } from '../../src/testing/group-store-contract.js';
import type { Logger } from '../../src/log.js';
import { startPostgres } from '../support/postgres.js';
import { GroupCache } from '../../src/shards/group-cache.js';
import type { VersionedGroupRecord } from '../../src/backends/group-store.js';

const server = startPostgres();
after(async () => (await server).stop());

let dbs = 0;
/** A database of its own per case; `owner`: the leasehold role may create tables in it. */
async function freshDatabase(owner: boolean): Promise<{ name: string; url: string }> {
  const pg = await server;
  const name = `groups${dbs++}`;
  pg.sql(`CREATE DATABASE ${name}${owner ? ' OWNER leasehold' : ''}`);
  return { name, url: pg.url().replace(/\/leases$/, `/${name}`) };
}
const lease = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: new Date(), leaseTransitions: 1 };
const warnings = (): Logger & { lines: string[] } => {
  const lines: string[] = [];
  return { lines, debug() {}, info() {}, warn: (msg) => void lines.push(msg), error: (msg) => void lines.push(msg) };
};
async function until<T>(what: string, check: () => T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('PostgreSQL as a group store, on a real server', () => {
  it("a candidate that leads alone makes no groups table; the first group call makes it in the lease table's schema", async () => {
    const pg = await server;
    const db = await freshDatabase(true);
    pg.sql('CREATE SCHEMA app AUTHORIZATION leasehold', db.name);
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'app.leases' });
    try {
      await store.create('lease', lease);
      assert.equal(pg.sql("SELECT to_regclass('app.lease_groups') IS NULL", db.name).trim(), 't');
      assert.deepEqual(await store.listGroup('g'), []);
      assert.equal(pg.sql("SELECT to_regclass('app.lease_groups') IS NOT NULL AND to_regclass('public.lease_groups') IS NULL", db.name).trim(), 't');
      // A lease and a group of the same name never meet.
      await store.createGroupRecord('lease', contractSlot(0));
      assert.equal((await store.get('lease'))?.record.holderIdentity, 'a');
    } finally {
      await store.close();
    }
  });

  it('a role that may create nothing leads its lease; its first group call is refused with the SQL to run, and once an administrator ran it, groups work', async () => {
    const pg = await server;
    const db = await freshDatabase(false);
    // The lease table alone, as an administrator made it before shard groups existed.
    pg.sql(`BEGIN; ${createStatements('public', 'leases').join(';\n')}; COMMIT; GRANT SELECT, INSERT, UPDATE ON public.leases TO leasehold;`, db.name);
    assert.equal(pg.sql("SELECT has_schema_privilege('leasehold', 'public', 'CREATE')", db.name).trim(), 'f');
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases' });
    try {
      await store.create('lease', lease);
      await assert.rejects(
        store.createGroupRecord('g', contractSlot(0)),
        (e: { code: string; message: string }) =>
          e.code === 'LEASEHOLD_ERR_STORE_OPEN' &&
          e.message.includes("the shard groups' table does not exist and this role may not create it") &&
          e.message.includes('GRANT SELECT, INSERT, UPDATE ON "public"."lease_groups" TO "leasehold";'),
      );
      pg.sql(groupAdminScript('public', 'leasehold'), db.name);
      const v = await store.createGroupRecord('g', contractSlot(0));
      assert.deepEqual(await store.listGroup('g'), [{ record: contractSlot(0), version: v }]);
    } finally {
      await store.close();
    }
  });

  it("another role's write in psql, which leaves the version alone, moves it and is hinted to a watch", async () => {
    const pg = await server;
    const db = await freshDatabase(true);
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases' });
    try {
      const v1 = await store.createGroupRecord('g', contractSlot(0));
      let hints = 0;
      let healthy = false;
      const stop = store.watchGroup(
        'g',
        () => hints++,
        (ok) => (healthy = ok),
      );
      try {
        await until('the watch to connect', () => (healthy ? true : undefined));
        const before = hints;
        pg.sql("UPDATE public.lease_groups SET holder_identity = 'by-hand' WHERE group_name = 'g'", db.name);
        await until('a hint for the write in psql', () => (hints > before ? true : undefined));
      } finally {
        stop();
      }
      const [now] = await store.listGroup('g');
      assert.equal((now!.record as { holderIdentity: string }).holderIdentity, 'by-hand');
      assert.notEqual(now!.version, v1);
      await assert.rejects(store.updateGroupRecord('g', contractSlot(0), v1), { code: 'LEASEHOLD_ERR_CONFLICT' });
    } finally {
      await store.close();
    }
  });

  it('a holder over its bound reads as a note of its size, told once; a value no store writes is an invalid record naming the row', async () => {
    const pg = await server;
    const db = await freshDatabase(true);
    const log = warnings();
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases', log });
    try {
      await store.createGroupRecord('g', contractSlot(0));
      pg.sql("UPDATE public.lease_groups SET holder_identity = repeat('x', 10000) WHERE group_name = 'g'", db.name);
      for (let i = 0; i < 2; i++) {
        const [got] = await store.listGroup('g');
        assert.equal((got!.record as { holderIdentity: string }).holderIdentity, '(a value of 10000 bytes)');
      }
      const told = log.lines.filter((l) => /over their bound/.test(l));
      assert.equal(told.length, 1, log.lines.join('\n'));
      assert.match(told[0]!, /record member\/0 of group g .*holder_identity: 10000 bytes/);
      pg.sql("UPDATE public.lease_groups SET state = 'gone' WHERE group_name = 'g'", db.name);
      await assert.rejects(
        store.listGroup('g'),
        (e: { code: string; message: string }) => e.code === 'LEASEHOLD_ERR_INVALID_RECORD' && /member\/0 .*state "gone"/.test(e.message),
      );
    } finally {
      await store.close();
    }
  });

  it("a groups table dropped under the store: a coded error naming it, and the lease store's problem() stays clear", async () => {
    const pg = await server;
    const db = await freshDatabase(true);
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases' });
    try {
      await store.createGroupRecord('g', contractSlot(0));
      pg.sql('DROP TABLE public.lease_groups', db.name);
      await assert.rejects(
        store.listGroup('g'),
        (e: { code: string; message: string }) => e.code === 'LEASEHOLD_ERR_BACKEND' && /shard groups' table does not exist/.test(e.message),
      );
      assert.equal(store.problem(), null);
      await store.create('lease', lease);
    } finally {
      await store.close();
    }
  });

  it('a lease table named lease_groups leaves no room for groups: its group calls are refused naming the setting, its leases work', async () => {
    const db = await freshDatabase(true);
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.lease_groups' });
    try {
      await store.create('lease', lease);
      await assert.rejects(
        store.listGroup('g'),
        (e: { code: string; field?: string }) => e.code === 'LEASEHOLD_ERR_INVALID_CONFIG' && e.field === 'postgresTable',
      );
      await assert.rejects(store.createGroupRecord('g', contractSlot(0)), { code: 'LEASEHOLD_ERR_INVALID_CONFIG' });
    } finally {
      await store.close();
    }
  });

  it('a reader (status) lists a group without making the table: [] before any group was used', async () => {
    const pg = await server;
    const db = await freshDatabase(true);
    const writer = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases' });
    const reader = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases', readonly: true });
    try {
      assert.deepEqual(await reader.listGroup('g'), []);
      assert.equal(pg.sql("SELECT to_regclass('public.lease_groups') IS NULL", db.name).trim(), 't');
      await assert.rejects(reader.createGroupRecord('g', contractSlot(0)), { code: 'LEASEHOLD_ERR_BACKEND' });
      const v = await writer.createGroupRecord('g', contractSlot(0));
      assert.deepEqual(await reader.listGroup('g'), [{ record: contractSlot(0), version: v }]);
    } finally {
      await reader.close();
      await writer.close();
    }
  });

  it('changes: a row written by a transaction that began before a read and committed after it is in the next read, though a later one was read first', async () => {
    const db = await freshDatabase(true);
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases' });
    const slow = new pg.Client({ connectionString: db.url });
    await slow.connect();
    try {
      const v0 = await store.createGroupRecord('g', contractSlot(0));
      await store.createGroupRecord('g', contractShard(0));
      const first = await store.readGroupChanges('g', undefined);
      // The slow writer's transaction takes its id (its version) first and commits last.
      await slow.query('BEGIN');
      await slow.query("UPDATE lease_groups SET holder_identity = 'slow' WHERE group_name = 'g' AND kind = 'shard' AND idx = 0");
      const v1 = await store.updateGroupRecord('g', contractSlot(0, { session: 2 }), v0);
      const during = await store.readGroupChanges('g', first.cursor);
      assert.deepEqual(
        during.records.map((r) => [r.record.kind, r.version]),
        [['member', v1]],
        'the uncommitted write was read, or the committed one was not',
      );
      assert.ok(BigInt(during.cursor) < BigInt(v1), `the cursor ${during.cursor} is past the open transaction's id`);
      await slow.query('COMMIT');
      const after = await store.readGroupChanges('g', during.cursor);
      const shard = after.records.find((r) => r.record.kind === 'shard');
      assert.equal(after.full, false);
      assert.equal(
        (shard?.record as { holderIdentity?: string } | undefined)?.holderIdentity,
        'slow',
        'the write that committed after the read was never read',
      );
      // Once nothing is open, the next read names nothing older than what it read.
      const quiet = await store.readGroupChanges('g', (await store.readGroupChanges('g', after.cursor)).cursor);
      assert.deepEqual(quiet.records, []);
    } finally {
      await slow.end();
      await store.close();
    }
  });

  it("changes: a row written with the triggers bypassed, below a member's cursor, is found at the read after a write it made lose", async () => {
    const pg = await server;
    const db = await freshDatabase(true);
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases' });
    try {
      await store.createGroupRecord('g', contractSlot(0));
      for (let i = 0; i < 4; i++) await store.createGroupRecord('g', contractShard(i));
      const cache = new GroupCache(store, 'g');
      const writer = cache.writer();
      const shard = (list: VersionedGroupRecord[]) => list.find((r) => r.record.kind === 'shard' && r.record.index === 2)!;
      const before = shard(await cache.read());
      // A logical replica's apply, or an administrator: no trigger, so no version drawn; one set below the cursor.
      pg.sql(
        "SET session_replication_role = replica; UPDATE public.lease_groups SET token = 7, version = version - 1 WHERE group_name = 'g' AND kind = 'shard' AND idx = 2",
        db.name,
      );
      assert.equal(shard(await cache.read()).version, before.version, 'a read by change brought it');
      await assert.rejects(writer.updateGroupRecord('g', contractShard(2, { token: 2 }), before.version), { code: 'LEASEHOLD_ERR_CONFLICT' });
      assert.deepEqual(shard(await cache.read()).record, contractShard(2, { token: 7 }), 'the copy after the lost write');
    } finally {
      await store.close();
    }
  });

  it('changes: a cursor past every transaction id of the server (a copy restored elsewhere) gets a full read', async () => {
    const db = await freshDatabase(true);
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases' });
    try {
      await store.createGroupRecord('g', contractSlot(0));
      const future = String(BigInt((await store.readGroupChanges('g', undefined)).cursor) + 1_000_000n);
      const answer = await store.readGroupChanges('g', future);
      assert.equal(answer.full, true);
      assert.deepEqual(
        answer.records.map((r) => r.record),
        [contractSlot(0)],
      );
    } finally {
      await store.close();
    }
  });

  it('a header the reader refuses is not raised, and no take is written: the refusal names its column', async () => {
    // The raise's row is parsed after the statement commits: a header written by hand that the
    // reader refuses must keep the UPDATE from matching, or the takes joined to it are written
    // and the member, told the call failed, never learns it owns them.
    const pg = await server;
    const db = await freshDatabase(true);
    const store = await PostgresLeaseStore.open({ url: db.url, table: 'public.leases' });
    try {
      await store.createGroupRecord('g', contractHeader({ highWater: 4 }));
      const free = await store.createGroupRecord('g', contractShard(1, { holderIdentity: '', owner: null, token: 3 }));
      const rows = () =>
        pg.sql("SELECT kind, idx, holder_identity, token, version FROM public.lease_groups WHERE group_name = 'g' ORDER BY kind, idx", db.name);
      const take = [{ record: contractShard(1, { holderIdentity: 'b', owner: { slot: 1, session: 2 }, token: 0 }), expectedVersion: free }];
      for (const [set, column] of [
        ['created_at_ms = NULL', 'created_at_ms'],
        ['created_at_ms = -1', 'created_at_ms'],
        ['token = -1', 'token'],
        ["lease_duration_seconds = 'NaN'", 'lease_duration_seconds'],
        ["lease_duration_seconds = 'Infinity'", 'lease_duration_seconds'],
        ['lease_duration_seconds = 0', 'lease_duration_seconds'],
      ] as const) {
        pg.sql(`UPDATE public.lease_groups SET ${set} WHERE group_name = 'g' AND kind = 'group'`, db.name);
        const before = rows();
        const refused = (e: { code: string; message: string }) => e.code === 'LEASEHOLD_ERR_INVALID_RECORD' && e.message.includes(`holds ${column} `);
        await assert.rejects(store.raiseAndTake('g', { atLeast: 0, shards: 16 }, take), refused, set);
        await assert.rejects(store.raiseHighWater('g', { atLeast: 0, count: 1, shards: 16 }), refused, set);
        assert.equal(rows(), before, `${set}: nothing written`);
        pg.sql("UPDATE public.lease_groups SET created_at_ms = 0, token = 4, lease_duration_seconds = NULL WHERE group_name = 'g' AND kind = 'group'", db.name);
      }
      const taken = await store.raiseAndTake('g', { atLeast: 0, shards: 16 }, take);
      assert.deepEqual([taken.from, taken.outcomes[0]?.written], [4, true], 'the header put right, the take goes through');
    } finally {
      await store.close();
    }
  });
});
