/**
 * The store contract (src/testing/lease-store-contract.ts) on a real PostgreSQL server
 * (test/support/postgres.ts), with a second client as the other writer and deletions in SQL.
 */
import { after } from 'node:test';
import { leaseStoreContract, upsertThrough } from '../../src/testing/lease-store-contract.js';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import { startPostgres } from '../support/postgres.js';

const server = startPostgres();
after(async () => (await server).stop());

leaseStoreContract('PostgreSQL, on a real server', async () => {
  const pg = await server;
  const store = await PostgresLeaseStore.open({ url: pg.url(), table: 'public.contract' });
  const other = await PostgresLeaseStore.open({ url: pg.url(), table: 'public.contract' });
  return {
    store,
    writeElsewhere: (name, record) => upsertThrough(other, name, record),
    deleteElsewhere: async (name) => void pg.sql(`DELETE FROM public.contract WHERE name = '${name}'`, 'leases'),
    close: async () => {
      await other.close();
      await store.close();
    },
  };
});
