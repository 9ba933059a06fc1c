import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../kube/api-client.js';
import { apiError } from '../kube/api-errors.js';
import type { LogFields, Logger } from '../log.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MarkKeyKeeper } from './mark-key.js';
import { DATA, ROTATE_ANNOTATION, markKey } from './mark-keyring.js';

interface Secret {
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    creationTimestamp?: string;
  };
  data: Record<string, string>;
}

const LABELS = { 'app.kubernetes.io/managed-by': 'leasehold-operator', 'leasehold.io/installation': 'ops.op' };

/**
 * Secrets in memory, as the API server keeps them: a resourceVersion that a replace must match
 * (409 otherwise), a creationTimestamp in whole seconds; `beforeCreate` runs first on every
 * create, as another replica racing this one.
 */
function fakeSecrets(clock = new FakeClock(), beforeCreate?: (store: Map<string, Secret>) => void) {
  const store = new Map<string, Secret>();
  let version = 0;
  const client = {
    request: (method: string, path: string, opts?: { body?: unknown }) => {
      const name = path.split('/').pop()!;
      if (method === 'GET') {
        const s = store.get(name);
        return s ? Promise.resolve(structuredClone(s)) : Promise.reject(apiError(404, 'not found'));
      }
      if (method === 'POST') {
        beforeCreate?.(store);
        const body = structuredClone(opts!.body as Secret);
        if (store.has(body.metadata.name)) return Promise.reject(apiError(409, 'already exists'));
        body.metadata.resourceVersion = String(++version);
        body.metadata.creationTimestamp = clock
          .now()
          .toISOString()
          .replace(/\.\d+Z$/, 'Z');
        store.set(body.metadata.name, body);
        return Promise.resolve(structuredClone(body));
      }
      if (method === 'PUT') {
        const body = structuredClone(opts!.body as Secret);
        const have = store.get(name);
        if (!have) return Promise.reject(apiError(404, 'not found'));
        if (have.metadata.resourceVersion !== body.metadata.resourceVersion) return Promise.reject(apiError(409, 'conflict'));
        body.metadata.resourceVersion = String(++version);
        store.set(name, body);
        return Promise.resolve(structuredClone(body));
      }
      return Promise.reject(new Error(`unexpected ${method} ${path}`));
    },
  } as unknown as KubeClient;
  return { store, client, clock };
}

function recordingLog() {
  const lines: { msg: string; fields?: LogFields }[] = [];
  const log: Logger = { debug() {}, info: (msg, fields) => lines.push({ msg, fields }), warn: (msg, fields) => lines.push({ msg, fields }), error() {} };
  return { lines, log };
}

const keeper = (s: ReturnType<typeof fakeSecrets>, log: Logger = recordingLog().log) =>
  MarkKeyKeeper.load({ client: s.client, namespace: 'ops', name: 'op-mark', labels: LABELS, log, graceMs: 30_000, clock: s.clock });
const ids = (k: MarkKeyKeeper) => k.verifying().map((b) => markKey(b).id);

test('the first replica makes a random 32-byte key in its Secret; every later one reads the same', async () => {
  const s = fakeSecrets();
  const first = await keeper(s);
  assert.equal(first.signing().length, 32);
  assert.deepEqual(s.store.get('op-mark')!.metadata.labels, LABELS);
  assert.deepEqual(Object.keys(s.store.get('op-mark')!.data), [DATA.current], 'what every earlier version reads');
  assert.deepEqual((await keeper(s)).signing(), first.signing());
  assert.notDeepEqual((await keeper(fakeSecrets())).signing(), first.signing(), 'a new Secret, a new key');
  assert.equal(first.keyring().since, s.clock.now().getTime(), 'the record begins with the Secret');
});

test("a replica that loses the race to create the Secret takes the winner's key", async () => {
  const winner = Buffer.alloc(32, 5);
  const s = fakeSecrets(new FakeClock(), (store) => {
    if (!store.has('op-mark')) store.set('op-mark', { metadata: { name: 'op-mark', namespace: 'ops' }, data: { 'mark.key': winner.toString('base64') } });
  });
  assert.deepEqual((await keeper(s)).signing(), winner);
});

test('a Secret without a whole key is refused, naming it, rather than signing with a weak key', async () => {
  const s = fakeSecrets();
  s.store.set('op-mark', { metadata: { name: 'op-mark', namespace: 'ops' }, data: { 'mark.key': Buffer.alloc(8).toString('base64') } });
  await assert.rejects(keeper(s), /Secret ops\/op-mark has no mark\.key of 32 bytes/);
});

