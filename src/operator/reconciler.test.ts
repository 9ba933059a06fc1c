import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient, RawWatchEvent } from '../kube/api-client.js';
import { apiError } from '../kube/api-errors.js';
import { silentLogger } from '../log.js';
import { FakeClock, settle } from '../testing/fake-clock.js';
import {
  ALLOWED_LEASES,
  INJECTED_LEASE,
  INJECTED_MARK,
  INJECTED_MAX_MEMBERS,
  INJECTED_POD_LABEL,
  INJECTED_SHARDS,
  INJECT_LABEL,
  SIDECAR_NAME,
} from './annotations.js';
import { fenceBindingFor, fenceBindingName, parseFencedKinds } from './fence-objects.js';
import { injectionMark, type GroupCounts } from './injection-mark.js';
import { injectionSettings, type SidecarDefaults } from './injection-settings.js';
import type { MarkVerifier } from './mark-key.js';
import { checkMark, markKey, withoutUnneeded, type Keyring } from './mark-keyring.js';
import { OperatorMetrics } from './operator-metrics.js';
import type { Container, Pod } from './pod-types.js';
import { INSTALLATION_LABEL, MANAGED_BY, grantName as grantNameOf, ownLabels } from './rbac.js';
import { PASS_GAP_MS, Reconciler } from './reconciler.js';
import { sidecarContainer } from './sidecar-container.js';

const RESYNC_MS = 30_000;
const KEY = Buffer.alloc(32, 7);
/** This install, and another one's in the same cluster. */
const INSTALL = 'ops.leasehold-operator';
const OTHER_INSTALL = 'ops-b.leasehold-operator';
const grantName = (sa: string, lease: string) => grantNameOf(INSTALL, sa, lease);
/** The fake clock's start: the ring's keys are older than every pod unless a test says otherwise. */
const T0 = Date.parse('2026-12-02T09:00:00.000Z');
const SINCE = T0 - 86_400_000;
const GRACE_MS = 30_000;
const FENCE_POLICY = 'leasehold-operator.ops.operator-fencing.leasehold.io';

/** The marks' keys as mark-key.ts keeps them, from a ring the test holds; records what keepOnly was told. */
function ringVerifier(ring: Keyring) {
  const kept: { needed: string[]; listedAt: number }[] = [];
  const verifier = {
    ring,
    kept,
    check: (p: Parameters<MarkVerifier['check']>[0]) => checkMark(verifier.ring, p, GRACE_MS),
    keepOnly: (needed: ReadonlySet<string>, listedAt: number) => {
      kept.push({ needed: [...needed], listedAt });
      verifier.ring = withoutUnneeded(verifier.ring, needed, listedAt, GRACE_MS);
      return Promise.resolve();
    },
  };
  return verifier;
}

const oneKey = (): Keyring => ({ current: markKey(KEY), retired: [], since: SINCE, dropped: [] });

