import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { leaseStoreContract, upsertThrough } from '../../testing/lease-store-contract.js';
import { SqliteLeaseStore } from './store.js';

leaseStoreContract('SQLite, on a real file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-contract-'));
  const file = join(dir, 'leases.db');
  const store = new SqliteLeaseStore(file);
  // The other writer is another connection to the file, as another process would have.
  const other = new SqliteLeaseStore(file);
  const raw = new Database(file);
  return {
    store,
    writeElsewhere: (name, record) => upsertThrough(other, name, record),
    deleteElsewhere: async (name) => void raw.prepare('DELETE FROM leases WHERE name = ?').run(name),
    close: async () => {
      raw.close();
      await other.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
