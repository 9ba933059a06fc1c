/**
 * The successor column on a real PostgreSQL server (issue 23): a table made before it gains it
 * when leasehold's role owns the table; a role that may not alter the table, or a table busy
 * with a neighbour's transaction, runs exactly as before with successorClaims.kept() false and
 * says once what an administrator runs; `leasehold status` (read-only) never alters anything.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import type { LeaseRecord } from '../../src/backends/lease-store.js';
import type { Logger } from '../../src/log.js';
import { startPostgres } from '../support/postgres.js';

const server = startPostgres();
after(async () => (await server).stop());

const claim = { identity: 'b', claimedAt: new Date('2026-12-02T09:15:26.456Z') };
const rec = (over: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: 'a',
  leaseDurationSeconds: 15,
  acquireTime: new Date('2026-12-02T09:15:24.123Z'),
  renewTime: new Date('2026-12-02T09:15:24.123Z'),
  leaseTransitions: 1,
  ...over,
});

/** The table as an earlier leasehold made it (no successor column), with one row. */
const OLD_TABLE = (t: string) =>
  `CREATE TABLE public.${t} (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token BIGINT NOT NULL, renew_time DOUBLE PRECISION NOT NULL, lease_duration_seconds DOUBLE PRECISION NOT NULL, acquire_time DOUBLE PRECISION NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 1);
   INSERT INTO public.${t} (name, holder_identity, fencing_token, renew_time, lease_duration_seconds) VALUES ('old', 'py', 3, 1700000000, 5);`;

function capture(): { log: Logger; info: string[] } {
  const info: string[] = [];
  return { info, log: { debug() {}, warn() {}, error() {}, info: (m: string) => void info.push(m) } };
}

const hasColumn = async (t: string) =>
  (await server).sql(`SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.${t}'::regclass AND attname = 'successor'`, 'leases').trim() === '1';

describe('the successor column on PostgreSQL', () => {
  it("an older table owned by leasehold's role gains the column at open, even with several candidates starting at once", async () => {
    const pgs = await server;
    pgs.sql(`${OLD_TABLE('owned')} ALTER TABLE public.owned OWNER TO leasehold;`, 'leases');
    const logs = [capture(), capture(), capture()];
    const stores = await Promise.all(logs.map(({ log }) => PostgresLeaseStore.open({ url: pgs.url(), table: 'public.owned', log })));
    try {
      assert.equal(await hasColumn('owned'), true);
      for (const s of stores) assert.equal(s.successorClaims.kept(), true);
      const [a, b] = stores as [PostgresLeaseStore, PostgresLeaseStore];
      const old = (await a.get('old'))!;
      assert.equal(Object.hasOwn(old.record, 'successor'), false, 'the default reads as no claim');
      const v = await a.update('old', { ...old.record, successor: claim }, old.version);
      assert.deepEqual(await b.get('old'), { record: { ...old.record, successor: claim }, version: v });
      assert.equal(logs.flatMap((l) => l.info).filter((m) => /without the successor column/.test(m)).length, 0);
    } finally {
      for (const s of stores) await s.close();
    }
  });

  it('a role that may not alter an older table runs as before, successorClaims.kept() false, and logs the SQL once', async () => {
    const pgs = await server;
    pgs.sql(`${OLD_TABLE('notmine')} GRANT SELECT, INSERT, UPDATE ON public.notmine TO leasehold;`, 'leases');
    const { log, info } = capture();
    const s = await PostgresLeaseStore.open({ url: pgs.url(), table: 'public.notmine', log });
    try {
      assert.equal(s.successorClaims.kept(), false);
      assert.equal(await hasColumn('notmine'), false);
      // Everything else as before; a claim has nowhere to go and is dropped.
      const v1 = await s.create('x', rec({ successor: claim }));
      const v2 = await s.update('x', rec({ renewTime: new Date('2026-12-02T09:15:25.000Z'), successor: claim }), v1);
      assert.deepEqual(await s.get('x'), { record: rec({ renewTime: new Date('2026-12-02T09:15:25.000Z') }), version: v2 });
      assert.equal((await s.get('old'))?.record.leaseTransitions, 3);
      const told = info.filter((m) => /without the successor column/.test(m));
      assert.equal(told.length, 1, info.join('\n'));
      assert.match(told[0]!, /an administrator runs: ALTER TABLE "public"\."notmine" ADD COLUMN IF NOT EXISTS successor TEXT NOT NULL DEFAULT '';$/);
      // The administrator runs exactly that; the next start keeps claims.
      pgs.sql(/runs: (.*)$/.exec(told[0]!)![1]!, 'leases');
    } finally {
      await s.close();
    }
    const again = capture();
    const s2 = await PostgresLeaseStore.open({ url: pgs.url(), table: 'public.notmine', log: again.log });
    try {
      assert.equal(s2.successorClaims.kept(), true);
      const cur = (await s2.get('x'))!;
      const v = await s2.update('x', { ...cur.record, successor: claim }, cur.version);
      assert.deepEqual(await s2.get('x'), { record: { ...cur.record, successor: claim }, version: v });
      assert.deepEqual(again.info, []);
    } finally {
      await s2.close();
    }
  });

  it("a neighbour's open transaction on the table: leasehold does not queue an ALTER behind it (stalling the table), it starts without the column", async () => {
    const pgs = await server;
    pgs.sql(`${OLD_TABLE('busy')} ALTER TABLE public.busy OWNER TO leasehold;`, 'leases');
    const neighbour = new pg.Client({ connectionString: pgs.url('postgres'), application_name: 'neighbour' });
    await neighbour.connect();
    try {
      await neighbour.query('BEGIN');
      await neighbour.query('SELECT * FROM public.busy');
      const { log, info } = capture();
      // A request bound of 30 s would let a lock wait run 21.6 s (lock_timeout): the ALTER has its own, short one.
      const t0 = performance.now();
      const s = await PostgresLeaseStore.open({ url: pgs.url(), table: 'public.busy', log, requestTimeoutMs: 30_000 });
      const openMs = performance.now() - t0;
      try {
        assert.ok(openMs < 5_000, `open waited ${Math.round(openMs)} ms for the table's lock`);
        assert.equal(s.successorClaims.kept(), false);
        assert.equal(info.filter((m) => /without the successor column/.test(m)).length, 1, info.join('\n'));
        // The neighbour was never blocked, and leasehold works.
        assert.equal((await neighbour.query<{ n: number }>('SELECT count(*)::int AS n FROM public.busy')).rows[0]?.n, 1);
        assert.equal((await s.get('old'))?.record.holderIdentity, 'py');
      } finally {
        await s.close();
      }
    } finally {
      await neighbour.query('ROLLBACK').catch(() => {});
      await neighbour.end();
    }
    assert.equal(await hasColumn('busy'), false);
  });

  it('`leasehold status` (read-only) on an older table alters nothing and reads it', async () => {
    const pgs = await server;
    pgs.sql(`${OLD_TABLE('readonly')} ALTER TABLE public.readonly OWNER TO leasehold;`, 'leases');
    const { log, info } = capture();
    const s = await PostgresLeaseStore.open({ url: pgs.url(), table: 'public.readonly', log, readonly: true });
    try {
      assert.equal(s.successorClaims.kept(), false);
      assert.equal((await s.get('old'))?.record.leaseTransitions, 3);
      assert.deepEqual(info, [], 'a reader says nothing about a column it would not add');
    } finally {
      await s.close();
    }
    assert.equal(await hasColumn('readonly'), false);
  });
});
