import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient, RawWatchEvent } from '../kube/api-client.js';
import { silentLogger } from '../log.js';
import { FakeClock, settle } from '../testing/fake-clock.js';
import { INJECTED_LEASE, INJECT_LABEL, SIDECAR_NAME } from './annotations.js';
import { OperatorMetrics } from './operator-metrics.js';
import type { Pod } from './pod-types.js';
import { grantName } from './rbac.js';
import { PASS_GAP_MS, Reconciler } from './reconciler.js';

const RESYNC_MS = 30_000;

interface Named {
  metadata: { name: string; namespace: string; uid?: string };
}

/**
 * An in-memory API server for the calls the reconciler makes: lists of labelled pods, Roles and
 * RoleBindings, their create/replace/delete, Events, and one pod watch the test drives. It keeps
 * every call, so a test counts passes by the pod lists it sees.
 */
function fakeCluster() {
  const pods = new Map<string, Pod & Named>();
  const rbac = { roles: new Map<string, Named>(), rolebindings: new Map<string, Named>() };
  const events: { pod: string; reason: string }[] = [];
  const calls: string[] = [];
  let onEvent: ((e: RawWatchEvent) => void) | undefined;
  const client = {
    request: (method: string, path: string, opts?: { body?: unknown }) => {
      calls.push(`${method} ${path}`);
      const url = new URL(path, 'https://api.invalid');
      const parts = url.pathname.split('/').filter(Boolean);
      if (method === 'GET' && url.pathname === '/api/v1/pods') return Promise.resolve({ items: [...pods.values()] });
      const kind = parts.find((p): p is 'roles' | 'rolebindings' => p === 'roles' || p === 'rolebindings');
      if (kind && method === 'GET') return Promise.resolve({ items: [...rbac[kind].values()] });
      const body = opts?.body as Named | undefined;
      if (kind && (method === 'POST' || method === 'PUT')) {
        rbac[kind].set(`${body!.metadata.namespace}/${body!.metadata.name}`, body!);
        return Promise.resolve(body);
      }
      if (kind && method === 'DELETE') {
        rbac[kind].delete(`${parts[parts.length - 3]}/${parts[parts.length - 1]}`);
        return Promise.resolve({});
      }
      if (method === 'POST' && parts.at(-1) === 'events') {
        const e = opts?.body as { involvedObject: { name: string }; reason: string };
        events.push({ pod: e.involvedObject.name, reason: e.reason });
        return Promise.resolve(e);
      }
      return Promise.reject(new Error(`unexpected ${method} ${path}`));
    },
    watch: (_path: string, _query: Record<string, string>, fn: (e: RawWatchEvent) => void) => {
      onEvent = fn;
      return Promise.resolve({ abort: () => (onEvent = undefined) });
    },
  } as unknown as KubeClient;
  const podLists = () => calls.filter((c) => c.startsWith('GET /api/v1/pods')).length;
  const emit = (type: string, pod: Pod) => onEvent!({ type, object: pod });
  return { client, pods, rbac, events, calls, podLists, emit };
}

function pod(name: string, opts: { injected?: boolean; sa?: string; lease?: string } = {}): Pod & Named {
  const injected = opts.injected ?? true;
  return {
    metadata: {
      name,
      namespace: 'app',
      uid: `uid-${name}`,
      labels: { [INJECT_LABEL]: 'true' },
      annotations: injected ? { [INJECTED_LEASE]: opts.lease ?? 'web' } : {},
    },
    spec: {
      serviceAccountName: opts.sa ?? 'web',
      containers: [{ name: 'app', image: 'app:1' }, ...(injected ? [{ name: SIDECAR_NAME, image: 'leasehold:test' }] : [])],
    },
  };
}

async function started(cluster: ReturnType<typeof fakeCluster>) {
  const clock = new FakeClock();
  const reconciler = new Reconciler({
    client: cluster.client,
    log: silentLogger,
    metrics: new OperatorMetrics(false),
    excludedNamespaces: ['kube-system'],
    clock,
  });
  reconciler.start(RESYNC_MS);
  await settle();
  return { clock, reconciler };
}

