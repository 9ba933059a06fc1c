import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../kube/api-client.js';
import { apiError } from '../kube/api-errors.js';
import { loadMarkKey } from './mark-key.js';

interface Secret {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  data: Record<string, string>;
}

/** Secrets in memory; `beforeCreate` runs first on every create, as another replica racing this one. */
function fakeSecrets(beforeCreate?: (store: Map<string, Secret>) => void) {
  const store = new Map<string, Secret>();
  const client = {
    request: (method: string, path: string, opts?: { body?: unknown }) => {
      if (method === 'GET') {
        const s = store.get(path.split('/').pop()!);
        return s ? Promise.resolve(s) : Promise.reject(apiError(404, 'not found'));
      }
      if (method === 'POST') {
        beforeCreate?.(store);
        const body = opts!.body as Secret;
        if (store.has(body.metadata.name)) return Promise.reject(apiError(409, 'already exists'));
        store.set(body.metadata.name, body);
        return Promise.resolve(body);
      }
      return Promise.reject(new Error(`unexpected ${method} ${path}`));
    },
  } as unknown as KubeClient;
  return { store, client };
}

test('the first replica makes a random 32-byte key in its Secret; every later one reads the same', async () => {
  const { store, client } = fakeSecrets();
  const first = await loadMarkKey(client, 'ops', 'op-mark');
  assert.equal(first.length, 32);
  assert.deepEqual(store.get('op-mark')!.metadata.labels, { 'app.kubernetes.io/managed-by': 'leasehold-operator' });
  assert.deepEqual(await loadMarkKey(client, 'ops', 'op-mark'), first);
  const other = fakeSecrets();
  assert.notDeepEqual(await loadMarkKey(other.client, 'ops', 'op-mark'), first, 'a new Secret, a new key');
});

test("a replica that loses the race to create the Secret takes the winner's key", async () => {
  const winner = Buffer.alloc(32, 5);
  const { client } = fakeSecrets((store) => {
    if (!store.has('op-mark')) store.set('op-mark', { metadata: { name: 'op-mark', namespace: 'ops' }, data: { 'mark.key': winner.toString('base64') } });
  });
  assert.deepEqual(await loadMarkKey(client, 'ops', 'op-mark'), winner);
});

test('a Secret without a whole key is refused, naming it, rather than signing with a weak key', async () => {
  const { store, client } = fakeSecrets();
  store.set('op-mark', { metadata: { name: 'op-mark', namespace: 'ops' }, data: { 'mark.key': Buffer.alloc(8).toString('base64') } });
  await assert.rejects(loadMarkKey(client, 'ops', 'op-mark'), /Secret ops\/op-mark has no mark\.key of 32 bytes/);
});
