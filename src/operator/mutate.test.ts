import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { injectionPatch, review, type PatchOp } from './mutate.js';
import { workloadLeaseName } from './lease-name.js';
import type { InjectorDefaults } from './injection-settings.js';
import type { Pod } from './pod-types.js';
import { hasValidMark, injectionMark } from './injection-mark.js';

/** The key that signs, and one a rotation retired (it still verifies). */
const KEY = Buffer.alloc(32, 1);
const RETIRED = Buffer.alloc(32, 3);

const defaults: InjectorDefaults = {
  image: 'leasehold:test',
  imagePullPolicy: 'IfNotPresent',
  nativeSidecar: 'false',
  clusterSupportsNativeSidecars: true,
  marks: { signing: () => KEY, verifying: () => [KEY, RETIRED] },
};

/** A pod as a Deployment's ReplicaSet sends it to admission: no name yet, owned by the ReplicaSet. */
function deploymentPod(annotations?: Record<string, string>, extra: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return {
    metadata: {
      generateName: 'web-7d9f8c6b5-',
      namespace: 'shop',
      labels: { app: 'web', 'pod-template-hash': '7d9f8c6b5', 'leasehold.io/inject': 'true' },
      ...(annotations ? { annotations } : {}),
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8c6b5', controller: true }],
    },
    spec: {
      containers: [
        { name: 'app', image: 'busybox' },
        { name: 'helper', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] },
      ],
      ...extra,
    },
  };
}

/** Applies RFC 6902 "add" and "remove" operations, as the API server does, to a copy. */
function apply(doc: unknown, ops: PatchOp[]): Pod {
  const out = structuredClone(doc) as Record<string, unknown>;
  for (const op of ops) {
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = parts.pop()!;
    let at: Record<string, unknown> | unknown[] = out;
    for (const p of parts) at = at[p] as Record<string, unknown>;
    if (op.op === 'remove') {
      assert.ok(!Array.isArray(at) && last in at, `remove of ${op.path}, which is absent`);
      delete at[last];
      continue;
    }
    if (Array.isArray(at)) {
      if (last === '-') at.push(op.value);
      else at.splice(Number(last), 0, op.value);
    } else {
      assert.ok(!(last in at), `add would replace ${op.path}`);
      at[last] = op.value;
    }
  }
  return out;
}

function reviewOf(pod: Pod, operation = 'CREATE') {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'u-1', kind: { kind: 'Pod' }, operation, namespace: 'shop', object: pod },
  };
}

function refusal(pod: Pod): string {
  const r = review(reviewOf(pod), defaults).response;
  assert.equal(r.allowed, false, 'the pod should have been refused');
  return r.status!.message;
}