test('a hundred pod events within the gap cost one pass, run once the gap has passed', async () => {
  const cluster = fakeCluster();
  const { clock, reconciler } = await started(cluster);
  try {
    assert.equal(cluster.podLists(), 1, 'the pass at start');
    const calls = cluster.calls.length;
    for (let i = 0; i < 100; i++) {
      const p = pod(`web-${i}`);
      cluster.pods.set(p.metadata.name, p);
      cluster.emit('ADDED', p);
      await clock.advance(9);
    }
    await clock.advance(PASS_GAP_MS - 900 - 1);
    assert.equal(cluster.podLists(), 1, 'no pass before the gap has passed');
    await clock.advance(1);
    assert.equal(cluster.podLists(), 2, 'one pass for all hundred events');
    // One pass: three lists, and the one pair's Role and RoleBinding.
    assert.deepEqual(
      cluster.calls.slice(calls).map((c) => c.split('?')[0]),
      [
        'GET /api/v1/pods',
        'GET /apis/rbac.authorization.k8s.io/v1/roles',
        'GET /apis/rbac.authorization.k8s.io/v1/rolebindings',
        'POST /apis/rbac.authorization.k8s.io/v1/namespaces/app/roles',
        'POST /apis/rbac.authorization.k8s.io/v1/namespaces/app/rolebindings',
      ],
    );
    assert.ok(cluster.rbac.roles.has(`app/${grantName('web', 'web')}`));
  } finally {
    await reconciler.stop();
  }
});

test('events without end run one pass per gap, and a lone event after a quiet gap runs one at once', async () => {
  const cluster = fakeCluster();
  const { clock, reconciler } = await started(cluster);
  try {
    // 40 events a second for ten seconds: a rollout's creations and deletions.
    for (let i = 0; i < 400; i++) {
      cluster.emit('MODIFIED', pod(`web-${i % 10}`));
      await clock.advance(25);
    }
    const passes = cluster.podLists() - 1;
    assert.ok(passes >= 9 && passes <= 10, `one pass per gap, not per event: ${passes} passes`);
    await clock.advance(PASS_GAP_MS);
    const before = cluster.podLists();
    await clock.advance(PASS_GAP_MS);
    cluster.emit('ADDED', pod('lone'));
    await settle();
    assert.equal(cluster.podLists(), before + 1, 'the first event after a quiet gap runs a pass without waiting');
  } finally {
    await reconciler.stop();
  }
});

test('a deletion amid a burst still removes the pair no pod uses any more, within the gap', async () => {
  const cluster = fakeCluster();
  const keep = pod('web-0');
  const gone = pod('worker-0', { sa: 'worker', lease: 'jobs' });
  cluster.pods.set(keep.metadata.name, keep);
  cluster.pods.set(gone.metadata.name, gone);
  const { clock, reconciler } = await started(cluster);
  try {
    const goneKey = `app/${grantName('worker', 'jobs')}`;
    assert.ok(cluster.rbac.roles.has(goneKey) && cluster.rbac.rolebindings.has(goneKey), 'granted at start');
    for (let i = 0; i < 50; i++) {
      cluster.emit('MODIFIED', keep);
      await clock.advance(10);
    }
    cluster.pods.delete(gone.metadata.name);
    cluster.emit('DELETED', gone);
    await clock.advance(PASS_GAP_MS);
    assert.equal(cluster.podLists(), 2, 'the burst and the deletion folded into one pass');
    assert.ok(!cluster.rbac.roles.has(goneKey) && !cluster.rbac.rolebindings.has(goneKey), 'the unused pair removed');
    assert.ok(cluster.rbac.roles.has(`app/${grantName('web', 'web')}`), 'the used pair kept');
  } finally {
    await reconciler.stop();
  }
});

test('an uninjected labelled pod that arrives amid a burst is still reported, once', async () => {
  const cluster = fakeCluster();
  const { clock, reconciler } = await started(cluster);
  try {
    for (let i = 0; i < 50; i++) {
      const p = pod(`web-${i}`);
      cluster.pods.set(p.metadata.name, p);
      cluster.emit('ADDED', p);
      await clock.advance(10);
    }
    const bare = pod('missed', { injected: false });
    cluster.pods.set(bare.metadata.name, bare);
    cluster.emit('ADDED', bare);
    await clock.advance(PASS_GAP_MS);
    assert.equal(cluster.podLists(), 2, 'one pass for the burst');
    assert.deepEqual(cluster.events, [{ pod: 'missed', reason: 'LeaseholdNotInjected' }]);
    // Not reported again by later passes.
    cluster.emit('MODIFIED', bare);
    await clock.advance(PASS_GAP_MS);
    assert.equal(cluster.events.length, 1);
  } finally {
    await reconciler.stop();
  }
});

test('without events, a pass runs every resync period', async () => {
  const cluster = fakeCluster();
  const { clock, reconciler } = await started(cluster);
  try {
    await clock.advance(RESYNC_MS - 1);
    assert.equal(cluster.podLists(), 1);
    await clock.advance(1);
    assert.equal(cluster.podLists(), 2, 'the first resync');
    await clock.advance(RESYNC_MS);
    assert.equal(cluster.podLists(), 3, 'and the next');
  } finally {
    await reconciler.stop();
  }
  await clock.advance(RESYNC_MS * 2);
  assert.equal(cluster.podLists(), 3, 'none after stop');
});
