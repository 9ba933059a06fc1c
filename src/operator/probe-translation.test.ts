import { test } from 'node:test';
import assert from 'node:assert/strict';
import { healthFlagsFromProbes, type Probe } from './probe-translation.js';
import { InvalidConfigError } from '../errors.js';
import type { Container, Pod } from './pod-types.js';

const SIDECAR_PORT = 4040;
const KUBELET_DEFAULTS = [
  '--health-period=10s',
  '--health-timeout=1s',
  '--health-initial-delay=0s',
  '--health-failure-threshold=3',
  '--health-success-threshold=1',
];

function pod(containers: Container[], annotations?: Record<string, string>): Pod {
  return { metadata: { name: 'p', namespace: 'shop', ...(annotations ? { annotations } : {}) }, spec: { containers } };
}
const app = (extra: Partial<Container> = {}): Container => ({ name: 'app', image: 'busybox', ports: [{ name: 'http', containerPort: 8080 }], ...extra });
const ready = (probe: Probe, extra: Partial<Container> = {}) => pod([app({ readinessProbe: probe, ...extra })]);

test('a usable probe becomes the sidecar source; the timings are copied, the kubelet default for each unset one', () => {
  const cases: { name: string; pod: Pod; args: string[] }[] = [
    {
      name: 'httpGet, numeric port, no scheme',
      pod: ready({ httpGet: { path: '/ready', port: 8080 } }),
      args: ['--health-http=http://127.0.0.1:8080/ready', ...KUBELET_DEFAULTS],
    },
    {
      name: 'httpGet, scheme HTTP, named port',
      pod: ready({ httpGet: { path: '/ready', port: 'http', scheme: 'HTTP' } }),
      args: ['--health-http=http://127.0.0.1:8080/ready', ...KUBELET_DEFAULTS],
    },
    {
      name: 'httpGet, host localhost, no path',
      pod: ready({ httpGet: { port: 8080, host: 'localhost' } }),
      args: ['--health-http=http://127.0.0.1:8080/', ...KUBELET_DEFAULTS],
    },
    {
      name: 'httpGet, host 127.0.0.1, path without a slash',
      pod: ready({ httpGet: { port: 8080, host: '127.0.0.1', path: 'ok' } }),
      args: ['--health-http=http://127.0.0.1:8080/ok', ...KUBELET_DEFAULTS],
    },
    { name: 'tcpSocket, named port', pod: ready({ tcpSocket: { port: 'http' } }), args: ['--health-tcp=8080', ...KUBELET_DEFAULTS] },
    { name: 'tcpSocket, port as a numeric string', pod: ready({ tcpSocket: { port: '5432' } }), args: ['--health-tcp=5432', ...KUBELET_DEFAULTS] },
    {
      name: 'every timing set',
      pod: ready({ tcpSocket: { port: 8080 }, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 2, successThreshold: 3, initialDelaySeconds: 5 }),
      args: [
        '--health-tcp=8080',
        '--health-period=2s',
        '--health-timeout=2s',
        '--health-initial-delay=5s',
        '--health-failure-threshold=2',
        '--health-success-threshold=3',
      ],
    },
    {
      name: 'a timeout longer than the period is cut to the period (the sidecar keeps one probe in flight)',
      pod: ready({ tcpSocket: { port: 8080 }, periodSeconds: 2, timeoutSeconds: 5 }),
      args: [
        '--health-tcp=8080',
        '--health-period=2s',
        '--health-timeout=2s',
        '--health-initial-delay=0s',
        '--health-failure-threshold=3',
        '--health-success-threshold=1',
      ],
    },
    {
      name: 'no readinessProbe: the livenessProbe',
      pod: pod([app({ livenessProbe: { httpGet: { path: '/live', port: 8080 }, periodSeconds: 5 } })]),
      args: [
        '--health-http=http://127.0.0.1:8080/live',
        '--health-period=5s',
        '--health-timeout=1s',
        '--health-initial-delay=0s',
        '--health-failure-threshold=3',
        '--health-success-threshold=1',
      ],
    },
    {
      name: 'the readinessProbe before the livenessProbe',
      pod: pod([app({ readinessProbe: { tcpSocket: { port: 8080 } }, livenessProbe: { httpGet: { path: '/live', port: 8080 } } })]),
      args: ['--health-tcp=8080', ...KUBELET_DEFAULTS],
    },
    {
      name: 'the first container, not a later one',
      pod: pod([app({ readinessProbe: { tcpSocket: { port: 8080 } } }), { name: 'db', readinessProbe: { tcpSocket: { port: 5432 } } }]),
      args: ['--health-tcp=8080', ...KUBELET_DEFAULTS],
    },
    {
      name: 'leasehold.io/health-container picks another container',
      pod: pod([app({ readinessProbe: { tcpSocket: { port: 8080 } } }), { name: 'db', readinessProbe: { tcpSocket: { port: 5432 } } }], {
        'leasehold.io/health-container': 'db',
      }),
      args: ['--health-tcp=5432', ...KUBELET_DEFAULTS],
    },
    { name: 'no probe at all: nothing, as before', pod: pod([app()]), args: [] },
    { name: 'leasehold.io/health off', pod: pod([app({ readinessProbe: { tcpSocket: { port: 8080 } } })], { 'leasehold.io/health': 'off' }), args: [] },
    {
      name: 'leasehold.io/health auto is the default',
      pod: pod([app({ readinessProbe: { tcpSocket: { port: 8080 } } })], { 'leasehold.io/health': 'auto' }),
      args: ['--health-tcp=8080', ...KUBELET_DEFAULTS],
    },
    {
      name: 'leasehold.io/health a URL, timings from the exec probe it replaces',
      pod: pod([app({ readinessProbe: { exec: { command: ['check'] }, periodSeconds: 3 } })], {
        'leasehold.io/health': 'http://localhost:8081/healthz?deep=1',
      }),
      args: [
        '--health-http=http://localhost:8081/healthz?deep=1',
        '--health-period=3s',
        '--health-timeout=1s',
        '--health-initial-delay=0s',
        '--health-failure-threshold=3',
        '--health-success-threshold=1',
      ],
    },
    {
      name: 'leasehold.io/health tcp:<port> without any probe: kubelet defaults',
      pod: pod([app()], { 'leasehold.io/health': 'tcp:5432' }),
      args: ['--health-tcp=5432', ...KUBELET_DEFAULTS],
    },
  ];
  for (const c of cases) {
    const got = healthFlagsFromProbes(c.pod, SIDECAR_PORT);
    assert.deepEqual(got.args, c.args, c.name);
    assert.equal(got.warning, undefined, c.name);
  }
});

