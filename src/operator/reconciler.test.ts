import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient, RawWatchEvent } from '../kube/api-client.js';
import { apiError } from '../kube/api-errors.js';
import { silentLogger } from '../log.js';
import { FakeClock, settle } from '../testing/fake-clock.js';
import { ALLOWED_LEASES, INJECTED_LEASE, INJECTED_MARK, INJECTED_POD_LABEL, INJECT_LABEL, SIDECAR_NAME } from './annotations.js';
import { injectionMark } from './injection-mark.js';
import { OperatorMetrics } from './operator-metrics.js';
import type { Pod } from './pod-types.js';
import { MANAGED_BY, grantName } from './rbac.js';
import { PASS_GAP_MS, Reconciler } from './reconciler.js';

const RESYNC_MS = 30_000;
const KEY = Buffer.alloc(32, 7);

interface Named {
  metadata: { name: string; namespace: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

/**
 * An in-memory API server for the calls the reconciler makes: lists of labelled pods, Roles and
 * RoleBindings, their create/replace/delete, Events, Namespaces, Leases (read, list by label,
 * create), and one pod watch the test drives. It keeps every call, so a test counts passes by
 * the pod lists it sees.
 */
function fakeCluster() {
  const pods = new Map<string, Pod & Named>();
  const rbac = { roles: new Map<string, Named>(), rolebindings: new Map<string, Named>() };
  const leases = new Map<string, Named>();
  const namespaces = new Map<string, { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } }>();
  const events: { pod: string; reason: string; message: string }[] = [];
  const calls: string[] = [];
  let onEvent: ((e: RawWatchEvent) => void) | undefined;
  const labelled = (o: { metadata: { labels?: Record<string, string> } }, selector: string | null) => {
    if (!selector) return true;
    const [k, v] = selector.split('=');
    return o.metadata.labels?.[k!] === v;
  };
  const client = {
    request: (method: string, path: string, opts?: { body?: unknown }) => {
      calls.push(`${method} ${path}`);
      const url = new URL(path, 'https://api.invalid');
      const parts = url.pathname.split('/').filter(Boolean);
      const selector = url.searchParams.get('labelSelector');
      if (method === 'GET' && url.pathname === '/api/v1/pods') return Promise.resolve({ items: [...pods.values()] });
      if (method === 'GET' && url.pathname === '/api/v1/namespaces')
        return Promise.resolve({ items: [...namespaces.values()].filter((n) => labelled(n, selector)) });
      if (method === 'GET' && parts[2] === 'namespaces' && parts.length === 4) {
        return Promise.resolve(namespaces.get(parts[3]!) ?? { metadata: { name: parts[3] } });
      }
      if (parts[1] === 'coordination.k8s.io') {
        if (method === 'GET' && parts[3] === 'leases') return Promise.resolve({ items: [...leases.values()].filter((l) => labelled(l, selector)) });
        const key = `${parts[4]}/${parts[6]}`;
        if (method === 'GET') return leases.has(key) ? Promise.resolve(leases.get(key)) : Promise.reject(apiError(404, 'not found'));
        if (method === 'POST') {
          const body = opts?.body as Named;
          const k = `${body.metadata.namespace}/${body.metadata.name}`;
          if (leases.has(k)) return Promise.reject(apiError(409, 'exists'));
          leases.set(k, body);
          return Promise.resolve(body);
        }
      }
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
        const e = opts?.body as { involvedObject: { name: string }; reason: string; message: string };
        events.push({ pod: e.involvedObject.name, reason: e.reason, message: e.message });
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
  return { client, pods, rbac, leases, namespaces, events, calls, podLists, emit };
}

/**
 * A labelled pod as the API server stores it: injected (the sidecar, the annotations and a mark
 * made with KEY, or with `key`), or not; `forged` writes the injector's annotations and container
 * without a mark, as any pod creator can.
 */
function pod(
  name: string,
  opts: { injected?: boolean; forged?: boolean; sa?: string; lease?: string; ns?: string; podLabel?: boolean; key?: Buffer } = {},
): Pod & Named {
  const injected = opts.injected ?? true;
  const namespace = opts.ns ?? 'app';
  const sa = opts.sa ?? 'web';
  const lease = opts.lease ?? 'web';
  const podLabel = opts.podLabel ?? false;
  const marks = { [INJECTED_LEASE]: lease, [INJECTED_POD_LABEL]: String(podLabel) };
  const mark = injectionMark(opts.key ?? KEY, { namespace, serviceAccount: sa, lease, podLabel });
  return {
    metadata: {
      name,
      namespace,
      uid: `uid-${name}`,
      labels: { [INJECT_LABEL]: 'true' },
      annotations: opts.forged ? marks : injected ? { ...marks, [INJECTED_MARK]: mark } : {},
    },
    spec: {
      serviceAccountName: sa,
      containers: [{ name: 'app', image: 'app:1' }, ...(injected || opts.forged ? [{ name: SIDECAR_NAME, image: 'leasehold:test' }] : [])],
    },
  };
}

async function started(cluster: ReturnType<typeof fakeCluster>, opts: { namespaceOptIn?: boolean } = {}) {
  const clock = new FakeClock();
  const reconciler = new Reconciler({
    client: cluster.client,
    log: silentLogger,
    metrics: new OperatorMetrics(false),
    excludedNamespaces: ['kube-system'],
    namespaceOptIn: opts.namespaceOptIn ?? false,
    markKey: KEY,
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
    // One pass: the pod list, the pair's Lease found absent and made, the RBAC lists, and the
    // one pair's Role and RoleBinding.
    assert.deepEqual(
      cluster.calls.slice(calls).map((c) => c.split('?')[0]),
      [
        'GET /api/v1/pods',
        'GET /apis/coordination.k8s.io/v1/leases',
        'GET /apis/coordination.k8s.io/v1/namespaces/app/leases/web',
        'POST /apis/coordination.k8s.io/v1/namespaces/app/leases',
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
    assert.deepEqual(
      cluster.events.map((e) => [e.pod, e.reason]),
      [['missed', 'LeaseholdNotInjected']],
    );
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

test('a pod that looks injected without a valid mark is never granted, and is reported once', async () => {
  const cluster = fakeCluster();
  const real = pod('web-0');
  // The injector's annotations and a container named leasehold, written by the pod's creator.
  const forged = pod('forged', { forged: true, sa: 'intruder', lease: 'kube-scheduler' });
  // A mark made with another key.
  const otherKey = pod('other-key', { sa: 'intruder', lease: 'other', key: Buffer.alloc(32, 9) });
  // A real mark, with the lease annotation changed after admission.
  const relabelled = pod('relabelled', { sa: 'intruder' });
  relabelled.metadata.annotations![INJECTED_LEASE] = 'payments';
  // A real mark copied into another namespace.
  const copied = pod('copied', { ns: 'team-b' });
  copied.metadata.annotations![INJECTED_MARK] = real.metadata.annotations![INJECTED_MARK]!;
  copied.metadata.namespace = 'team-b';
  // podLabel claimed after admission: the mark was made for false.
  const escalated = pod('escalated', { sa: 'intruder', lease: 'jobs' });
  escalated.metadata.annotations![INJECTED_POD_LABEL] = 'true';
  // The annotations without the sidecar (a template copied from an injected pod, created while
  // the webhook was not called): an uninjected pod, reported as one.
  const template = pod('template', { injected: false });
  template.metadata.annotations = { ...real.metadata.annotations };
  for (const p of [real, forged, otherKey, relabelled, copied, escalated, template]) cluster.pods.set(p.metadata.name, p);
  // A Role an earlier operator made for the forged pod is taken back.
  const stale = `app/${grantName('intruder', 'kube-scheduler')}`;
  cluster.rbac.roles.set(stale, { metadata: { name: grantName('intruder', 'kube-scheduler'), namespace: 'app' } });
  cluster.rbac.rolebindings.set(stale, { metadata: { name: grantName('intruder', 'kube-scheduler'), namespace: 'app' } });
  const { clock, reconciler } = await started(cluster);
  try {
    assert.deepEqual([...cluster.rbac.roles.keys()], [`app/${grantName('web', 'web')}`], 'only the pod the webhook injected is granted');
    assert.deepEqual([...cluster.rbac.rolebindings.keys()], [`app/${grantName('web', 'web')}`]);
    assert.deepEqual([...cluster.leases.keys()], ['app/web'], 'no Lease is made for a forged pod');
    assert.deepEqual(cluster.events.map((e) => [e.pod, e.reason]).sort(), [
      ['copied', 'LeaseholdNotGranted'],
      ['escalated', 'LeaseholdNotGranted'],
      ['forged', 'LeaseholdNotGranted'],
      ['other-key', 'LeaseholdNotGranted'],
      ['relabelled', 'LeaseholdNotGranted'],
      ['template', 'LeaseholdNotInjected'],
    ]);
    assert.match(cluster.events[0]!.message, /no valid injection mark/);
    await clock.advance(RESYNC_MS);
    assert.equal(cluster.podLists(), 2);
    assert.equal(cluster.events.length, 6, 'each reported once');
  } finally {
    await reconciler.stop();
  }
});

test("an existing Lease not made for leasehold is granted only when the namespace's owner allows it by name", async () => {
  const cluster = fakeCluster();
  // Another controller's Lease, and one the operator made earlier.
  cluster.leases.set('app/kube-scheduler', { metadata: { name: 'kube-scheduler', namespace: 'app' } });
  cluster.leases.set('app/web', { metadata: { name: 'web', namespace: 'app', labels: { [MANAGED_BY.key]: MANAGED_BY.value } } });
  const squatter = pod('squatter', { sa: 'intruder', lease: 'kube-scheduler' });
  const web = pod('web-0');
  const fresh = pod('jobs-0', { sa: 'jobs', lease: 'jobs' });
  for (const p of [squatter, web, fresh]) cluster.pods.set(p.metadata.name, p);
  const { clock, reconciler } = await started(cluster);
  try {
    const squatKey = `app/${grantName('intruder', 'kube-scheduler')}`;
    assert.ok(!cluster.rbac.roles.has(squatKey) && !cluster.rbac.rolebindings.has(squatKey), "another's Lease is not granted");
    assert.deepEqual(
      cluster.events.map((e) => [e.pod, e.reason]),
      [['squatter', 'LeaseholdNotGranted']],
    );
    assert.match(cluster.events[0]!.message, /Lease app\/kube-scheduler exists and was not made by leasehold-operator .*leasehold\.io\/allowed-leases/);
    assert.ok(cluster.rbac.roles.has(`app/${grantName('web', 'web')}`), 'a Lease labelled as leasehold-operator made it is granted');
    // An absent Lease is made, labelled, with no holder; its pods get no right to create Leases.
    const made = cluster.leases.get('app/jobs') as Named & { spec?: unknown };
    assert.deepEqual(made.metadata.labels, { [MANAGED_BY.key]: MANAGED_BY.value });
    assert.deepEqual(made.spec, {});
    const rules = (cluster.rbac.roles.get(`app/${grantName('jobs', 'jobs')}`) as Named & { rules: { verbs: string[]; resourceNames?: string[] }[] }).rules;
    assert.deepEqual(rules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['jobs'], verbs: ['get', 'update', 'list', 'watch'] },
    ]);

    // The namespace's owner allows that Lease by name: the next pass grants it.
    cluster.namespaces.set('app', { metadata: { name: 'app', annotations: { [ALLOWED_LEASES]: 'other, kube-scheduler' } } });
    await clock.advance(RESYNC_MS);
    assert.ok(cluster.rbac.roles.has(squatKey) && cluster.rbac.rolebindings.has(squatKey), 'granted once allowed');
    assert.deepEqual((cluster.leases.get('app/kube-scheduler') as Named).metadata.labels, undefined, 'the allowed Lease is left as it is');
  } finally {
    await reconciler.stop();
  }
});

test('with namespace opt-in, pods in a namespace not opted in are neither granted nor reported', async () => {
  const cluster = fakeCluster();
  cluster.namespaces.set('team-a', { metadata: { name: 'team-a', labels: { 'leasehold.io/injection': 'enabled' } } });
  cluster.namespaces.set('app', { metadata: { name: 'app' } });
  const inA = pod('a-0', { ns: 'team-a' });
  const outside = pod('web-0');
  const bare = pod('bare', { injected: false });
  const system = pod('sys-0', { ns: 'kube-system' });
  for (const p of [inA, outside, bare, system]) cluster.pods.set(p.metadata.name, p);
  const { reconciler } = await started(cluster, { namespaceOptIn: true });
  try {
    assert.deepEqual([...cluster.rbac.roles.keys()], [`team-a/${grantName('web', 'web')}`]);
    assert.deepEqual([...cluster.leases.keys()], ['team-a/web']);
    assert.deepEqual(cluster.events, [], 'the webhook never sees those namespaces: nothing to report');
  } finally {
    await reconciler.stop();
  }
});
