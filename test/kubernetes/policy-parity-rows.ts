/**
 * The parity table of test/kubernetes/policy-parity.test.ts: pods as a user would send them
 * (the inject label is added by the test), each injected alike by the webhook and by the chart's
 * policies, or refused by both. `refused: 'same words'` asks for the webhook's message word for
 * word; `{ names }` only that both name it (docs/operator.md, "Injection by policy", says why
 * those differ).
 */
import assert from 'node:assert/strict';

type Json = Record<string, unknown>;

export interface ParityRow {
  name: string;
  pod: Json;
  refused?: 'same words' | { names: string };
  /** The injector warns whoever creates the pod that an app probe gave no health (exactly one warning). */
  warns?: boolean;
  /** What the injected pod must show besides being equal in both (so a row cannot pass by injecting nothing in both). */
  check?: (pod: Json) => void;
}

const app = (extra: Json = {}): Json => ({ name: 'app', image: 'busybox', ...extra });

/** A pod named p with these annotations; `spec` replaces parts of the one-container spec. */
function pod(annotations: Record<string, string> = {}, spec: Json = {}, metadata: Json = {}): Json {
  return {
    metadata: { name: 'p', ...(Object.keys(annotations).length > 0 ? { annotations } : {}), ...metadata },
    spec: { containers: [app()], ...spec },
  };
}

interface C {
  name: string;
  args?: string[];
  restartPolicy?: string;
  volumeMounts?: { mountPath: string }[];
}
const containers = (p: Json) => (p.spec as { containers: C[] }).containers;
const initContainers = (p: Json) => (p.spec as { initContainers?: C[] }).initContainers ?? [];
const sidecar = (p: Json) => [...containers(p), ...initContainers(p)].find((c) => c.name === 'leasehold');
const args = (p: Json) => sidecar(p)?.args ?? [];
const hasArgs =
  (...want: string[]) =>
  (p: Json) => {
    for (const a of want) assert.ok(args(p).includes(a), `${a} not in ${args(p).join(' ')}`);
  };
const healthArgs = (p: Json) => args(p).filter((a) => a.startsWith('--health-'));
const healthIs =
  (source: string | null) =>
  (p: Json): void => {
    if (source === null) assert.deepEqual(healthArgs(p), []);
    else assert.equal(healthArgs(p)[0], source);
  };

const http = (port: number | string, path = '/ready', extra: Json = {}) => ({ httpGet: { path, port, ...extra } });
const named = { ports: [{ name: 'http', containerPort: 8080 }] };

