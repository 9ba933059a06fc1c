import { it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteLeaseStore } from './store.js';

// node:fs as the store's named imports see it: replacing a function here and calling
// syncBuiltinESMExports() makes their `statSync` this one, so the test sees every path stat'ed.
const fs = createRequire(import.meta.url)('node:fs') as { statSync: (...args: unknown[]) => unknown };

const dir = mkdtempSync(join(tmpdir(), 'leasehold-wal-stat-'));
after(() => rmSync(dir, { recursive: true, force: true }));

it("renewals and reads stat the database file and its -shm, never the -wal (a stat before each commit makes each commit's fsync commit the filesystem journal)", async () => {
  const path = join(dir, 'leases.db');
  const store = new SqliteLeaseStore(path);
  const base = new Date('2026-12-03T12:00:00.000Z');
  await store.create('l', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: base, renewTime: base, leaseTransitions: 1 });
  let current = (await store.get('l'))!;
  const statted: string[] = [];
  const statSync = fs.statSync;
  fs.statSync = (p: unknown, ...rest: unknown[]) => {
    statted.push(String(p));
    return statSync(p, ...rest);
  };
  syncBuiltinESMExports();
  try {
    for (let i = 1; i <= 5; i++) {
      const record = { ...current.record, renewTime: new Date(base.getTime() + i) };
      current = { record, version: await store.update('l', record, current.version) };
      current = (await store.get('l'))!;
    }
  } finally {
    fs.statSync = statSync;
    syncBuiltinESMExports();
    await store.close();
  }
  // The replaced-file check still runs before every operation, on the files it compares.
  assert.equal(statted.filter((p) => p === path).length, 10);
  assert.equal(statted.filter((p) => p === `${path}-shm`).length, 10);
  assert.deepEqual(
    statted.filter((p) => p.endsWith('-wal')),
    [],
  );
});
