import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANNOTATION, INJECTED_MARK, SIDECAR_NAME } from './annotations.js';
import { fixedMarkKeys } from './injection-mark.js';
import type { SidecarDefaults } from './injection-settings.js';
import { injectionPatch, type PatchOp } from './mutate.js';
import type { Container, Pod } from './pod-types.js';
import { grantArgs, policyClaim } from './policy-grant.js';

const sidecar: SidecarDefaults = { image: 'leasehold:1.4.0', imagePullPolicy: 'IfNotPresent', nativeSidecar: 'false', clusterSupportsNativeSidecars: true };
const TOKEN_MOUNT = { name: 'kube-api-access-x7k2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true };

/** A pod as a Deployment's ReplicaSet sends it to admission: no name yet. */
function admitted(annotations: Record<string, string> = {}, spec: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return {
    metadata: {
      generateName: 'web-7d9f8c6b5-',
      namespace: 'shop',
      labels: { app: 'web', 'pod-template-hash': '7d9f8c6b5', 'leasehold.io/inject': 'true' },
      annotations,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8c6b5', controller: true }],
    },
    spec: {
      serviceAccountName: 'web',
      containers: [{ name: 'app', image: 'shop:2', volumeMounts: [TOKEN_MOUNT], readinessProbe: { httpGet: { path: '/ready', port: 8080 } } }],
      ...spec,
    },
  };
}

/** RFC 6902 add and remove, as the API server applies them, to a copy. */
function apply(doc: Pod, ops: PatchOp[]): Pod {
  const out = structuredClone(doc) as unknown as Record<string, unknown>;
  for (const op of ops) {
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = parts.pop()!;
    let at = out as Record<string, unknown> | unknown[];
    for (const p of parts) at = (at as Record<string, unknown>)[p] as Record<string, unknown>;
    if (op.op === 'remove') delete (at as Record<string, unknown>)[last];
    else if (Array.isArray(at)) at.push(op.value);
    else at[last] = op.value;
  }
  return out;
}

/**
 * The pod as the API server stores it after the policy: what the webhook's patch gives (the
 * parity test proves the two equal, the mark aside), without the mark, with the ServiceAccount
 * plugin's token mount added to the sidecar after the policy, and a name made from generateName.
 */
function injected(pod: Pod, d: SidecarDefaults = sidecar): Pod & { spec: { containers: Container[] } } {
  const out = apply(pod, injectionPatch(pod, { ...d, marks: fixedMarkKeys(Buffer.alloc(32, 1)) }));
  delete out.metadata!.annotations![INJECTED_MARK];
  for (const c of [...(out.spec!.containers ?? []), ...(out.spec!.initContainers ?? [])])
    if (c.name === SIDECAR_NAME) c.volumeMounts = [...(c.volumeMounts ?? []), TOKEN_MOUNT];
  if (out.metadata!.generateName) out.metadata!.name = `${out.metadata!.generateName}x2b9q`;
  return out as Pod & { spec: { containers: Container[] } };
}

const sidecarOf = (pod: Pod) => [...(pod.spec!.containers ?? []), ...(pod.spec!.initContainers ?? [])].find((c) => c.name === SIDECAR_NAME)!;
const annotate = (pod: Pod, key: string, value: string) => (pod.metadata!.annotations![key] = value);

test('a pod the policy injected earns what its annotations give: lease, pod labels, a group, native or not', () => {
  const rows: [string, Pod, object][] = [
    ['the derived lease', injected(admitted()), { lease: 'web', podLabel: false }],
    [
      'a named lease with pod labels',
      injected(admitted({ [ANNOTATION.lease]: 'shop-leader', [ANNOTATION.podLabel]: 'true' })),
      { lease: 'shop-leader', podLabel: true },
    ],
    [
      'a shard group',
      injected(admitted({ [ANNOTATION.lease]: 'orders', [ANNOTATION.shards]: '16', [ANNOTATION.maxMembers]: '8' })),
      { lease: 'orders', podLabel: false, group: { shards: 16, maxMembers: 8 } },
    ],
    [
      'a native sidecar',
      injected(admitted({ [ANNOTATION.nativeSidecar]: 'true' }, { initContainers: [{ name: 'migrate', image: 'shop:2' }] })),
      { lease: 'web', podLabel: false },
    ],
    [
      'a bare pod from generateName, named after admission',
      injected({ ...admitted(), metadata: { generateName: 'batch-', namespace: 'shop', labels: { 'leasehold.io/inject': 'true' } } }),
      { lease: 'batch', podLabel: false },
    ],
    [
      'a bare pod with its own name',
      injected({ ...admitted(), metadata: { name: 'solo', namespace: 'shop', labels: { 'leasehold.io/inject': 'true' } } }),
      { lease: 'solo', podLabel: false },
    ],
  ];
  for (const [name, pod, want] of rows) assert.deepEqual(policyClaim(pod, sidecar), { fields: { namespace: 'shop', serviceAccount: 'web', ...want } }, name);
});

test('a pod the webhook injected (its mark kept) is granted the same in policy mode: switching the mode takes no grant back', () => {
  const raw = admitted({ [ANNOTATION.lease]: 'orders', [ANNOTATION.shards]: '4' });
  const pod = apply(raw, injectionPatch(raw, { ...sidecar, marks: fixedMarkKeys(Buffer.alloc(32, 1)) }));
  assert.ok(pod.metadata!.annotations![INJECTED_MARK], 'the mark is there, and is not read');
  pod.metadata!.name = 'web-7d9f8c6b5-x2b9q';
  assert.deepEqual(policyClaim(pod, sidecar), {
    fields: { namespace: 'shop', serviceAccount: 'web', lease: 'orders', podLabel: false, group: { shards: 4, maxMembers: 64 } },
  });
});

test("an operator upgrade (another image, other timings' args) leaves the pods injected before granted", () => {
  const pod = injected(admitted());
  const c = sidecarOf(pod);
  c.image = 'leasehold:1.3.9';
  c.args = (c.args as string[]).map((a) => (a.startsWith('--retry-period=') ? '--retry-period=3s' : a));
  assert.deepEqual(policyClaim(pod, { ...sidecar, image: 'leasehold:1.5.0' }), {
    fields: { namespace: 'shop', serviceAccount: 'web', lease: 'web', podLabel: false },
  });
});

test('lookalike pods earn nothing: each says why', () => {
  const rows: [string, () => Pod, RegExp][] = [
    [
      'a made-up container naming another lease',
      () => {
        const p = admitted();
        p.spec!.containers!.push({ name: SIDECAR_NAME, image: 'evil:1', args: ['sidecar', '--backend=kubernetes', '--lease=kube-scheduler'] });
        p.metadata!.name = 'web-7d9f8c6b5-x2b9q';
        return p;
      },
      /runs sidecar --backend=kubernetes --lease=kube-scheduler, but the policy injects sidecar --backend=kubernetes --lease=web/,
    ],
    [
      'the lease annotation changed after creation',
      () => {
        const p = injected(admitted());
        annotate(p, ANNOTATION.lease, 'payments');
        return p;
      },
      /--lease=web, but the policy injects .*--lease=payments/,
    ],
    [
      'pod labels claimed after creation',
      () => {
        const p = injected(admitted());
        annotate(p, ANNOTATION.podLabel, 'true');
        return p;
      },
      /but the policy injects .*--pod-label/,
    ],
    [
      "a group's counts claimed after creation",
      () => {
        const p = injected(admitted({ [ANNOTATION.lease]: 'orders', [ANNOTATION.shards]: '2' }));
        annotate(p, ANNOTATION.shards, '4096');
        return p;
      },
      /--shards=2 .*but the policy injects .*--shards=4096/,
    ],
    [
      'a second --lease in another spelling',
      () => {
        const p = injected(admitted());
        sidecarOf(p).args = [...(sidecarOf(p).args as string[]), '--lease', 'kube-scheduler'];
        return p;
      },
      /runs sidecar --backend=kubernetes --lease=web --lease=kube-scheduler/,
    ],
    [
      'a LEASEHOLD_ variable the policy does not set',
      () => {
        const p = injected(admitted());
        sidecarOf(p).env = [...(sidecarOf(p).env as object[]), { name: 'LEASEHOLD_SHARDS', value: '8' }];
        return p;
      },
      /LEASEHOLD_ environment is .*LEASEHOLD_SHARDS=value:8/,
    ],
    [
      'envFrom',
      () => {
        const p = injected(admitted());
        sidecarOf(p).envFrom = [{ configMapRef: { name: 'x' } }];
        return p;
      },
      /has envFrom/,
    ],
    [
      'annotations no policy would inject',
      () => {
        const p = injected(admitted());
        annotate(p, ANNOTATION.leaseDuration, 'forever');
        return p;
      },
      /could not have been injected \(annotation leasehold\.io\/lease-duration "forever" is invalid/,
    ],
  ];
  for (const [name, make, reason] of rows) {
    const claim = policyClaim(make(), sidecar);
    assert.ok('reason' in claim, `${name}: refused`);
    assert.match(claim.reason, reason, name);
    assert.match(claim.reason, /it was not injected by this install's policy$/, name);
  }
});

test('grantArgs reads every spelling of the grant flags and nothing else', () => {
  assert.deepEqual(
    grantArgs([
      'sidecar',
      '--backend=kubernetes',
      '--lease',
      'a',
      '--lease-duration=15s',
      '--pod-label',
      '--shards=4',
      '--max-members',
      '8',
      '--listen=0.0.0.0:4040',
    ]),
    ['sidecar', '--backend=kubernetes', '--lease=a', '--pod-label', '--shards=4', '--max-members=8'],
  );
  assert.deepEqual(grantArgs(['sidecar', '--pod-label=true']), ['sidecar', '--pod-label=true']);
});
