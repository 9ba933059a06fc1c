/**
 * `leasehold operator --injection-mode policy` against a real API server: no webhook, certificate
 * or mark Secret; /healthz on plain HTTP; the elected replica grants a labelled pod whose sidecar
 * is the one the policy gives for its annotations (the API server's ServiceAccount plugin adds its
 * token mount to it, as after a policy), refuses a lookalike, and reports a labelled pod without
 * the sidecar. The pods are created with their sidecar already in them, as the policy would leave
 * them: the policy itself, and its parity with the webhook, are the policy templates' tests.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startCli, waitFor, type Proc } from '../support/cli.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { kubectlIn } from '../support/operator-process.js';
import { freePort } from '../support/control-plane.js';
import { grantName, installationOf } from '../../src/operator/rbac.js';
import { injectionSettings, type SidecarDefaults } from '../../src/operator/injection-settings.js';
import { sidecarContainer, statusVolume } from '../../src/operator/sidecar-container.js';
import type { Container, Pod } from '../../src/operator/pod-types.js';

/** This process's own label value: the operator lists, grants and reports no other test's pods. */
const INJECT = `policy-${process.pid}`;
const SIDECAR: SidecarDefaults = { image: 'leasehold:test', imagePullPolicy: 'IfNotPresent', nativeSidecar: 'false', clusterSupportsNativeSidecars: true };

const json = <T>(args: string[]) => JSON.parse(kubectl([...args, '-o', 'json'])) as T;
type Events = { items: { reason: string; message: string; involvedObject: { name: string } }[] };

const healthz = (port: number) =>
  new Promise<number>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.end();
  });

/** A labelled pod; with `sidecarFor`, the sidecar (and status volume) the policy gives for those annotations. */
function labelledPod(ns: string, name: string, sa: string, annotations: Record<string, string>, sidecarFor?: Record<string, string>): Pod {
  const pod: Pod = {
    metadata: { name, namespace: ns, labels: { 'leasehold.io/inject': INJECT }, annotations },
    spec: { serviceAccountName: sa, containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
  };
  if (sidecarFor) {
    const c = sidecarContainer(injectionSettings({ ...pod, metadata: { ...pod.metadata, annotations: sidecarFor } }, SIDECAR), SIDECAR);
    pod.spec!.containers!.push(c as Container);
    pod.spec!.volumes = [statusVolume];
  }
  return pod;
}

describe('leasehold operator in policy mode on a real API server', () => {
  let ops = '';
  let app = '';
  let port = 0;
  let operator: Proc | undefined;

  before(async () => {
    ops = await freshNamespace('oppol');
    app = await freshNamespace('oppolapp');
    // No controller-manager here: ServiceAccounts are made by hand.
    for (const sa of ['default', 'web', 'intruder']) kubectl(['create', 'serviceaccount', sa, '-n', app]);
    port = await freePort();
    operator = startCli([
      'operator',
      '--kubeconfig',
      env().admin,
      '--namespace',
      ops,
      '--identity',
      'op-0',
      '--injection-mode',
      'policy',
      '--listen',
      `127.0.0.1:${port}`,
      '--sidecar-image',
      SIDECAR.image,
      '--inject-value',
      INJECT,
      '--resync',
      '2s',
      '--lease-duration',
      '6s',
      '--renew-deadline',
      '4s',
      '--retry-period',
      '1s',
    ]);
    for (const pod of [
      labelledPod(app, 'injected', 'web', { 'leasehold.io/lease': 'web' }, { 'leasehold.io/lease': 'web' }),
      // A made-up container: the sidecar of another lease under annotations naming this one.
      labelledPod(app, 'made-up', 'intruder', { 'leasehold.io/lease': 'web' }, { 'leasehold.io/lease': 'payments' }),
      labelledPod(app, 'bare', 'default', { 'leasehold.io/lease': 'web' }),
    ])
      kubectlIn(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Pod', ...pod }));
  });

  after(() => {
    if (operator) operator.kill('SIGKILL');
    for (const ns of [ops, app]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('serves /healthz on plain HTTP, and makes no Secret (no certificate, no mark key)', async () => {
    await waitFor('/healthz', async () => (await healthz(port)) === 200, 30_000, 100);
    // The reconciler has run once the pod it grants has its Role: by then a webhook replica would have made its Secrets.
    await waitFor('a first pass', () => json<{ items: unknown[] }>(['get', 'roles', '-n', app]).items.length > 0, 30_000, 200);
    assert.deepEqual(json<{ items: unknown[] }>(['get', 'secrets', '-n', ops]).items, []);
  });

  it("grants the pod whose sidecar is the policy's, after the ServiceAccount plugin's token mount; not the lookalike", async () => {
    const stored = json<Pod>(['get', 'pod', 'injected', '-n', app]);
    const mounts = stored.spec!.containers!.find((c) => c.name === 'leasehold')!.volumeMounts!.map((m) => m.mountPath);
    assert.ok(mounts.includes('/var/run/secrets/kubernetes.io/serviceaccount'), `the API server added its token mount: ${mounts.join(', ')}`);
    const role = grantName(installationOf(ops, 'leasehold-operator'), 'web', 'web');
    await waitFor(
      'the Role of web',
      () => json<{ items: { metadata: { name: string } }[] }>(['get', 'roles', '-n', app]).items.some((r) => r.metadata.name === role),
      30_000,
      200,
    );
    const canI = (sa: string, lease: string) => {
      try {
        return kubectl(['auth', 'can-i', 'update', `leases/${lease}`, '-n', app, '--as', `system:serviceaccount:${app}:${sa}`]).trim();
      } catch (err) {
        return String((err as { stdout?: Buffer }).stdout ?? '').trim();
      }
    };
    assert.equal(canI('web', 'web'), 'yes');
    const refused = await waitFor(
      'the lookalike reported',
      () => json<Events>(['get', 'events', '-n', app]).items.find((e) => e.reason === 'LeaseholdNotGranted' && e.involvedObject.name === 'made-up'),
      30_000,
      200,
    );
    assert.match(refused.message, /runs sidecar --backend=kubernetes --lease=payments, but the policy injects sidecar --backend=kubernetes --lease=web/);
    assert.equal(canI('intruder', 'web'), 'no');
    assert.equal(canI('intruder', 'payments'), 'no');
  });

  it('reports a labelled pod running without the sidecar, naming the policy', async () => {
    const e = await waitFor(
      'the bare pod reported',
      () => json<Events>(['get', 'events', '-n', app]).items.find((x) => x.reason === 'LeaseholdNotInjected' && x.involvedObject.name === 'bare'),
      30_000,
      200,
    );
    assert.match(e.message, /the MutatingAdmissionPolicy did not inject it/);
  });
});
