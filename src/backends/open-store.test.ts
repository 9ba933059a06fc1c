import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
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