export const PARITY_ROWS: ParityRow[] = [
  // What a pod gets.
  { name: 'a plain pod: the lease is its name', pod: pod(), check: hasArgs('--lease=p', '--ready-when=elected-any', '--listen=0.0.0.0:4040') },
  {
    name: 'a lease and pod labels',
    pod: pod({ 'leasehold.io/lease': 'web', 'leasehold.io/pod-label': 'true' }),
    check: hasArgs('--lease=web', '--pod-label'),
  },
  {
    name: 'a retry period past the deadline',
    pod: pod({
      'leasehold.io/lease-duration': '20s',
      'leasehold.io/renew-deadline': '12.5s',
      'leasehold.io/retry-period': '1m0.5s',
      'leasehold.io/ready-when': 'leader',
      'leasehold.io/pod-label': 'false',
    }),
    refused: 'same words',
  },
  {
    name: 'timings in several units',
    pod: pod({
      'leasehold.io/lease-duration': '1m',
      'leasehold.io/renew-deadline': '40500ms',
      'leasehold.io/retry-period': '1.5s',
      'leasehold.io/ready-when': 'leader',
    }),
    check: hasArgs('--lease-duration=1m', '--renew-deadline=40500ms', '--retry-period=1.5s', '--ready-when=leader'),
  },
  {
    name: 'a native sidecar, no init containers',
    pod: pod({ 'leasehold.io/native-sidecar': 'true' }),
    check: (p) => assert.equal(initContainers(p).at(-1)?.restartPolicy, 'Always'),
  },
  {
    name: 'a native sidecar after the init containers',
    pod: pod({ 'leasehold.io/native-sidecar': 'auto' }, { initContainers: [{ name: 'init', image: 'busybox' }] }),
    check: (p) =>
      assert.deepEqual(
        initContainers(p).map((c) => c.name),
        ['init', 'leasehold'],
      ),
  },
  {
    name: 'not native, with init containers',
    pod: pod({ 'leasehold.io/native-sidecar': 'false' }, { initContainers: [{ name: 'init', image: 'busybox' }] }),
    check: (p) => assert.equal(containers(p).at(-1)?.name, 'leasehold'),
  },
  {
    name: 'the status volume in the named container only, beside its own volumes and mounts',
    pod: pod(
      { 'leasehold.io/containers': ' web ' },
      {
        containers: [app({ volumeMounts: [{ name: 'data', mountPath: '/data' }] }), { name: 'web', image: 'busybox' }],
        volumes: [{ name: 'data', emptyDir: {} }],
      },
    ),
    check: (p) =>
      assert.equal(
        containers(p)[0]!.volumeMounts?.some((m) => m.mountPath === '/leader'),
        false,
      ),
  },
  { name: 'a port of its own', pod: pod({ 'leasehold.io/port': '05050' }), check: hasArgs('--listen=0.0.0.0:5050') },
  { name: 'in the node network: loopback only', pod: pod({}, { hostNetwork: true }), check: hasArgs('--listen=127.0.0.1:4040') },
  {
    name: 'an HTTP readinessProbe on a named port, its timings',
    pod: pod(
      {},
      {
        containers: [app({ ...named, readinessProbe: { ...http('http'), periodSeconds: 3, timeoutSeconds: 5, failureThreshold: 2, initialDelaySeconds: 4 } })],
      },
    ),
    check: (p) =>
      assert.deepEqual(healthArgs(p), [
        '--health-http=http://127.0.0.1:8080/ready',
        '--health-period=3s',
        '--health-timeout=3s',
        '--health-initial-delay=4s',
        '--health-failure-threshold=2',
        '--health-success-threshold=1',
      ]),
  },
  {
    name: 'a TCP livenessProbe on a number, no readinessProbe',
    pod: pod({}, { containers: [app({ livenessProbe: { tcpSocket: { port: 9000 } } })] }),
    check: healthIs('--health-tcp=9000'),
  },
  {
    name: 'the readinessProbe before the livenessProbe, a path without its slash, a host on loopback',
    pod: pod({}, { containers: [app({ readinessProbe: http(8081, 'ok', { host: 'localhost' }), livenessProbe: { tcpSocket: { port: 9000 } } })] }),
    check: healthIs('--health-http=http://127.0.0.1:8081/ok'),
  },
  {
    name: 'an exec probe: no health',
    pod: pod({}, { containers: [app({ readinessProbe: { exec: { command: ['true'] } } })] }),
    warns: true,
    check: healthIs(null),
  },
  { name: 'a grpc probe: no health', pod: pod({}, { containers: [app({ readinessProbe: { grpc: { port: 9000 } } })] }), warns: true, check: healthIs(null) },
  {
    name: 'an HTTPS probe: no health',
    pod: pod({}, { containers: [app({ readinessProbe: http(8443, '/', { scheme: 'HTTPS' }) })] }),
    warns: true,
    check: healthIs(null),
  },
  {
    name: 'a probe with headers or another host: no health',
    pod: pod({}, { containers: [app({ readinessProbe: http(8080, '/', { httpHeaders: [{ name: 'x', value: 'y' }] }), livenessProbe: http(8080) })] }),
    warns: true,
    check: healthIs(null),
  },
  {
    name: 'a probe of another host: no health',
    pod: pod({}, { containers: [app({ livenessProbe: { tcpSocket: { port: 80, host: '10.0.0.1' } } })] }),
    warns: true,
    check: healthIs(null),
  },
  { name: "a probe on the sidecar's port: no health", pod: pod({}, { containers: [app({ readinessProbe: http(4040) })] }), warns: true, check: healthIs(null) },
  {
    name: 'a probe on an undeclared port name: no health',
    pod: pod({}, { containers: [app({ readinessProbe: http('web') })] }),
    warns: true,
    check: healthIs(null),
  },
  {
    name: 'a probe on a port named as the sidecar: no health',
    pod: pod({}, { containers: [app({ ports: [{ name: 'leasehold', containerPort: 8080 }], readinessProbe: http('leasehold') })] }),
    warns: true,
    check: healthIs(null),
  },
  {
    name: 'an exec livenessProbe: no health',
    pod: pod({}, { containers: [app({ livenessProbe: { exec: { command: ['true'] } } })] }),
    warns: true,
    check: healthIs(null),
  },
  {
    name: 'the health container named, and explicit health off',
    pod: pod(
      { 'leasehold.io/health-container': 'web' },
      { containers: [app(), { name: 'web', image: 'busybox', readinessProbe: { tcpSocket: { port: 7000 } } }] },
    ),
    check: healthIs('--health-tcp=7000'),
  },
  { name: 'health off', pod: pod({ 'leasehold.io/health': 'off' }, { containers: [app({ readinessProbe: http(8080) })] }), check: healthIs(null) },
  {
    name: 'health by URL, with the probe timings',
    pod: pod(
      { 'leasehold.io/health': 'http://localhost:9000/h?x=1' },
      { containers: [app({ readinessProbe: { exec: { command: ['true'] }, periodSeconds: 7 } })] },
    ),
    check: hasArgs('--health-http=http://localhost:9000/h?x=1', '--health-period=7s'),
  },
  {
    name: 'a TCP probe on a named port of the named health container',
    pod: pod(
      { 'leasehold.io/health-container': 'web' },
      { containers: [app(), { name: 'web', image: 'busybox', ...named, livenessProbe: { tcpSocket: { port: 'http' } } }] },
    ),
    check: healthIs('--health-tcp=8080'),
  },
  {
    name: 'durations with spaces around, as the sidecar reads them',
    pod: pod({ 'leasehold.io/lease-duration': ' 20s', 'leasehold.io/renew-deadline': '12s ' }),
    check: hasArgs('--lease-duration= 20s', '--renew-deadline=12s '),
  },
  { name: 'health by TCP port', pod: pod({ 'leasehold.io/health': 'tcp:09000' }), check: hasArgs('--health-tcp=9000', '--health-period=10s') },
  {
    name: 'a shard group member',
    pod: pod({ 'leasehold.io/lease': 'workers', 'leasehold.io/shards': '064', 'leasehold.io/max-members': '8' }),
    check: hasArgs('--shards=64', '--max-members=8'),
  },
  {
    name: 'fence-objects: kinds of the core group and others, the pod injected as without it',
    pod: pod({ 'leasehold.io/fence-objects': 'configmaps, deployments.apps,widgets.example.com' }),
    check: hasArgs('--lease=p', '--ready-when=elected-any'),
  },
  { name: 'a shard group, member slots by default', pod: pod({ 'leasehold.io/shards': '16' }), check: hasArgs('--shards=16', '--max-members=64') },
  {
    name: "a lease's candidate that came with a group's counts loses them",
    pod: pod({ 'leasehold.io/injected-shards': '4', 'leasehold.io/injected-max-members': '2' }),
    check: (p) => assert.equal('leasehold.io/injected-shards' in ((p.metadata as { annotations?: Json }).annotations ?? {}), false),
  },
  {
    name: "the injector's annotations a pod came with are replaced",
    pod: pod({ 'leasehold.io/injected-lease': 'someone-else', 'leasehold.io/injected-pod-label': 'true', 'leasehold.io/injected-mark': 'v1.forged' }),
    check: (p) => assert.equal((p.metadata as { annotations: Json }).annotations['leasehold.io/injected-lease'], 'p'),
  },
  {
    // CEL has a cost budget per expression: a large pod must stay within it.
    name: 'a pod of 40 containers with ports and probes, 20 of them named for the status volume',
    pod: pod(
      { 'leasehold.io/containers': Array.from({ length: 20 }, (_, i) => `c${i * 2}`).join(','), 'leasehold.io/health-container': 'c39' },
      {
        containers: Array.from({ length: 40 }, (_, i) => ({
          name: `c${i}`,
          image: 'busybox',
          ports: [{ name: `p${i}`, containerPort: 10000 + i }],
          readinessProbe: http(`p${i}`),
          volumeMounts: Array.from({ length: 5 }, (_, j) => ({ name: 'data', mountPath: `/data/${j}` })),
        })),
        volumes: [{ name: 'data', emptyDir: {} }],
      },
    ),
    check: healthIs('--health-http=http://127.0.0.1:10039/ready'),
  },
  {
    name: "the lease from a Deployment's ReplicaSet",
    pod: pod(
      {},
      {},
      {
        name: undefined,
        generateName: 'shop-7d9f8-',
        labels: { 'pod-template-hash': '7d9f8' },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'shop-7d9f8', uid: '00000000-0000-0000-0000-000000000001', controller: true }],
      },
    ),
    check: hasArgs('--lease=shop'),
  },
  {
    name: "the lease from a StatefulSet's name",
    pod: pod(
      {},
      {},
      { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: '00000000-0000-0000-0000-000000000002', controller: true }] },
    ),
    check: hasArgs('--lease=db'),
  },
  { name: 'the lease from generateName', pod: pod({}, {}, { name: undefined, generateName: 'batch--' }), check: hasArgs('--lease=batch') },

  // What both refuse.
  { name: 'a bad lease name', pod: pod({ 'leasehold.io/lease': 'Bad_Lease' }), refused: 'same words' },
  // (A generateName that derives a bad lease makes a bad pod name: the API server refuses that
  // itself, before the validating policy, so the owner's name is the case here.)
  {
    name: 'a bad derived lease name',
    pod: pod(
      {},
      {},
      { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'Db', uid: '00000000-0000-0000-0000-000000000003', controller: true }] },
    ),
    refused: 'same words',
  },
  {
    name: 'a bad derived group name',
    pod: pod({ 'leasehold.io/shards': '4' }, {}, { name: undefined, generateName: 'g-member-0001-' }),
    refused: 'same words',
  },
  { name: 'no duration', pod: pod({ 'leasehold.io/lease-duration': 'soon' }), refused: 'same words' },
  { name: 'a bare number', pod: pod({ 'leasehold.io/renew-deadline': '10' }), refused: 'same words' },
  { name: 'finer than a millisecond', pod: pod({ 'leasehold.io/retry-period': '1.0001ms' }), refused: 'same words' },
  { name: 'finer than a millisecond in hours', pod: pod({ 'leasehold.io/retry-period': '0.00000001h' }), refused: 'same words' },
  { name: 'past the longest timer', pod: pod({ 'leasehold.io/lease-duration': '600h' }), refused: 'same words' },
  { name: 'zero', pod: pod({ 'leasehold.io/retry-period': '0s' }), refused: 'same words' },
  { name: 'lease duration not above the deadline', pod: pod({ 'leasehold.io/lease-duration': '10s' }), refused: 'same words' },
  { name: 'no margin for late timers', pod: pod({ 'leasehold.io/lease-duration': '10s', 'leasehold.io/renew-deadline': '9990ms' }), refused: 'same words' },
  { name: 'a deadline within one jittered retry', pod: pod({ 'leasehold.io/renew-deadline': '2400ms' }), refused: 'same words' },
  {
    name: 'a deadline within one jittered odd retry',
    pod: pod({ 'leasehold.io/renew-deadline': '1201ms', 'leasehold.io/retry-period': '1001ms' }),
    refused: 'same words',
  },
  { name: 'a lease duration of a fraction of a second', pod: pod({ 'leasehold.io/lease-duration': '15500ms' }), refused: 'same words' },
  { name: 'ready-when', pod: pod({ 'leasehold.io/ready-when': 'always' }), refused: 'same words' },
  { name: 'pod-label', pod: pod({ 'leasehold.io/pod-label': 'yes' }), refused: 'same words' },
  { name: 'max-members without shards', pod: pod({ 'leasehold.io/max-members': '4' }), refused: 'same words' },
  { name: 'no shards', pod: pod({ 'leasehold.io/shards': '0' }), refused: 'same words' },
  { name: 'too many member slots', pod: pod({ 'leasehold.io/shards': '8', 'leasehold.io/max-members': '5000' }), refused: 'same words' },
  { name: 'pod labels in a shard group', pod: pod({ 'leasehold.io/shards': '8', 'leasehold.io/pod-label': 'true' }), refused: 'same words' },
  { name: 'ready-when in a shard group', pod: pod({ 'leasehold.io/shards': '8', 'leasehold.io/ready-when': 'leader' }), refused: 'same words' },
  { name: "a group named as another group's record", pod: pod({ 'leasehold.io/shards': '8', 'leasehold.io/lease': 'g-shard-0001' }), refused: 'same words' },
  // leasehold.io/fence-objects (checkFenceObjects): the value, then where it applies.
  { name: 'fence-objects: an empty item', pod: pod({ 'leasehold.io/fence-objects': 'configmaps,,secrets' }), refused: 'same words' },
  {
    name: 'fence-objects: more than 16 kinds',
    pod: pod({ 'leasehold.io/fence-objects': Array.from({ length: 17 }, (_, i) => `k${i}s`).join(',') }),
    refused: 'same words',
  },
  { name: 'fence-objects: a wildcard', pod: pod({ 'leasehold.io/fence-objects': 'configmaps, *' }), refused: 'same words' },
  { name: 'fence-objects: a subresource', pod: pod({ 'leasehold.io/fence-objects': 'deployments.apps/scale' }), refused: 'same words' },
  { name: 'fence-objects: not a resource name', pod: pod({ 'leasehold.io/fence-objects': 'ConfigMaps' }), refused: 'same words' },
  { name: 'fence-objects: not an API group', pod: pod({ 'leasehold.io/fence-objects': 'configmaps,deployments.Apps' }), refused: 'same words' },
  { name: 'fence-objects: a kind named twice', pod: pod({ 'leasehold.io/fence-objects': 'configmaps,secrets,configmaps.' }), refused: 'same words' },
  { name: 'fence-objects: on a shard group', pod: pod({ 'leasehold.io/shards': '4', 'leasehold.io/fence-objects': 'configmaps' }), refused: 'same words' },
  {
    name: 'fence-objects: a lease name over 63',
    pod: pod({ 'leasehold.io/lease': 'l'.repeat(64), 'leasehold.io/fence-objects': 'configmaps' }),
    refused: 'same words',
  },
  { name: 'native-sidecar', pod: pod({ 'leasehold.io/native-sidecar': 'maybe' }), refused: 'same words' },
  { name: 'a port past 65535', pod: pod({ 'leasehold.io/port': '70000' }), refused: 'same words' },
  { name: 'a port an app container declares', pod: pod({ 'leasehold.io/port': '8080' }, { containers: [app(named)] }), refused: 'same words' },
  {
    name: 'a port an init container declares',
    pod: pod({}, { initContainers: [{ name: 'init', image: 'busybox', ports: [{ containerPort: 4040 }] }] }),
    refused: 'same words',
  },
  { name: 'an empty container name', pod: pod({ 'leasehold.io/containers': 'app,,' }), refused: 'same words' },
  {
    name: 'an unknown container',
    pod: pod({ 'leasehold.io/containers': 'app, nope' }, { containers: [app(), { name: 'web', image: 'busybox' }] }),
    refused: 'same words',
  },
  {
    name: 'an app container mounting /leader already',
    pod: pod({}, { containers: [app({ volumeMounts: [{ name: 'd', mountPath: '/leader/' }] })], volumes: [{ name: 'd', emptyDir: {} }] }),
    refused: 'same words',
  },
  { name: 'an unknown health container', pod: pod({ 'leasehold.io/health-container': 'nope' }), refused: 'same words' },
  { name: 'health by another scheme', pod: pod({ 'leasehold.io/health': 'https://127.0.0.1:8443/' }), refused: 'same words' },
  { name: 'health of another host', pod: pod({ 'leasehold.io/health': 'http://example.com/ready' }), refused: 'same words' },
  { name: 'health with credentials', pod: pod({ 'leasehold.io/health': 'http://u:p@127.0.0.1:8080/' }), refused: 'same words' },
  { name: "health on the sidecar's port", pod: pod({ 'leasehold.io/health': 'tcp:4040' }), refused: 'same words' },
  { name: "health by URL on the sidecar's port", pod: pod({ 'leasehold.io/port': '80', 'leasehold.io/health': 'http://127.0.0.1/x' }), refused: 'same words' },
  { name: 'health on port 0', pod: pod({ 'leasehold.io/health': 'tcp:0' }), refused: 'same words' },
  { name: 'a volume by the status volume name', pod: pod({}, { volumes: [{ name: 'leasehold-status', emptyDir: {} }] }), refused: 'same words' },
  { name: 'no ServiceAccount token', pod: pod({}, { automountServiceAccountToken: false }), refused: 'same words' },
  {
    name: 'a made-up leasehold container',
    pod: pod({}, { containers: [app(), { name: 'leasehold', image: 'mine', args: ['own'] }] }),
    refused: { names: 'a container named "leasehold"' },
  },
];
