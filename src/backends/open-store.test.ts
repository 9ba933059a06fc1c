import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type StoreSettings } from './open-store.js';
import { InvalidConfigError } from '../errors.js';

describe('openStore: an unknown backend', () => {
  it('is refused naming the setting as the library spells it, not a CLI flag', async () => {
    await assert.rejects(
      openStore({ backend: 'etcd' as StoreSettings['backend'], db: '' }),
      (err: unknown) => err instanceof InvalidConfigError && err.field === 'backend' && /^backend "etcd" is not supported: use one of /.test(err.message),
    );
  });
});

describe('openStore: one store for leases and shard groups', () => {
  it('SQLite: the store it hands back lists, creates and updates group records on the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-open-'));
    try {
      const store = await openStore({ backend: 'sqlite', db: join(dir, 'leases.db') });
      try {
        const slot = { kind: 'member', index: 0, holderIdentity: 'a', session: 1, state: 'active', renewTime: new Date(0), leaseDurationSeconds: 15 } as const;
        const v = await store.createGroupRecord('g', slot);
        assert.deepEqual(await store.listGroup('g'), [{ record: slot, version: v }]);
        assert.equal(typeof store.watchGroup, 'function');
      } finally {
        await store.close();
      }
      const reader = await openStore({ backend: 'sqlite', db: join(dir, 'leases.db'), readonly: true });
      try {
        assert.equal((await reader.listGroup('g')).length, 1);
      } finally {
        await reader.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