test('a probe that is not usable fills nothing and says why: other schemes, hosts, exec, grpc, headers, unknown ports', () => {
  const cases: { name: string; probe: Probe; why: RegExp }[] = [
    { name: 'HTTPS', probe: { httpGet: { path: '/', port: 8443, scheme: 'HTTPS' } }, why: /scheme is HTTPS: the sidecar probes plain HTTP only/ },
    { name: 'another host', probe: { httpGet: { path: '/', port: 80, host: 'db.example' } }, why: /probes host db\.example, not the pod/ },
    { name: 'tcp to another host', probe: { tcpSocket: { port: 80, host: '10.0.0.1' } }, why: /connects to host 10\.0\.0\.1, not the pod/ },
    { name: 'headers', probe: { httpGet: { path: '/', port: 8080, httpHeaders: [{ name: 'Host', value: 'x' }] } }, why: /httpHeaders/ },
    { name: 'exec', probe: { exec: { command: ['check'] } }, why: /exec probe/ },
    { name: 'grpc', probe: { grpc: { port: 9000 } }, why: /grpc probe/ },
    { name: 'an undeclared named port', probe: { tcpSocket: { port: 'admin' } }, why: /declares no port named "admin"/ },
  ];
  for (const c of cases) {
    const got = healthFlagsFromProbes(ready(c.probe), SIDECAR_PORT);
    assert.deepEqual(got.args, [], c.name);
    assert.match(got.warning ?? '', c.why, c.name);
    assert.match(
      got.warning ?? '',
      /^leasehold\.io\/health: no app health from container "app"'s readinessProbe \(.*\); set leasehold\.io\/health to a URL, tcp:<port> or off$/,
      c.name,
    );
  }
});