test('the Secret deleted under running replicas is made again with the keys they hold: no mark loses its key', async () => {
  const s = fakeSecrets();
  const { lines, log } = recordingLog();
  const a = await keeper(s, log);
  const key = a.signing();
  s.store.delete('op-mark');
  await a.refresh(false);
  assert.deepEqual(Buffer.from(s.store.get('op-mark')!.data[DATA.current]!, 'base64'), key, 'the same key');
  assert.ok(
    lines.some((l) => l.msg === 'injection mark Secret was deleted: made it again with the keys this replica holds' && l.fields?.secret === 'ops/op-mark'),
  );
  assert.deepEqual((await keeper(s)).signing(), key, 'a replica started now reads it');
});

test('the Secret made anew by a replica that held nothing: the others add their keys back, and every replica ends verifying both', async () => {
  const s = fakeSecrets();
  const a = await keeper(s);
  const old = a.signing();
  const since = a.keyring().since;
  await s.clock.advance(3_600_000);
  // Deleted, and a replica restarted before the running one reread it: a new key.
  s.store.delete('op-mark');
  const { lines, log } = recordingLog();
  const b = await keeper(s, log);
  assert.notDeepEqual(b.signing(), old);
  await a.refresh(false);
  await b.refresh(false);
  for (const k of [a, b]) {
    assert.deepEqual(k.signing(), b.signing(), 'one signing key: the one in the Secret');
    assert.deepEqual(ids(k).sort(), [markKey(b.signing()).id, markKey(old).id].sort(), 'the old key verifies again');
    assert.equal(k.keyring().since, since, 'the record reaches back to the old key');
  }
  assert.ok(!lines.some((l) => l.msg.includes('added them back')), 'b had nothing to add');
});

test('leasehold.io/rotate: only the elected replica makes a new key; the old one keeps verifying on every replica', async () => {
  const s = fakeSecrets();
  const leader = await keeper(s);
  const follower = await keeper(s);
  const old = leader.signing();
  s.store.get('op-mark')!.metadata.annotations = { [ROTATE_ANNOTATION]: 'true', other: 'kept' };
  await follower.refresh(false);
  assert.deepEqual(follower.signing(), old, 'a follower does not rotate');
  await leader.refresh(true);
  assert.notDeepEqual(leader.signing(), old);
  assert.deepEqual(s.store.get('op-mark')!.metadata.annotations, { other: 'kept' }, 'the ask is removed, nothing else');
  await follower.refresh(false);
  assert.deepEqual(follower.signing(), leader.signing(), 'the follower signs with the new key at its next reread');
  assert.deepEqual(ids(follower), [markKey(leader.signing()).id, markKey(old).id]);
  assert.equal(follower.keyring().retired[0]!.retiredAt, s.clock.now().getTime());
});

test('a retired key no pod needs is dropped, and a replica still holding it does not bring it back', async () => {
  const s = fakeSecrets();
  const leader = await keeper(s);
  const follower = await keeper(s);
  const old = leader.signing();
  s.store.get('op-mark')!.metadata.annotations = { [ROTATE_ANNOTATION]: 'true' };
  await leader.refresh(true);
  const oldId = markKey(old).id;
  await leader.keepOnly(new Set(), s.clock.now().getTime() + 29_999);
  assert.equal(leader.verifying().length, 2, 'kept within its grace');
  await leader.keepOnly(new Set([oldId]), s.clock.now().getTime() + 30_000);
  assert.equal(leader.verifying().length, 2, 'kept while a pod needs it');
  await leader.keepOnly(new Set(), s.clock.now().getTime() + 30_000);
  assert.deepEqual(ids(leader), [markKey(leader.signing()).id]);
  // The follower never reread between the rotation and the drop: it holds the old key as its signing one.
  assert.deepEqual(follower.signing(), old);
  await follower.refresh(false);
  assert.deepEqual(ids(follower), [markKey(leader.signing()).id], 'the dropped key is not added back');
  assert.ok(
    !s.store.get('op-mark')!.data[DATA.retired] ||
      !Buffer.from(s.store.get('op-mark')!.data[DATA.retired]!, 'base64').toString().includes(old.toString('base64')),
  );
});

test('an unreadable Secret keeps the keys held, said once until it changes', async () => {
  const s = fakeSecrets();
  const { lines, log } = recordingLog();
  const a = await keeper(s, log);
  const key = a.signing();
  s.store.get('op-mark')!.data[DATA.current] = Buffer.alloc(3).toString('base64');
  await a.refresh(false);
  await a.refresh(false);
  assert.deepEqual(a.signing(), key);
  assert.equal(lines.filter((l) => l.msg.startsWith('Secret ops/op-mark has no mark.key')).length, 1);
});
