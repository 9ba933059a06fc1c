/**
 * The group store contract (src/testing/group-store-contract.ts) on a real PostgreSQL server
 * (test/support/postgres.ts), with a second client as the other writer and deletions in SQL.
 */
import { after } from 'node:test';
import { groupStoreContract, upsertGroupThrough } from '../../src/testing/group-store-contract.js';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import { startPostgres } from '../support/postgres.js';

const server = startPostgres();
after(async () => (await server).stop());

groupStoreContract('PostgreSQL, on a real server', async () => {
  const pg = await server;
  const store = await PostgresLeaseStore.open({ url: pg.url(), table: 'public.contract' });
  const other = await PostgresLeaseStore.open({ url: pg.url(), table: 'public.contract' });
  const reopened: PostgresLeaseStore[] = [];
  return {
    store,
    writeElsewhere: (group, record) => upsertGroupThrough(other, group, record),
    deleteElsewhere: async (group, key) =>
      void pg.sql(`DELETE FROM public.lease_groups WHERE group_name = '${group}' AND kind = '${key.kind}' AND idx = ${key.index}`, 'leases'),
    watchConnects: true,
    // A process started again: a store and a connection of its own.
    reopen: async () => {
      const again = await PostgresLeaseStore.open({ url: pg.url(), table: 'public.contract' });
      reopened.push(again);
      return again;
    },
    close: async () => {
      for (const again of reopened) await again.close();
      await other.close();
      await store.close();
    },
  };
});
