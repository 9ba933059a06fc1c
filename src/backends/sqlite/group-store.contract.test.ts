import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { groupStoreContract, upsertGroupThrough } from '../../testing/group-store-contract.js';
import { SqliteLeaseStore } from './store.js';

groupStoreContract('SQLite, on a real file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-group-contract-'));
  const file = join(dir, 'leases.db');
  const store = new SqliteLeaseStore(file);
  // The other writer is another connection to the file, as another process would have.
  const other = new SqliteLeaseStore(file);
  // Deletions in plain SQL, as a person with the sqlite3 shell would make them.
  const raw = new Database(file);
  const reopened: SqliteLeaseStore[] = [];
  return {
    store,
    writeElsewhere: (group, record) => upsertGroupThrough(other, group, record),
    deleteElsewhere: async (group, key) =>
      void raw.prepare('DELETE FROM lease_groups WHERE group_name = ? AND kind = ? AND idx = ?').run(group, key.kind, key.index),
    // A process started again: a store of its own on the same file.
    reopen: async () => {
      const again = new SqliteLeaseStore(file);
      reopened.push(again);
      return again;
    },
    close: async () => {
      for (const again of reopened) await again.close();
      raw.close();
      await other.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