interface Named {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
  };
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
  /** Cluster-scoped ValidatingAdmissionPolicyBindings, by name. */
  const bindings = new Map<string, { metadata: { name: string; labels?: Record<string, string> }; spec?: unknown }>();
  /** Cluster-scoped ValidatingAdmissionPolicies, by name: the chart's fencing policy unless a test removes it. */
  const policies = new Map<string, { spec: { paramKind: { apiVersion: string; kind: string } } }>([
    [FENCE_POLICY, { spec: { paramKind: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' } } }],
  ]);
  /** The operator run with the flag but without the chart's right to bindings. */
  let bindingsForbidden = false;
  const namespaces = new Map<string, { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } }>();
  const events: { pod: string; reason: string; message: string }[] = [];
  const calls: string[] = [];
  let onEvent: ((e: RawWatchEvent) => void) | undefined;
  /** A label selector of `k=v` and `!k` terms, as the API server applies it. */
  const labelled = (o: { metadata?: { labels?: Record<string, string> } }, selector: string | null) =>
    (selector ?? '')
      .split(',')
      .filter(Boolean)
      .every((term) => {
        if (term.startsWith('!')) return o.metadata?.labels?.[term.slice(1)] === undefined;
        const [k, v] = term.split('=');
        return o.metadata?.labels?.[k!] === v;
      });
  const client = {
    request: (method: string, path: string, opts?: { body?: unknown }) => {
      calls.push(`${method} ${path}`);
      const url = new URL(path, 'https://api.invalid');
      const parts = url.pathname.split('/').filter(Boolean);
      const selector = url.searchParams.get('labelSelector');
      if (method === 'GET' && url.pathname === '/api/v1/pods') return Promise.resolve({ items: [...pods.values()].filter((p) => labelled(p, selector)) });
      if (method === 'GET' && url.pathname === '/api/v1/namespaces')
        return Promise.resolve({ items: [...namespaces.values()].filter((n) => labelled(n, selector)) });
      if (method === 'GET' && parts[2] === 'namespaces' && parts.length === 4) {
        return Promise.resolve(namespaces.get(parts[3]!) ?? { metadata: { name: parts[3] } });
      }
      if (parts[1] === 'coordination.k8s.io') {
        if (method === 'GET' && parts[3] === 'leases') return Promise.resolve({ items: [...leases.values()].filter((l) => labelled(l, selector)) });
        if (method === 'GET' && parts[5] === 'leases' && parts.length === 6) {
          return Promise.resolve({ items: [...leases.values()].filter((l) => l.metadata.namespace === parts[4] && labelled(l, selector)) });
        }
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
      if (parts[3] === 'validatingadmissionpolicies' && method === 'GET') {
        return policies.has(parts[4]!) ? Promise.resolve(policies.get(parts[4]!)) : Promise.reject(apiError(404, 'not found'));
      }
      if (parts[3] === 'validatingadmissionpolicybindings') {
        if (bindingsForbidden) return Promise.reject(apiError(403, 'validatingadmissionpolicybindings is forbidden'));
        const name = parts[4];
        if (method === 'GET' && name === undefined) return Promise.resolve({ items: [...bindings.values()].filter((b) => labelled(b, selector)) });
        if (method === 'GET') return bindings.has(name!) ? Promise.resolve(bindings.get(name!)) : Promise.reject(apiError(404, 'not found'));
        const body = opts?.body as { metadata: { name: string } };
        if (method === 'POST' && bindings.has(body.metadata.name)) return Promise.reject(apiError(409, 'exists'));
        if (method === 'POST' || method === 'PUT') {
          bindings.set(body.metadata.name, body);
          return Promise.resolve(body);
        }
        if (method === 'DELETE') {
          bindings.delete(name!);
          return Promise.resolve({});
        }
      }
      const kind = parts.find((p): p is 'roles' | 'rolebindings' => p === 'roles' || p === 'rolebindings');
      if (kind && method === 'GET') return Promise.resolve({ items: [...rbac[kind].values()].filter((o) => labelled(o, selector)) });
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
  const forbidBindings = () => (bindingsForbidden = true);
  return { client, pods, rbac, leases, bindings, policies, forbidBindings, namespaces, events, calls, podLists, emit };
}

/**
 * A labelled pod as the API server stores it: injected (the sidecar, the annotations and a mark
 * made with KEY, or with `key`), or not; `forged` writes the injector's annotations and container
 * without a mark, as any pod creator can.
 */
function pod(
  name: string,
  opts: {
    injected?: boolean;
    forged?: boolean;
    sa?: string;
    lease?: string;
    ns?: string;
    podLabel?: boolean;
    key?: Buffer;
    created?: number;
    inject?: string;
    /** A member of the shard group named by `lease`, with these counts. */
    group?: GroupCounts;
  } = {},
): Pod & Named & { metadata: { creationTimestamp?: string } } {
  const injected = opts.injected ?? true;
  const namespace = opts.ns ?? 'app';
  const sa = opts.sa ?? 'web';
  const lease = opts.lease ?? 'web';
  const podLabel = opts.podLabel ?? false;
  const marks: Record<string, string> = { [INJECTED_LEASE]: lease, [INJECTED_POD_LABEL]: String(podLabel) };
  if (opts.group) {
    marks[INJECTED_SHARDS] = String(opts.group.shards);
    marks[INJECTED_MAX_MEMBERS] = String(opts.group.maxMembers);
  }
  const mark = injectionMark(opts.key ?? KEY, { namespace, serviceAccount: sa, lease, podLabel, ...(opts.group ? { group: opts.group } : {}) });
  return {
    metadata: {
      name,
      namespace,
      uid: `uid-${name}`,
      // Whole seconds, as the API server writes them.
      creationTimestamp: new Date(opts.created ?? T0).toISOString().replace(/\.\d+Z$/, 'Z'),
      labels: { [INJECT_LABEL]: opts.inject ?? 'true' },
      annotations: opts.forged ? marks : injected ? { ...marks, [INJECTED_MARK]: mark } : {},
    },
    spec: {
      serviceAccountName: sa,
      containers: [{ name: 'app', image: 'app:1' }, ...(injected || opts.forged ? [{ name: SIDECAR_NAME, image: 'leasehold:test' }] : [])],
    },
  };
}

async function started(
  cluster: ReturnType<typeof fakeCluster>,
  opts: {
    namespaceOptIn?: boolean;
    marks?: ReturnType<typeof ringVerifier>;
    installation?: string;
    injectValue?: string;
    fencePolicy?: string;
    policy?: SidecarDefaults;
  } = {},
) {
  const clock = new FakeClock(new Date(T0));
  const marks = opts.marks ?? ringVerifier(oneKey());
  const reconciler = new Reconciler({
    client: cluster.client,
    log: silentLogger,
    metrics: new OperatorMetrics(false),
    excludedNamespaces: ['kube-system'],
    namespaceOptIn: opts.namespaceOptIn ?? false,
    // Policy mode judges pods by their container and holds no mark keys.
    ...(opts.policy ? { policy: opts.policy } : { marks }),
    installation: opts.installation ?? INSTALL,
    injectValue: opts.injectValue ?? 'true',
    ...(opts.fencePolicy !== undefined ? { fencePolicy: opts.fencePolicy } : {}),
    clock,
  });
  reconciler.start(RESYNC_MS);
  await settle();
  return { clock, reconciler, marks };
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
  cluster.rbac.roles.set(stale, { metadata: { name: grantName('intruder', 'kube-scheduler'), namespace: 'app', labels: ownLabels(INSTALL) } });
  cluster.rbac.rolebindings.set(stale, { metadata: { name: grantName('intruder', 'kube-scheduler'), namespace: 'app', labels: ownLabels(INSTALL) } });
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
    assert.deepEqual(made.metadata.labels, { [MANAGED_BY.key]: MANAGED_BY.value, [INSTALLATION_LABEL]: INSTALL });
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

test('two installs: each lists, grants and removes only its own, and only the pods labelled with its value', async () => {
  const cluster = fakeCluster();
  const ours = pod('web-0');
  // A pod for the other install (its own value of leasehold.io/inject, its own key).
  const theirs = pod('b-0', { sa: 'b', lease: 'b', inject: 'team-b', key: Buffer.alloc(32, 8) });
  cluster.pods.set(ours.metadata.name, ours);
  cluster.pods.set(theirs.metadata.name, theirs);
  // The other install's grants: one for its pod, one for a pair of the same ServiceAccount and lease as ours.
  const other = (sa: string, lease: string) => ({
    metadata: { name: grantNameOf(OTHER_INSTALL, sa, lease), namespace: 'app', labels: ownLabels(OTHER_INSTALL) },
  });
  for (const [sa, lease] of [
    ['b', 'b'],
    ['web', 'web'],
  ] as const) {
    const o = other(sa, lease);
    cluster.rbac.roles.set(`app/${o.metadata.name}`, o);
    cluster.rbac.rolebindings.set(`app/${o.metadata.name}`, o);
  }
  const { clock, reconciler } = await started(cluster);
  try {
    await clock.advance(RESYNC_MS);
    const names = [...cluster.rbac.roles.keys()].sort();
    assert.deepEqual(
      names,
      [`app/${grantName('web', 'web')}`, `app/${grantNameOf(OTHER_INSTALL, 'b', 'b')}`, `app/${grantNameOf(OTHER_INSTALL, 'web', 'web')}`].sort(),
    );
    assert.equal(cluster.rbac.rolebindings.size, 3, "the other install's bindings are left alone");
    assert.deepEqual(cluster.rbac.roles.get(`app/${grantName('web', 'web')}`)!.metadata.labels, ownLabels(INSTALL));
    assert.deepEqual(cluster.events, [], "the other install's pod is neither granted nor reported here");
    assert.ok(
      cluster.calls.filter((c) => c.startsWith('GET /api/v1/pods')).every((c) => c.includes(encodeURIComponent(`${INJECT_LABEL}=true`))),
      'its pods listed by its own value',
    );
    assert.ok(
      cluster.calls
        .filter((c) => /^GET \/apis\/rbac[^?]*\/(roles|rolebindings)\?/.test(c))
        .every((c) => decodeURIComponent(c).includes(`${INSTALLATION_LABEL}`)),
      'its Roles and RoleBindings listed by install',
    );
  } finally {
    await reconciler.stop();
  }
});

test('the grants of an operator older than install labels are removed once this install has made its own', async () => {
  const cluster = fakeCluster();
  const web = pod('web-0');
  cluster.pods.set(web.metadata.name, web);
  const legacy = { metadata: { name: 'leasehold-00000000000000000000', namespace: 'app', labels: { [MANAGED_BY.key]: MANAGED_BY.value } } };
  cluster.rbac.roles.set('app/leasehold-00000000000000000000', legacy);
  cluster.rbac.rolebindings.set('app/leasehold-00000000000000000000', legacy);
  const { reconciler } = await started(cluster);
  try {
    assert.deepEqual([...cluster.rbac.roles.keys()], [`app/${grantName('web', 'web')}`]);
    assert.deepEqual([...cluster.rbac.rolebindings.keys()], [`app/${grantName('web', 'web')}`]);
    const made = cluster.calls.findIndex((c) => c.startsWith('POST /apis/rbac.authorization.k8s.io/v1/namespaces/app/rolebindings'));
    const removed = cluster.calls.findIndex((c) => c.startsWith('DELETE /apis/rbac.authorization.k8s.io/v1/namespaces/app/rolebindings/leasehold-0000'));
    assert.ok(made >= 0 && made < removed, 'its own binding made before the old one goes');
  } finally {
    await reconciler.stop();
  }
});

test("a lost mark key: what the older pods' ServiceAccounts hold is kept as it is, never made or widened, and said", async () => {
  const cluster = fakeCluster();
  const lost = Buffer.alloc(32, 4);
  const before = SINCE - 3_600_000;
  // Injected under a key the operator no longer holds, before its keys' record begins.
  const old = pod('web-0', { key: lost, created: before });
  const oldWidened = pod('web-1', { key: lost, created: before, podLabel: true });
  const ungranted = pod('jobs-0', { sa: 'jobs', lease: 'jobs', key: lost, created: before });
  // The same mark on a pod made after the record begins: no key lost can explain it.
  const young = pod('web-2', { key: lost, created: SINCE + 1_000 });
  for (const p of [old, oldWidened, ungranted, young]) cluster.pods.set(p.metadata.name, p);
  const name = grantName('web', 'web');
  const role = {
    metadata: { name, namespace: 'app', labels: ownLabels(INSTALL), uid: 'role-1' },
    rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['web'], verbs: ['get', 'update', 'list', 'watch'] }],
  };
  const binding = { metadata: { name, namespace: 'app', labels: ownLabels(INSTALL), uid: 'binding-1' } };
  cluster.rbac.roles.set(`app/${name}`, role);
  cluster.rbac.rolebindings.set(`app/${name}`, binding);
  cluster.leases.set('app/web', { metadata: { name: 'web', namespace: 'app', labels: ownLabels(INSTALL) } });
  const { clock, reconciler } = await started(cluster);
  try {
    await clock.advance(RESYNC_MS);
    assert.equal(cluster.rbac.roles.get(`app/${name}`), role, 'the Role kept as it was: not removed, not rewritten');
    assert.equal(cluster.rbac.rolebindings.get(`app/${name}`), binding);
    assert.ok(!cluster.calls.some((c) => c.startsWith('PUT ')), 'nothing rewritten: a podLabel claim does not widen it');
    assert.ok(!cluster.rbac.roles.has(`app/${grantName('jobs', 'jobs')}`), 'nothing made for a ServiceAccount that held nothing');
    assert.deepEqual(cluster.events.map((e) => [e.pod, e.reason]).sort(), [
      ['jobs-0', 'LeaseholdNotGranted'],
      ['web-0', 'LeaseholdGrantKept'],
      ['web-1', 'LeaseholdGrantKept'],
      ['web-2', 'LeaseholdNotGranted'],
    ]);
    const said = (pod: string) => cluster.events.find((e) => e.pod === pod)!.message;
    assert.match(said('web-0'), /keeps what this pod's ServiceAccount already holds, as it is and never more.*no longer holds/);
    assert.match(said('jobs-0'), /no longer holds .* holds no grant for it to keep/);
    assert.match(said('web-2'), /no valid injection mark/);

    // A new pod of the pair, injected with the current key: the grant is its own now, and stays
    // once the old pods are gone.
    const fresh = pod('web-3', { podLabel: false });
    cluster.pods.set(fresh.metadata.name, fresh);
    for (const p of [old, oldWidened, young]) cluster.pods.delete(p.metadata.name);
    await clock.advance(RESYNC_MS);
    assert.ok(cluster.rbac.roles.has(`app/${name}`) && cluster.rbac.rolebindings.has(`app/${name}`));
    // The last pod of the pair gone: so is its grant.
    cluster.pods.delete(fresh.metadata.name);
    await clock.advance(RESYNC_MS);
    assert.ok(!cluster.rbac.roles.has(`app/${name}`) && !cluster.rbac.rolebindings.has(`app/${name}`), 'kept while a pod needs it, no longer');
  } finally {
    await reconciler.stop();
  }
});

test('a rotated key verifies the pods made before it stopped signing, and goes once none is left', async () => {
  const cluster = fakeCluster();
  const old = Buffer.alloc(32, 5);
  const retiredAt = T0 - 60_000;
  const ring: Keyring = { current: markKey(KEY), retired: [markKey(old, retiredAt)], since: SINCE, dropped: [] };
  const made = pod('web-0', { key: old, created: retiredAt - 3_600_000 });
  // Within the grace: a replica that had not reread the Secret yet signed it.
  const late = pod('web-1', { key: old, created: retiredAt + GRACE_MS - 2_000 });
  // After the grace: whoever signed it, no replica signs with that key any more.
  const after = pod('web-2', { key: old, created: retiredAt + GRACE_MS + 1_000 });
  for (const p of [made, late, after]) cluster.pods.set(p.metadata.name, p);
  const marks = ringVerifier(ring);
  const { clock, reconciler } = await started(cluster, { marks });
  try {
    assert.ok(cluster.rbac.roles.has(`app/${grantName('web', 'web')}`), 'granted');
    assert.deepEqual(
      cluster.events.map((e) => [e.pod, e.reason]),
      [['web-2', 'LeaseholdNotGranted']],
    );
    assert.match(cluster.events[0]!.message, /signed with a key retired at .*made after that key stopped signing/);
    assert.deepEqual(marks.kept.at(-1)!.needed, [markKey(old).id], 'the retired key is still needed');
    assert.equal(marks.ring.retired.length, 1);
    for (const p of [made, late, after]) cluster.pods.delete(p.metadata.name);
    await clock.advance(RESYNC_MS);
    assert.deepEqual(marks.kept.at(-1)!.needed, []);
    assert.deepEqual(marks.ring.retired, [], 'dropped once no pod needs it');
    assert.deepEqual(marks.ring.dropped, [markKey(old).id]);
  } finally {
    await reconciler.stop();
  }
});

/** The rules of a shard group's grant: its Leases by name, list and watch, create. */
function groupRules(g: string, k: number, n: number) {
  const leases = { apiGroups: ['coordination.k8s.io'], resources: ['leases'] };
  const pad = (i: number) => String(i).padStart(4, '0');
  const names = [g, ...Array.from({ length: k }, (_, i) => `${g}-member-${pad(i)}`), ...Array.from({ length: n }, (_, i) => `${g}-shard-${pad(i)}`)];
  return [
    { ...leases, resourceNames: names, verbs: ['get', 'update'] },
    { ...leases, verbs: ['list', 'watch'] },
    { ...leases, verbs: ['create'] },
  ];
}

test("members of a shard group: their ServiceAccount gets the group's Leases by name (the widest counts its pods claim), list, watch and create; no Lease is made", async () => {
  const cluster = fakeCluster();
  const a = pod('jobs-0', { sa: 'jobs', lease: 'jobs', group: { shards: 4, maxMembers: 2 } });
  const b = pod('jobs-1', { sa: 'jobs', lease: 'jobs', group: { shards: 6, maxMembers: 1 } });
  for (const p of [a, b]) cluster.pods.set(p.metadata.name, p);
  const { clock, reconciler } = await started(cluster);
  try {
    const key = `app/${grantName('jobs', 'jobs')}`;
    const role = cluster.rbac.roles.get(key) as Named & { rules: unknown[] };
    assert.deepEqual(role.rules, groupRules('jobs', 2, 6));
    assert.equal(role.metadata.annotations!['leasehold.io/shards'], '6/2');
    assert.ok(cluster.rbac.rolebindings.has(key));
    assert.deepEqual([...cluster.leases.keys()], [], "the members make the group's records, labelled: the operator makes none");
    assert.deepEqual(cluster.events, []);

    // The pod with the wider shard count gone: the Role narrows to what the others claim.
    cluster.pods.delete(b.metadata.name);
    await clock.advance(RESYNC_MS);
    assert.deepEqual((cluster.rbac.roles.get(key) as Named & { rules: unknown[] }).rules, groupRules('jobs', 2, 4));
    // The last gone: so is the grant.
    cluster.pods.delete(a.metadata.name);
    await clock.advance(RESYNC_MS);
    assert.ok(!cluster.rbac.roles.has(key) && !cluster.rbac.rolebindings.has(key));
  } finally {
    await reconciler.stop();
  }
});

test("a group's name held by another controller's Lease is not granted until it is the group's record or allowed; a claim past the mark earns nothing", async () => {
  const cluster = fakeCluster();
  // The group's own header and a slot, as its members label them; another controller's Lease on a shard's name.
  const record = (name: string, kind: string) => ({
    metadata: { name, namespace: 'app', labels: { 'leasehold.io/group': 'jobs', 'leasehold.io/group-record': kind } },
  });
  cluster.leases.set('app/jobs', record('jobs', 'group'));
  cluster.leases.set('app/jobs-member-0000', record('jobs-member-0000', 'member'));
  cluster.leases.set('app/jobs-shard-0002', { metadata: { name: 'jobs-shard-0002', namespace: 'app' } });
  // A record of another group under this group's name is not this group's either.
  cluster.leases.set('app/jobs-shard-0003', record('jobs-shard-0003', 'member'));
  const member = pod('jobs-0', { sa: 'jobs', lease: 'jobs', group: { shards: 4, maxMembers: 2 } });
  // Signed for 4 shards, claiming 4096 after admission.
  const forged = pod('jobs-9', { sa: 'jobs', lease: 'jobs', group: { shards: 4, maxMembers: 2 } });
  forged.metadata.annotations![INJECTED_SHARDS] = '4096';
  for (const p of [member, forged]) cluster.pods.set(p.metadata.name, p);
  const { clock, reconciler } = await started(cluster);
  try {
    const key = `app/${grantName('jobs', 'jobs')}`;
    assert.ok(!cluster.rbac.roles.has(key) && !cluster.rbac.rolebindings.has(key), 'a name another controller holds is not granted');
    const said = (p: string) => cluster.events.filter((e) => e.pod === p).map((e) => e.message);
    assert.match(
      said('jobs-0').join('\n'),
      /Lease app\/jobs-shard-0002, a name of shard group jobs, exists and is neither a record of that group \(labels leasehold\.io\/group=jobs, leasehold\.io\/group-record=shard\) nor made by leasehold-operator.*leasehold\.io\/allowed-leases/,
    );
    assert.match(said('jobs-9').join('\n'), /no valid injection mark/);

    // The namespace's owner allows the one name; the other is still another group's record.
    cluster.namespaces.set('app', { metadata: { name: 'app', annotations: { [ALLOWED_LEASES]: 'jobs-shard-0002' } } });
    await clock.advance(RESYNC_MS);
    assert.ok(!cluster.rbac.roles.has(key));
    assert.match(said('jobs-0').join('\n'), /Lease app\/jobs-shard-0003, a name of shard group jobs/);
    // Made this group's record (as its member would): granted, and for the 4 shards signed, not 4096.
    cluster.leases.set('app/jobs-shard-0003', record('jobs-shard-0003', 'shard'));
    await clock.advance(RESYNC_MS);
    assert.deepEqual((cluster.rbac.roles.get(key) as Named & { rules: unknown[] }).rules, groupRules('jobs', 2, 4));
    assert.equal((cluster.leases.get('app/jobs-shard-0002') as Named).metadata.labels, undefined, 'the allowed Lease is left as it is');
  } finally {
    await reconciler.stop();
  }
});

test("a lost mark key: a kept member's group grant stays as it is, and a new member's narrower claim does not narrow it while the kept pod lives", async () => {
  const cluster = fakeCluster();
  const lost = Buffer.alloc(32, 4);
  const old = pod('jobs-0', { sa: 'jobs', lease: 'jobs', key: lost, created: SINCE - 3_600_000, group: { shards: 8, maxMembers: 3 } });
  cluster.pods.set(old.metadata.name, old);
  const name = grantName('jobs', 'jobs');
  const role = { metadata: { name, namespace: 'app', labels: ownLabels(INSTALL), uid: 'role-1' }, rules: groupRules('jobs', 3, 8) };
  cluster.rbac.roles.set(`app/${name}`, role);
  cluster.rbac.rolebindings.set(`app/${name}`, { metadata: { name, namespace: 'app', labels: ownLabels(INSTALL), uid: 'binding-1' } });
  const { clock, reconciler } = await started(cluster);
  try {
    assert.equal(cluster.rbac.roles.get(`app/${name}`), role, 'kept as it was');
    assert.deepEqual(
      cluster.events.map((e) => [e.pod, e.reason]),
      [['jobs-0', 'LeaseholdGrantKept']],
    );
    // A new member signed with the current key for fewer shards: the Role keeps the old pod's names while it lives.
    const fresh = pod('jobs-1', { sa: 'jobs', lease: 'jobs', group: { shards: 4, maxMembers: 3 } });
    cluster.pods.set(fresh.metadata.name, fresh);
    await clock.advance(RESYNC_MS);
    assert.deepEqual((cluster.rbac.roles.get(`app/${name}`) as Named & { rules: unknown[] }).rules, groupRules('jobs', 3, 8));
    cluster.pods.delete(old.metadata.name);
    await clock.advance(RESYNC_MS);
    assert.deepEqual(
      (cluster.rbac.roles.get(`app/${name}`) as Named & { rules: unknown[] }).rules,
      groupRules('jobs', 3, 4),
      'then only what the new one claims',
    );
  } finally {
    await reconciler.stop();
  }
});

const fenceAsking = (p: ReturnType<typeof pod>, kinds: string) => {
  p.metadata.annotations = { ...p.metadata.annotations, 'leasehold.io/fence-objects': kinds };
  return p;
};

test('leasehold.io/fence-objects: one binding per Lease, the kinds of all its pods; corrected, and removed once no pod asks', async () => {
  const cluster = fakeCluster();
  const web0 = fenceAsking(pod('web-0'), 'configmaps');
  const web1 = fenceAsking(pod('web-1', { sa: 'web2' }), 'deployments.apps');
  const jobs = pod('jobs-0', { lease: 'jobs', sa: 'jobs' });
  // Looks injected, mark forged: it earns no binding, for its Lease or any other.
  const forged = fenceAsking(pod('forged-0', { lease: 'stolen', forged: true }), 'secrets');
  for (const p of [web0, web1, jobs, forged]) cluster.pods.set(p.metadata.name, p);
  // Another install's binding: never this one's to correct or remove.
  const theirs = fenceBindingFor({ installation: OTHER_INSTALL, policy: 'x', namespace: 'app', lease: 'web', kinds: parseFencedKinds('pods') });
  cluster.bindings.set(theirs.metadata.name, theirs);
  const { clock, reconciler } = await started(cluster, { fencePolicy: FENCE_POLICY });
  try {
    const name = fenceBindingName(INSTALL, 'app', 'web');
    const want = (kinds: string) =>
      fenceBindingFor({ installation: INSTALL, policy: FENCE_POLICY, namespace: 'app', lease: 'web', kinds: parseFencedKinds(kinds) });
    assert.deepEqual(cluster.bindings.get(name), want('configmaps,deployments.apps'), "both pods' kinds, once");
    assert.deepEqual([...cluster.bindings.keys()].sort(), [name, theirs.metadata.name].sort(), 'none for the Lease no pod asks for, none for the forged pod');

    // Unchanged: no write on the next pass.
    const writes = () => cluster.calls.filter((c) => /^(POST|PUT|DELETE) .*validatingadmissionpolicybindings/.test(c)).length;
    const before = writes();
    await clock.advance(RESYNC_MS);
    assert.equal(writes(), before, 'a binding as wanted is left alone');

    // One pod goes: its kind goes from the binding.
    cluster.pods.delete(web1.metadata.name);
    await clock.advance(RESYNC_MS);
    assert.deepEqual(cluster.bindings.get(name)?.spec, want('configmaps').spec);

    // The last pod asking goes: the binding goes (a cluster-scoped object no owner reference removes).
    cluster.pods.delete(web0.metadata.name);
    await clock.advance(RESYNC_MS);
    assert.ok(!cluster.bindings.has(name), 'removed once no pod of its Lease asks');
    assert.ok(cluster.bindings.has(theirs.metadata.name), "another install's binding kept");
    assert.deepEqual(
      cluster.events.filter((e) => e.reason === 'LeaseholdNotFenced'),
      [],
    );
  } finally {
    await reconciler.stop();
  }
});

test('leasehold.io/fence-objects without --fence-objects-policy: the pod reported once, nothing made, no binding even listed', async () => {
  const cluster = fakeCluster();
  const web0 = fenceAsking(pod('web-0'), 'configmaps');
  cluster.pods.set(web0.metadata.name, web0);
  const { clock, reconciler } = await started(cluster);
  try {
    await clock.advance(RESYNC_MS);
    assert.deepEqual(
      cluster.events.filter((e) => e.reason === 'LeaseholdNotFenced'),
      [
        {
          pod: 'web-0',
          reason: 'LeaseholdNotFenced',
          message:
            "leasehold-operator makes no binding for this pod's leasehold.io/fence-objects: this operator makes no admission policy bindings: it runs without --fence-objects-policy (the chart's fencing.objectPolicies.enabled is false)",
        },
      ],
      'once, though two passes ran',
    );
    assert.equal(cluster.bindings.size, 0);
    assert.ok(!cluster.calls.some((c) => c.includes('validatingadmissionpolicybindings')), 'not even a list: it holds no right to one');
    assert.ok(cluster.rbac.roles.has(`app/${grantName('web', 'web')}`), 'its grant made as for any pod');
  } finally {
    await reconciler.stop();
  }
});

test('leasehold.io/fence-objects on a shard group member, or edited to a bad value since admission: reported, no binding', async () => {
  const cluster = fakeCluster();
  const member = fenceAsking(pod('jobs-0', { lease: 'jobs', sa: 'jobs', group: { shards: 8, maxMembers: 4 } }), 'configmaps');
  const edited = fenceAsking(pod('web-0'), 'configmaps/status');
  for (const p of [member, edited]) cluster.pods.set(p.metadata.name, p);
  const { reconciler } = await started(cluster, { fencePolicy: FENCE_POLICY });
  try {
    const said = cluster.events.filter((e) => e.reason === 'LeaseholdNotFenced').sort((a, b) => (a.pod < b.pod ? -1 : 1));
    assert.equal(said.length, 2);
    assert.match(said[0]!.message, /applies to a lease, not to a shard group/);
    assert.match(said[1]!.message, /annotation leasehold\.io\/fence-objects "configmaps\/status" is invalid: .*subresource/);
    assert.equal(cluster.bindings.size, 0);
  } finally {
    await reconciler.stop();
  }
});

test("bindings refused by the API server (the flag without the chart's right): the rest of the pass still runs", async () => {
  const cluster = fakeCluster();
  cluster.forbidBindings();
  const web0 = fenceAsking(pod('web-0'), 'configmaps');
  const bare = pod('bare-0', { injected: false });
  for (const p of [web0, bare]) cluster.pods.set(p.metadata.name, p);
  const { reconciler, marks } = await started(cluster, { fencePolicy: FENCE_POLICY });
  try {
    assert.ok(
      cluster.calls.some((c) => c.startsWith('GET /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings')),
      'tried',
    );
    assert.ok(cluster.rbac.roles.has(`app/${grantName('web', 'web')}`), 'the grant made');
    assert.deepEqual(
      cluster.events.map((e) => [e.pod, e.reason]),
      [['bare-0', 'LeaseholdNotInjected']],
      'the uninjected pod reported',
    );
    assert.equal(marks.kept.length, 1, "the marks' keys pass ran");
  } finally {
    await reconciler.stop();
  }
});

test('--fence-objects-policy naming a policy that is missing, or not a Lease-taking one: pods told, no binding made', async () => {
  for (const policy of [undefined, { spec: { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } } }]) {
    const cluster = fakeCluster();
    cluster.policies.delete(FENCE_POLICY);
    if (policy) cluster.policies.set(FENCE_POLICY, policy);
    const web0 = fenceAsking(pod('web-0'), 'configmaps');
    cluster.pods.set(web0.metadata.name, web0);
    const { reconciler } = await started(cluster, { fencePolicy: FENCE_POLICY });
    try {
      assert.equal(cluster.bindings.size, 0);
      const said = cluster.events.filter((e) => e.reason === 'LeaseholdNotFenced');
      assert.equal(said.length, 1);
      assert.match(
        said[0]!.message,
        policy ? /does not take a coordination\.k8s\.io\/v1 Lease as its parameter/ : /does not exist: a binding of it would fence nothing/,
      );
    } finally {
      await reconciler.stop();
    }
  }
});

test("a lost mark key: a kept pod's Lease keeps its binding as it is, never made or widened for it", async () => {
  const cluster = fakeCluster();
  const lost = Buffer.alloc(32, 4);
  const before = SINCE - 3_600_000;
  // web's pod asks for more than its binding holds; jobs' pod has a grant but no binding yet.
  const web = fenceAsking(pod('web-0', { key: lost, created: before }), 'configmaps,secrets');
  const jobs = fenceAsking(pod('jobs-0', { sa: 'jobs', lease: 'jobs', key: lost, created: before }), 'configmaps');
  for (const p of [web, jobs]) cluster.pods.set(p.metadata.name, p);
  for (const [sa, lease] of [
    ['web', 'web'],
    ['jobs', 'jobs'],
  ] as const) {
    const name = grantName(sa, lease);
    const role = {
      metadata: { name, namespace: 'app', labels: ownLabels(INSTALL) },
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [lease], verbs: ['get', 'update', 'list', 'watch'] }],
    };
    cluster.rbac.roles.set(`app/${name}`, role);
    cluster.rbac.rolebindings.set(`app/${name}`, { metadata: { name, namespace: 'app', labels: ownLabels(INSTALL) } });
    cluster.leases.set(`app/${lease}`, { metadata: { name: lease, namespace: 'app', labels: ownLabels(INSTALL) } });
  }
  const held = fenceBindingFor({ installation: INSTALL, policy: FENCE_POLICY, namespace: 'app', lease: 'web', kinds: parseFencedKinds('configmaps') });
  cluster.bindings.set(held.metadata.name, held);
  const { clock, reconciler } = await started(cluster, { fencePolicy: FENCE_POLICY });
  try {
    await clock.advance(RESYNC_MS);
    assert.equal(cluster.bindings.get(held.metadata.name), held, 'kept as it was: not removed, not widened to secrets');
    assert.ok(!cluster.bindings.has(fenceBindingName(INSTALL, 'app', 'jobs')), 'none made for a kept pod');
    assert.ok(!cluster.calls.some((c) => /^(POST|PUT|DELETE) .*validatingadmissionpolicybindings/.test(c)));
  } finally {
    await reconciler.stop();
  }
});

/** Policy mode: the container defaults the operator and its policy inject with. */
const SIDECAR: SidecarDefaults = { image: 'leasehold:test', imagePullPolicy: 'IfNotPresent', nativeSidecar: 'false', clusterSupportsNativeSidecars: true };

/**
 * A labelled pod as the API server stores it in policy mode: the sidecar the policy gives for its
 * annotations (no mark: a policy holds no key), or none; `sidecarFor` puts in the sidecar another
 * pod's annotations would get (a made-up container, or annotations edited after creation).
 */
function policyPod(
  name: string,
  opts: { ns?: string; sa?: string; lease?: string; injected?: boolean; sidecarFor?: Record<string, string>; extra?: Record<string, string> } = {},
): Pod & Named {
  const annotations = { 'leasehold.io/lease': opts.lease ?? 'web', ...opts.extra };
  const p: Pod & Named = {
    metadata: { name, namespace: opts.ns ?? 'app', uid: `uid-${name}`, labels: { [INJECT_LABEL]: 'true' }, annotations },
    spec: { serviceAccountName: opts.sa ?? 'web', containers: [{ name: 'app', image: 'app:1' }] },
  };
  if (opts.injected === false) return p;
  const basis = opts.sidecarFor ? { ...p, metadata: { ...p.metadata, annotations: opts.sidecarFor } } : p;
  p.spec!.containers!.push(sidecarContainer(injectionSettings(basis, SIDECAR), SIDECAR) as Container);
  return p;
}

test('policy mode: a pod is granted what its own annotations give when its sidecar is the one the policy gives for them; lookalikes get nothing', async () => {
  const cluster = fakeCluster();
  const real = policyPod('web-0');
  // A made-up container: the sidecar of another lease under annotations that name this one.
  const madeUp = policyPod('made-up', { sa: 'intruder', sidecarFor: { 'leasehold.io/lease': 'payments' } });
  // Annotations edited after creation: the container, which cannot change, still says web.
  const edited = policyPod('edited', { sa: 'intruder' });
  edited.metadata.annotations!['leasehold.io/lease'] = 'payments';
  // The webhook's annotations written by the pod's creator: policy mode reads none of them.
  const claims = policyPod('claims', { sa: 'jobs', lease: 'jobs' });
  Object.assign(claims.metadata.annotations!, { [INJECTED_LEASE]: 'payments', [INJECTED_POD_LABEL]: 'true', [INJECTED_MARK]: 'v1.forged' });
  // Copied from app/web into another namespace and ServiceAccount: what a labelled pod created
  // there would get (its own pair), never the original's; into an excluded one: nothing.
  const copied = policyPod('copied', { ns: 'team-b', sa: 'other' });
  const excluded = policyPod('excluded', { ns: 'kube-system' });
  // A pod created unlabelled with that same sidecar, labelled later, is this same object: policy
  // mode cannot tell it by a mark. The validating policy's label guard refuses that UPDATE, and
  // without it the pod gets only what creating it labelled would have (here: web-0's own pair).
  const labelledLater = policyPod('labelled-later');
  for (const p of [real, madeUp, edited, claims, copied, excluded, labelledLater]) cluster.pods.set(p.metadata.name, p);
  const { clock, reconciler, marks } = await started(cluster, { policy: SIDECAR });
  try {
    assert.deepEqual(
      [...cluster.rbac.roles.keys()].sort(),
      [`app/${grantName('jobs', 'jobs')}`, `app/${grantName('web', 'web')}`, `team-b/${grantName('other', 'web')}`].sort(),
      'each pod its own pair, from its own annotations',
    );
    assert.deepEqual([...cluster.rbac.rolebindings.keys()].sort(), [...cluster.rbac.roles.keys()].sort());
    const jobs = cluster.rbac.roles.get(`app/${grantName('jobs', 'jobs')}`) as Named & { rules: { resources: string[] }[] };
    assert.ok(!jobs.rules.some((r) => r.resources.includes('pods')), "the creator's injected-pod-label claim widens nothing");
    assert.deepEqual([...cluster.leases.keys()].sort(), ['app/jobs', 'app/web', 'team-b/web'], 'no Lease for payments');
    assert.deepEqual(cluster.events.map((e) => [e.pod, e.reason]).sort(), [
      ['edited', 'LeaseholdNotGranted'],
      ['made-up', 'LeaseholdNotGranted'],
    ]);
    assert.match(
      cluster.events.find((e) => e.pod === 'made-up')!.message,
      /runs sidecar --backend=kubernetes --lease=payments, but the policy injects sidecar --backend=kubernetes --lease=web/,
    );
    assert.match(cluster.events.find((e) => e.pod === 'edited')!.message, /--lease=web, but the policy injects .*--lease=payments/);
    assert.deepEqual(marks.kept, [], 'no mark key is asked about');
    await clock.advance(RESYNC_MS);
    assert.equal(cluster.events.length, 2, 'each reported once');
  } finally {
    await reconciler.stop();
  }
});

test("policy mode: the lease guard is unchanged: another controller's Lease is granted only when the namespace's owner allows it", async () => {
  const cluster = fakeCluster();
  cluster.leases.set('app/kube-scheduler', { metadata: { name: 'kube-scheduler', namespace: 'app' } });
  // Injected faithfully for its annotations, which name a Lease another controller holds.
  const squatter = policyPod('squatter', { sa: 'intruder', lease: 'kube-scheduler' });
  cluster.pods.set(squatter.metadata.name, squatter);
  const { clock, reconciler } = await started(cluster, { policy: SIDECAR });
  try {
    assert.equal(cluster.rbac.roles.size + cluster.rbac.rolebindings.size, 0);
    assert.deepEqual(
      cluster.events.map((e) => [e.pod, e.reason]),
      [['squatter', 'LeaseholdNotGranted']],
    );
    assert.match(cluster.events[0]!.message, /Lease app\/kube-scheduler exists and was not made by leasehold-operator/);
    cluster.namespaces.set('app', { metadata: { name: 'app', annotations: { [ALLOWED_LEASES]: 'kube-scheduler' } } });
    await clock.advance(RESYNC_MS);
    assert.ok(cluster.rbac.roles.has(`app/${grantName('intruder', 'kube-scheduler')}`), 'granted once allowed by name');
  } finally {
    await reconciler.stop();
  }
});

test('policy mode: a labelled pod running without the sidecar is reported once, naming the policy as what did not inject it', async () => {
  const cluster = fakeCluster();
  const bare = policyPod('bare', { injected: false });
  cluster.pods.set(bare.metadata.name, bare);
  const { clock, reconciler } = await started(cluster, { policy: SIDECAR });
  try {
    assert.deepEqual(
      cluster.events.map((e) => [e.pod, e.reason]),
      [['bare', 'LeaseholdNotInjected']],
    );
    assert.match(cluster.events[0]!.message, /runs without the leasehold sidecar: the MutatingAdmissionPolicy did not inject it \(its binding missing/);
    assert.equal(cluster.rbac.roles.size, 0);
    await clock.advance(RESYNC_MS);
    assert.equal(cluster.events.length, 1);
  } finally {
    await reconciler.stop();
  }
});

test('policy mode: leasehold.io/fence-objects earns a binding by the same judgement as the grant; a lookalike none', async () => {
  const cluster = fakeCluster();
  // alreadyInjected needs the injector's annotations the policy writes; the pod's own fence ask.
  const real = policyPod('web-0', { extra: { 'leasehold.io/fence-objects': 'configmaps' } });
  const madeUp = policyPod('made-up', {
    sa: 'intruder',
    lease: 'stolen',
    sidecarFor: { 'leasehold.io/lease': 'payments' },
    extra: { 'leasehold.io/fence-objects': 'secrets' },
  });
  for (const p of [real, madeUp]) cluster.pods.set(p.metadata.name, p);
  const { reconciler } = await started(cluster, { policy: SIDECAR, fencePolicy: FENCE_POLICY });
  try {
    const want = fenceBindingFor({ installation: INSTALL, policy: FENCE_POLICY, namespace: 'app', lease: 'web', kinds: parseFencedKinds('configmaps') });
    assert.deepEqual([...cluster.bindings.keys()], [want.metadata.name], 'the faithful pod only');
    assert.deepEqual(cluster.bindings.get(want.metadata.name), want);
  } finally {
    await reconciler.stop();
  }
});

test('policy mode: a pod whose only fault is its fence-objects value keeps its grant and is told LeaseholdNotFenced, as in webhook mode', async () => {
  const cluster = fakeCluster();
  // Admitted with a valid value, edited since (the label guard refuses that edit; an install
  // without it, or a value admitted before the policy checked it, still reaches the operator).
  const edited = policyPod('web-0', { extra: { 'leasehold.io/fence-objects': 'configmaps' } });
  edited.metadata.annotations!['leasehold.io/fence-objects'] = '*';
  // A lease name the fenced-by label cannot hold: the sidecar is right, the ask is not.
  const long = 'l'.repeat(64);
  const longLease = policyPod('long', { sa: 'long', lease: long });
  longLease.metadata.annotations!['leasehold.io/fence-objects'] = 'configmaps';
  for (const p of [edited, longLease]) cluster.pods.set(p.metadata.name, p);
  const { reconciler } = await started(cluster, { policy: SIDECAR, fencePolicy: FENCE_POLICY });
  try {
    assert.deepEqual(
      [...cluster.rbac.roles.keys()].sort(),
      [`app/${grantName('long', long)}`, `app/${grantName('web', 'web')}`].sort(),
      'each granted by its sidecar',
    );
    assert.deepEqual([...cluster.bindings.keys()], [], 'no binding for a bad ask');
    assert.deepEqual(cluster.events.map((e) => [e.pod, e.reason]).sort(), [
      ['long', 'LeaseholdNotFenced'],
      ['web-0', 'LeaseholdNotFenced'],
    ]);
    assert.match(cluster.events.find((e) => e.pod === 'web-0')!.message, /annotation leasehold.io\/fence-objects "\*" is invalid: "\*": no wildcard/);
    assert.match(
      cluster.events.find((e) => e.pod === 'long')!.message,
      /the lease name is 64 characters long: it is the value of the leasehold.io\/fenced-by label, at most 63/,
    );
  } finally {
    await reconciler.stop();
  }
});