test('a Deployment pod gets a plain sidecar, the status volume read-only in every app container, the downward-API env', () => {
  const pod = deploymentPod();
  const out = apply(pod, injectionPatch(pod, defaults));
  const names = out.spec!.containers!.map((c) => c.name);
  assert.deepEqual(names, ['app', 'helper', 'leasehold']);
  assert.equal(out.spec!.initContainers, undefined);
  const sidecar = out.spec!.containers![2]!;
  assert.equal(sidecar.restartPolicy, undefined);
  assert.ok((sidecar.args as string[]).includes('--lease=web'), 'the lease is the Deployment name');
  assert.ok((sidecar.args as string[]).includes('--ready-when=elected-any'));
  assert.ok(!(sidecar.args as string[]).includes('--pod-label'));
  assert.deepEqual(sidecar.env, [
    { name: 'LEASEHOLD_IDENTITY', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'LEASEHOLD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  ]);
  assert.deepEqual(out.spec!.volumes, [{ name: 'leasehold-status', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }]);
  assert.deepEqual(out.spec!.containers![0]!.volumeMounts, [{ name: 'leasehold-status', mountPath: '/leader', readOnly: true }]);
  assert.deepEqual(out.spec!.containers![1]!.volumeMounts, [
    { name: 'data', mountPath: '/data' },
    { name: 'leasehold-status', mountPath: '/leader', readOnly: true },
  ]);
  assert.deepEqual(out.metadata!.annotations, {
    'leasehold.io/injected-lease': 'web',
    'leasehold.io/injected-pod-label': 'false',
    'leasehold.io/injected-mark': injectionMark(KEY, { namespace: 'shop', serviceAccount: 'default', lease: 'web', podLabel: false }),
  });
  assert.ok(hasValidMark(out, [KEY]), 'signed with the signing key');
});

test('native-sidecar "true" makes an init container with restartPolicy Always, after the pod\'s own', () => {
  const pod = deploymentPod({ 'leasehold.io/native-sidecar': 'true' }, { initContainers: [{ name: 'migrate', image: 'busybox' }] });
  const out = apply(pod, injectionPatch(pod, defaults));
  assert.deepEqual(
    out.spec!.initContainers!.map((c) => [c.name, c.restartPolicy]),
    [
      ['migrate', undefined],
      ['leasehold', 'Always'],
    ],
  );
  assert.deepEqual(
    out.spec!.containers!.map((c) => c.name),
    ['app', 'helper'],
  );
});

test('native-sidecar "auto" follows what the cluster supports; "true" on a cluster without it is refused', () => {
  const pod = deploymentPod({ 'leasehold.io/native-sidecar': 'auto' });
  const native = apply(pod, injectionPatch(pod, defaults));
  assert.equal(native.spec!.initContainers![0]!.name, 'leasehold');
  const old = { ...defaults, clusterSupportsNativeSidecars: false };
  const plain = apply(pod, injectionPatch(pod, old));
  assert.equal(plain.spec!.initContainers, undefined);
  assert.throws(
    () => injectionPatch(deploymentPod({ 'leasehold.io/native-sidecar': 'true' }), old),
    /leasehold\.io\/native-sidecar "true" is invalid: .*1\.29/,
  );
});

test('annotations set the lease, timings, readiness, podLabel, port and which containers get the volume', () => {
  const pod = deploymentPod({
    'leasehold.io/lease': 'orders.leader',
    'leasehold.io/lease-duration': '20s',
    'leasehold.io/renew-deadline': '12s',
    'leasehold.io/retry-period': '3s',
    'leasehold.io/ready-when': 'leader',
    'leasehold.io/pod-label': 'true',
    'leasehold.io/port': '9090',
    'leasehold.io/containers': 'helper',
  });
  const out = apply(pod, injectionPatch(pod, defaults));
  const sidecar = out.spec!.containers!.find((c) => c.name === 'leasehold')!;
  for (const arg of [
    '--lease=orders.leader',
    '--lease-duration=20s',
    '--renew-deadline=12s',
    '--retry-period=3s',
    '--ready-when=leader',
    '--pod-label',
    '--listen=0.0.0.0:9090',
  ]) {
    assert.ok((sidecar.args as string[]).includes(arg), arg);
  }
  assert.equal(out.spec!.containers![0]!.volumeMounts, undefined, 'app was left out by leasehold.io/containers');
  assert.equal(out.spec!.containers![1]!.volumeMounts!.length, 2);
  assert.equal(out.metadata!.annotations!['leasehold.io/injected-pod-label'], 'true');
  assert.equal(out.metadata!.annotations!['leasehold.io/lease'], 'orders.leader', 'the user annotations are kept');
});

test('the lease name is derived from the owning workload', () => {
  assert.equal(workloadLeaseName(deploymentPod()), 'web');
  const owned = (kind: string, name: string, labels?: Record<string, string>): Pod => ({
    metadata: { generateName: `${name}-`, ...(labels ? { labels } : {}), ownerReferences: [{ kind, name, controller: true }] },
  });
  assert.equal(workloadLeaseName(owned('StatefulSet', 'db')), 'db');
  assert.equal(workloadLeaseName(owned('DaemonSet', 'agent')), 'agent');
  assert.equal(workloadLeaseName(owned('ReplicaSet', 'bare')), 'bare', 'a ReplicaSet without a pod-template-hash is its own workload');
  assert.equal(workloadLeaseName(owned('ReplicaSet', 'web-abc', { 'pod-template-hash': 'zzz' })), 'web-abc', 'a hash that is not the suffix is not stripped');
  assert.equal(workloadLeaseName({ metadata: { ownerReferences: [{ kind: 'ReplicaSet', name: 'x', controller: false }], name: 'solo' } }), 'solo');
  assert.equal(workloadLeaseName({ metadata: { generateName: 'batch-' } }), 'batch');
  assert.equal(workloadLeaseName({ metadata: {} }), null);
});

test('a bad annotation is refused at admission, naming the annotation and the rule', () => {
  assert.match(
    refusal(deploymentPod({ 'leasehold.io/lease-duration': '10s', 'leasehold.io/renew-deadline': '10s' })),
    /^leasehold: annotations leasehold\.io\/lease-duration "10s", leasehold\.io\/renew-deadline "10s" and leasehold\.io\/retry-period "2s" are invalid together: leaseDuration must be greater than renewDeadline/,
  );
  assert.match(
    refusal(deploymentPod({ 'leasehold.io/lease': 'Bad_Name' })),
    /annotation leasehold\.io\/lease "Bad_Name" is invalid: it must be a DNS-1123 subdomain/,
  );
  assert.match(
    refusal(deploymentPod({ 'leasehold.io/lease-duration': '15' })),
    /annotation leasehold\.io\/lease-duration "15" is invalid: expected a duration/,
  );
  assert.match(refusal(deploymentPod({ 'leasehold.io/lease-duration': '15500ms' })), /leasehold\.io\/lease-duration "15500ms" is invalid: .*whole seconds/);
  assert.match(refusal(deploymentPod({ 'leasehold.io/retry-period': '9s' })), /renewDeadline must be greater than retryPeriod\*JitterFactor/);
  assert.match(refusal(deploymentPod({ 'leasehold.io/ready-when': 'always' })), /leasehold\.io\/ready-when "always" is invalid: must be leader or elected-any/);
  assert.match(refusal(deploymentPod({ 'leasehold.io/pod-label': 'yes' })), /leasehold\.io\/pod-label "yes" is invalid: must be true or false/);
  assert.match(
    refusal(deploymentPod({ 'leasehold.io/containers': 'app,nope' })),
    /leasehold\.io\/containers "app,nope" is invalid: the pod has no container "nope"/,
  );
  assert.match(refusal(deploymentPod({ 'leasehold.io/port': '70000' })), /leasehold\.io\/port "70000" is invalid: must be a port number/);
  const clash = deploymentPod(undefined, { containers: [{ name: 'app', ports: [{ containerPort: 4040 }] }] });
  assert.match(refusal(clash), /leasehold\.io\/port "4040" is invalid: container "app" already declares port 4040/);
  const mounted = deploymentPod(undefined, { containers: [{ name: 'app', volumeMounts: [{ name: 'x', mountPath: '/leader/' }] }] });
  assert.match(refusal(mounted), /container "app" already mounts \/leader/);
  assert.match(refusal(deploymentPod(undefined, { automountServiceAccountToken: false })), /automountServiceAccountToken is false/);
  assert.match(refusal({ metadata: {}, spec: { containers: [{ name: 'a' }] } }), /annotation leasehold\.io\/lease is required/);
});

test('injection is idempotent: an injected pod is left unchanged', () => {
  const pod = deploymentPod({ 'leasehold.io/native-sidecar': 'true' });
  const once = apply(pod, injectionPatch(pod, defaults));
  assert.deepEqual(injectionPatch(once, defaults), []);
  const plain = deploymentPod();
  assert.deepEqual(injectionPatch(apply(plain, injectionPatch(plain, defaults)), defaults), []);
  const r = review(reviewOf(once), defaults).response;
  assert.deepEqual(r, { uid: 'u-1', allowed: true });
});

test('the review answers with the uid and a base64 JSONPatch; other operations and kinds pass unchanged', () => {
  const pod = deploymentPod({ 'leasehold.io/ready-when': 'leader' });
  const r = review(reviewOf(pod), defaults);
  assert.equal(r.apiVersion, 'admission.k8s.io/v1');
  assert.equal(r.response.uid, 'u-1');
  assert.equal(r.response.patchType, 'JSONPatch');
  const ops = JSON.parse(Buffer.from(r.response.patch!, 'base64').toString()) as PatchOp[];
  assert.deepEqual(ops, injectionPatch(pod, defaults));
  assert.ok(
    ops.some((o) => o.path === '/metadata/annotations/leasehold.io~1injected-lease'),
    'keys with / are escaped',
  );
  assert.deepEqual(review(reviewOf(pod, 'UPDATE'), defaults).response, { uid: 'u-1', allowed: true });
  assert.throws(() => review({ kind: 'Nope' }, defaults), /not an admission\.k8s\.io\/v1 AdmissionReview/);
});

test("the injected sidecar's resources are the chart's defaults (values.yaml), so both ways deploy the same sidecar", () => {
  const values = load(readFileSync(new URL('../../deploy/helm/leasehold/values.yaml', import.meta.url), 'utf8')) as { leasehold: { resources: unknown } };
  const pod = deploymentPod();
  const sidecar = apply(pod, injectionPatch(pod, defaults)).spec!.containers!.find((c) => c.name === 'leasehold')!;
  assert.deepEqual(sidecar.resources, values.leasehold.resources);
});

/** A pod as its creator can write it: the injector's container and annotations, copied from an injected pod or made up. */
function lookalike(annotations: Record<string, string>, namespace = 'shop'): Pod {
  return {
    metadata: { generateName: 'x-', namespace, labels: { 'leasehold.io/inject': 'true' }, annotations },
    spec: {
      serviceAccountName: 'intruder',
      containers: [
        { name: 'app', image: 'busybox' },
        { name: 'leasehold', image: 'anything' },
      ],
    },
  };
}

test('a pod that looks injected without a valid mark is refused, not left unchanged', () => {
  const made = { 'leasehold.io/lease': 'kube-scheduler', 'leasehold.io/injected-lease': 'kube-scheduler', 'leasehold.io/injected-pod-label': 'true' };
  assert.match(
    refusal(lookalike(made)),
    /^leasehold: the pod has a container named "leasehold" but no valid annotation leasehold\.io\/injected-mark, which only this operator's webhook writes: rename that container, or remove the label leasehold\.io\/inject/,
  );
  // A mark made for other fields (another namespace, ServiceAccount, lease or mode) is no mark.
  const markFor = (f: { namespace?: string; serviceAccount?: string; lease?: string; podLabel?: boolean }) =>
    injectionMark(KEY, { namespace: 'shop', serviceAccount: 'intruder', lease: 'kube-scheduler', podLabel: true, ...f });
  for (const wrong of [
    markFor({ namespace: 'other' }),
    markFor({ serviceAccount: 'web' }),
    markFor({ lease: 'web' }),
    markFor({ podLabel: false }),
    injectionMark(Buffer.alloc(32, 2), { namespace: 'shop', serviceAccount: 'intruder', lease: 'kube-scheduler', podLabel: true }),
    'v1.',
  ]) {
    assert.equal(review(reviewOf(lookalike({ ...made, 'leasehold.io/injected-mark': wrong })), defaults).response.allowed, false, wrong);
  }
  // The request's namespace is the one checked, whatever the object says.
  assert.equal(
    review(reviewOf(lookalike({ ...made, 'leasehold.io/injected-mark': markFor({ namespace: 'other' }) }, 'other')), defaults).response.allowed,
    false,
  );
  // The mark this webhook made for the same fields: a copy of an injected pod, left as it is;
  // also when a rotation has retired the key it was signed with.
  assert.deepEqual(review(reviewOf(lookalike({ ...made, 'leasehold.io/injected-mark': markFor({}) })), defaults).response, { uid: 'u-1', allowed: true });
  const byRetired = injectionMark(RETIRED, { namespace: 'shop', serviceAccount: 'intruder', lease: 'kube-scheduler', podLabel: true });
  assert.deepEqual(review(reviewOf(lookalike({ ...made, 'leasehold.io/injected-mark': byRetired })), defaults).response, { uid: 'u-1', allowed: true });
});

test('injector annotations on a pod without the sidecar are overwritten, and the mark signs what was injected', () => {
  const pod = deploymentPod({
    'leasehold.io/injected-lease': 'kube-scheduler',
    'leasehold.io/injected-pod-label': 'true',
    'leasehold.io/injected-mark': 'v1.forged',
  });
  const r = review(reviewOf(pod), defaults).response;
  const ops = JSON.parse(Buffer.from(r.patch!, 'base64').toString()) as PatchOp[];
  const set = Object.fromEntries(ops.filter((o) => o.path.startsWith('/metadata/annotations/')).map((o) => [o.path, o.value]));
  assert.equal(set['/metadata/annotations/leasehold.io~1injected-lease'], 'web');
  assert.equal(set['/metadata/annotations/leasehold.io~1injected-pod-label'], 'false');
  assert.equal(
    set['/metadata/annotations/leasehold.io~1injected-mark'],
    injectionMark(KEY, { namespace: 'shop', serviceAccount: 'default', lease: 'web', podLabel: false }),
  );
});

test('a hostNetwork pod gets a sidecar listening on 127.0.0.1, probed there, not on every address of the node', () => {
  const sidecarOf = (pod: Pod) => apply(pod, injectionPatch(pod, defaults)).spec!.containers!.find((c) => c.name === 'leasehold')!;
  const host = sidecarOf(deploymentPod({ 'leasehold.io/port': '9090' }, { hostNetwork: true }));
  const args = host.args as string[];
  assert.ok(args.includes('--listen=127.0.0.1:9090'), args.join(' '));
  assert.ok(!args.some((a) => a.startsWith('--listen=0.0.0.0')));
  assert.deepEqual(host.livenessProbe, {
    httpGet: { host: '127.0.0.1', path: '/healthz', port: 9090 },
    periodSeconds: 10,
    timeoutSeconds: 1,
    failureThreshold: 3,
  });
  assert.deepEqual(host.readinessProbe, {
    httpGet: { host: '127.0.0.1', path: '/readyz', port: 9090 },
    periodSeconds: 2,
    timeoutSeconds: 1,
    failureThreshold: 1,
  });
  // In its own network namespace, as before: every address of the pod, probed at the pod's IP.
  const own = sidecarOf(deploymentPod(undefined, { hostNetwork: false }));
  assert.ok((own.args as string[]).includes('--listen=0.0.0.0:4040'));
  assert.deepEqual(own.readinessProbe, { httpGet: { path: '/readyz', port: 4040 }, periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 1 });
});

test('a container mounting /leader under another spelling is refused as one mounting /leader', () => {
  for (const mountPath of ['/leader', '/leader/', '//leader', '/./leader', '/leader/.', '/leader//', '/tmp/../leader']) {
    const pod = deploymentPod(undefined, { containers: [{ name: 'app', volumeMounts: [{ name: 'x', mountPath }] }] });
    assert.match(refusal(pod), /container "app" already mounts \/leader/, mountPath);
  }
  for (const mountPath of ['/leaders', '/leader/sub', '/data/leader']) {
    const pod = deploymentPod(undefined, { containers: [{ name: 'app', volumeMounts: [{ name: 'x', mountPath }] }] });
    assert.equal(review(reviewOf(pod), defaults).response.allowed, true, mountPath);
  }
});

test("the app's readinessProbe becomes the sidecar's health source; an unusable one is said back as a warning, a bad annotation refused", () => {
  const probed = deploymentPod(undefined, {
    containers: [
      { name: 'app', ports: [{ name: 'http', containerPort: 8080 }], readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 2 } },
    ],
  });
  const r = review(reviewOf(probed), defaults).response;
  assert.equal(r.warnings, undefined);
  const out = apply(probed, JSON.parse(Buffer.from(r.patch!, 'base64').toString()) as PatchOp[]);
  const args = out.spec!.containers!.find((c) => c.name === 'leasehold')!.args as string[];
  assert.deepEqual(
    args.filter((a) => a.startsWith('--health-')),
    [
      '--health-http=http://127.0.0.1:8080/ready',
      '--health-period=2s',
      '--health-timeout=1s',
      '--health-initial-delay=0s',
      '--health-failure-threshold=3',
      '--health-success-threshold=1',
    ],
  );

  // A probe on the sidecar's own port: injected without health, and the creator is told why.
  const circle = deploymentPod(
    { 'leasehold.io/port': '9000' },
    { containers: [{ name: 'app', readinessProbe: { httpGet: { path: '/readyz', port: 9000 } } }] },
  );
  const c = review(reviewOf(circle), defaults).response;
  assert.equal(c.allowed, true);
  assert.deepEqual(c.warnings, [
    "leasehold.io/health: no app health from container \"app\"'s readinessProbe (port 9000 is the leasehold sidecar's own port: the app's health must not depend on leadership); set leasehold.io/health to a URL, tcp:<port> or off",
  ]);
  const injected = apply(circle, injectionPatch(circle, defaults)).spec!.containers!.find((x) => x.name === 'leasehold')!;
  assert.ok(!(injected.args as string[]).some((a) => a.startsWith('--health-')));

  assert.equal(
    refusal(deploymentPod({ 'leasehold.io/health': 'tcp:4040' })),
    'leasehold: annotation leasehold.io/health "tcp:4040" is invalid: port 4040 is the leasehold sidecar\'s own port: the app\'s health must not depend on leadership',
  );
  assert.equal(
    refusal(deploymentPod({ 'leasehold.io/health': 'yes' })),
    'leasehold: annotation leasehold.io/health "yes" is invalid: must be auto, off, http://127.0.0.1:<port><path> (or localhost), or tcp:<port>',
  );
});

test('leasehold.io/shards makes the sidecar a member of the group named by the lease: its counts injected, signed, nothing of a lease', () => {
  const pod = deploymentPod({ 'leasehold.io/lease': 'jobs', 'leasehold.io/shards': '64', 'leasehold.io/max-members': '8' });
  const out = apply(pod, injectionPatch(pod, defaults));
  const args = out.spec!.containers!.find((c) => c.name === 'leasehold')!.args as string[];
  assert.deepEqual(args.slice(0, 5), ['sidecar', '--backend=kubernetes', '--lease=jobs', '--shards=64', '--max-members=8']);
  for (const leaderOnly of ['--ready-when', '--release-on-exit', '--pod-label']) assert.ok(!args.some((a) => a.startsWith(leaderOnly)), args.join(' '));
  assert.deepEqual(out.metadata!.annotations, {
    'leasehold.io/lease': 'jobs',
    'leasehold.io/shards': '64',
    'leasehold.io/max-members': '8',
    'leasehold.io/injected-lease': 'jobs',
    'leasehold.io/injected-pod-label': 'false',
    'leasehold.io/injected-shards': '64',
    'leasehold.io/injected-max-members': '8',
    'leasehold.io/injected-mark': injectionMark(KEY, {
      namespace: 'shop',
      serviceAccount: 'default',
      lease: 'jobs',
      podLabel: false,
      group: { shards: 64, maxMembers: 8 },
    }),
  });
  assert.ok(hasValidMark(out, [KEY]));
  // The counts are in the mark: a pod whose annotations claim more (or a lease) after admission has no valid mark.
  for (const [k, v] of [
    ['leasehold.io/injected-shards', '4096'],
    ['leasehold.io/injected-max-members', '9'],
  ] as const) {
    assert.ok(!hasValidMark({ ...out, metadata: { ...out.metadata, annotations: { ...out.metadata!.annotations, [k]: v } } }, [KEY]), `${k}: ${v}`);
  }
  const { 'leasehold.io/injected-shards': _s, 'leasehold.io/injected-max-members': _m, ...asLease } = out.metadata!.annotations;
  assert.ok(!hasValidMark({ ...out, metadata: { ...out.metadata, annotations: asLease } }, [KEY]), 'a lease claim is not what was signed');

  // max-members unset: the sidecar's default, 64, given and signed.
  const byDefault = apply(deploymentPod({ 'leasehold.io/shards': '3' }), injectionPatch(deploymentPod({ 'leasehold.io/shards': '3' }), defaults));
  assert.ok((byDefault.spec!.containers!.find((c) => c.name === 'leasehold')!.args as string[]).includes('--max-members=64'));
  assert.equal(byDefault.metadata!.annotations!['leasehold.io/injected-max-members'], '64');
  assert.equal(byDefault.metadata!.annotations!['leasehold.io/injected-lease'], 'web', "the group is named as the workload's lease would be");
});

test("a lease's candidate that came with a group's injector annotations loses them: its claim is what the mark signs", () => {
  const pod = deploymentPod({ 'leasehold.io/injected-shards': '4096', 'leasehold.io/injected-max-members': '4096' });
  const out = apply(pod, injectionPatch(pod, defaults));
  assert.equal(out.metadata!.annotations!['leasehold.io/injected-shards'], undefined);
  assert.equal(out.metadata!.annotations!['leasehold.io/injected-max-members'], undefined);
  assert.ok(hasValidMark(out, [KEY]));
});

test('a bad shard annotation is refused at admission, naming the annotation and the rule', () => {
  const shards = (a: Record<string, string>, extra: Partial<NonNullable<Pod['spec']>> = {}) => refusal(deploymentPod(a, extra));
  for (const v of ['0', '4097', 'many', '-1', '1e3', '']) {
    assert.match(
      shards({ 'leasehold.io/shards': v }),
      new RegExp(`^leasehold: annotation leasehold\\.io/shards "${v}" is invalid: must be a whole number from 1 to 4096$`),
    );
  }
  assert.match(
    shards({ 'leasehold.io/shards': '8', 'leasehold.io/max-members': '4097' }),
    /annotation leasehold\.io\/max-members "4097" is invalid: must be a whole number from 1 to 4096/,
  );
  assert.match(
    shards({ 'leasehold.io/max-members': '8' }),
    /annotation leasehold\.io\/max-members "8" is invalid: needs leasehold\.io\/shards: it bounds the members of a shard group/,
  );
  assert.match(
    shards({ 'leasehold.io/shards': '8', 'leasehold.io/pod-label': 'true' }),
    /annotation leasehold\.io\/pod-label "true" is invalid: applies to a lease, not to a shard group \(leasehold\.io\/shards\)/,
  );
  assert.match(
    shards({ 'leasehold.io/shards': '8', 'leasehold.io/ready-when': 'elected-any' }),
    /annotation leasehold\.io\/ready-when "elected-any" is invalid: applies to a lease, not to a shard group/,
  );
  const long = 'g'.repeat(64);
  assert.match(
    shards({ 'leasehold.io/shards': '8', 'leasehold.io/lease': long }),
    new RegExp(
      `annotation leasehold\\.io/lease "${long}" is invalid: on Kubernetes a group name is a label value \\(leasehold\\.io/group\\): at most 63 characters`,
    ),
  );
  assert.match(
    shards({ 'leasehold.io/shards': '8', 'leasehold.io/lease': 'jobs-shard-0001' }),
    /"jobs-shard-0001" is invalid: .*must not end in -member-NNNN or -shard-NNNN/,
  );
  // A derived name too long for a group: said, with the annotation that fixes it.
  const derived = deploymentPod({ 'leasehold.io/shards': '8' });
  derived.metadata!.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: long, controller: true }];
  assert.match(refusal(derived), new RegExp(`the group name derived from the pod's workload, "${long}", is invalid: .*; set leasehold\\.io/lease$`));
  // Without shards, the same lease is a lease's right.
  assert.deepEqual(review(reviewOf(deploymentPod({ 'leasehold.io/lease': long })), defaults).response.allowed, true);
});

test('leasehold.io/fence-objects is checked at admission: its format, a lease only, a lease name a label can hold', () => {
  assert.equal(review(reviewOf(deploymentPod({ 'leasehold.io/fence-objects': 'configmaps,deployments.apps' })), defaults).response.allowed, true);
  assert.match(
    refusal(deploymentPod({ 'leasehold.io/fence-objects': 'configmaps/status' })),
    /^leasehold: annotation leasehold\.io\/fence-objects "configmaps\/status" is invalid: "configmaps\/status": a subresource cannot be fenced/,
  );
  assert.match(
    refusal(deploymentPod({ 'leasehold.io/fence-objects': 'configmaps', 'leasehold.io/shards': '8' })),
    /annotation leasehold\.io\/fence-objects "configmaps" is invalid: applies to a lease, not to a shard group \(leasehold\.io\/shards\)/,
  );
  const long = 'l'.repeat(64);
  assert.match(
    refusal(deploymentPod({ 'leasehold.io/fence-objects': 'configmaps', 'leasehold.io/lease': long })),
    /annotation leasehold\.io\/fence-objects "configmaps" is invalid: the lease name is 64 characters long: it is the value of the leasehold\.io\/fenced-by label, at most 63/,
  );
});