test("no circle: a probe on the sidecar's own port (by number or by its port's name) is never the app's health", () => {
  const cases: { name: string; pod: Pod; port?: number }[] = [
    { name: '/readyz on 4040', pod: ready({ httpGet: { path: '/readyz', port: 4040 } }) },
    { name: '/leader on 4040', pod: ready({ httpGet: { path: '/leader', port: 4040 } }) },
    { name: 'any path on 4040', pod: ready({ httpGet: { path: '/anything', port: 4040 } }) },
    { name: 'tcp on 4040', pod: ready({ tcpSocket: { port: 4040 } }) },
    { name: "the sidecar's port name", pod: ready({ httpGet: { path: '/readyz', port: 'leasehold' } }) },
    { name: 'leasehold.io/port moved the sidecar to 9000', pod: ready({ httpGet: { path: '/readyz', port: 9000 } }), port: 9000 },
  ];
  for (const c of cases) {
    const got = healthFlagsFromProbes(c.pod, c.port ?? SIDECAR_PORT);
    assert.deepEqual(got.args, [], c.name);
    assert.match(got.warning ?? '', /is the leasehold sidecar's own port: the app's health must not depend on leadership/, c.name);
  }
  // The sidecar elsewhere: the same probe on 4040 is the app's.
  assert.deepEqual(healthFlagsFromProbes(ready({ tcpSocket: { port: 4040 } }), 9000).args[0], '--health-tcp=4040');
});

test('a bad leasehold.io/health or leasehold.io/health-container is refused, naming the annotation and the rule', () => {
  const cases: { annotations: Record<string, string>; message: string }[] = [
    {
      annotations: { 'leasehold.io/health': 'on' },
      message: 'annotation leasehold.io/health "on" is invalid: must be auto, off, http://127.0.0.1:<port><path> (or localhost), or tcp:<port>',
    },
    {
      annotations: { 'leasehold.io/health': 'https://127.0.0.1:8443/ready' },
      message:
        'annotation leasehold.io/health "https://127.0.0.1:8443/ready" is invalid: must be auto, off, http://127.0.0.1:<port><path> (or localhost), or tcp:<port>',
    },
    {
      annotations: { 'leasehold.io/health': 'http://10.0.0.1:8080/ready' },
      message:
        'annotation leasehold.io/health "http://10.0.0.1:8080/ready" is invalid: the host must be 127.0.0.1 or localhost: the sidecar probes the app in its own pod',
    },
    {
      annotations: { 'leasehold.io/health': 'http://u:p@127.0.0.1:8080/' },
      message: 'annotation leasehold.io/health "http://u:p@127.0.0.1:8080/" is invalid: a URL with credentials is refused',
    },
    {
      annotations: { 'leasehold.io/health': 'http://127.0.0.1:4040/readyz' },
      message:
        'annotation leasehold.io/health "http://127.0.0.1:4040/readyz" is invalid: port 4040 is the leasehold sidecar\'s own port: the app\'s health must not depend on leadership',
    },
    {
      annotations: { 'leasehold.io/health': 'tcp:4040' },
      message:
        'annotation leasehold.io/health "tcp:4040" is invalid: port 4040 is the leasehold sidecar\'s own port: the app\'s health must not depend on leadership',
    },
    { annotations: { 'leasehold.io/health': 'tcp:70000' }, message: 'annotation leasehold.io/health "tcp:70000" is invalid: the port must be from 1 to 65535' },
    { annotations: { 'leasehold.io/health': 'tcp:0' }, message: 'annotation leasehold.io/health "tcp:0" is invalid: the port must be from 1 to 65535' },
    {
      annotations: { 'leasehold.io/health': 'tcp:db:5432' },
      message: 'annotation leasehold.io/health "tcp:db:5432" is invalid: must be auto, off, http://127.0.0.1:<port><path> (or localhost), or tcp:<port>',
    },
    {
      annotations: { 'leasehold.io/health-container': 'web' },
      message: 'annotation leasehold.io/health-container "web" is invalid: the pod has no app container by that name (it has "app")',
    },
  ];
  for (const c of cases) {
    assert.throws(
      () => healthFlagsFromProbes(pod([app()], c.annotations), SIDECAR_PORT),
      (err: unknown) => err instanceof InvalidConfigError && err.message === c.message,
      JSON.stringify(c.annotations),
    );
  }
});
