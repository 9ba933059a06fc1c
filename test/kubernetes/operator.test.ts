/**
 * `leasehold operator` against a real API server: the API server calls the operator's webhook
 * on this host through a url clientConfig, so admission is real (no cluster, no kubelet: pods
 * stay Pending). Checks injection, refusal, the health flags from the app's probe (and the warning
 * when it cannot be used), an untouched unlabelled pod, the RBAC it keeps and
 * removes (with `kubectl auth can-i`), no grant for a pod that only looks injected or names another
 * controller's Lease, an uninjected pod reported after a restart, and a forced
 * certificate renewal during which every pod creation still succeeds.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { waitFor, type Proc } from '../support/cli.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { kubectlIn, startOperatorProcess, stopOperators, webhookCaBundle, webhookConfiguration } from '../support/operator-process.js';
import { freePort } from '../support/control-plane.js';
import { grantName, installationOf } from '../../src/operator/rbac.js';

const WEBHOOK = `leasehold-operator-test-${process.pid}`;

const json = <T>(args: string[]) => JSON.parse(kubectl([...args, '-o', 'json'])) as T;
interface PodJson {
  metadata: { name: string; annotations?: Record<string, string>; uid: string };
  spec: { containers: { name: string; args?: string[]; volumeMounts?: { mountPath: string; readOnly?: boolean }[] }[]; volumes?: { name: string }[] };
}

/** Creates a pod from a manifest through kubectl (as a user would); returns kubectl's result. */
function createPod(
  ns: string,
  name: string,
  labels: Record<string, string>,
  annotations: Record<string, string> = {},
  app: Record<string, unknown> = {},
): { ok: boolean; out: string } {
  const manifest = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels, annotations },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'], ...app }] },
  };
  try {
    return { ok: true, out: kubectlIn(['create', '-f', '-', '-o', 'json'], JSON.stringify(manifest)) };
  } catch (err) {
    return { ok: false, out: String((err as { stderr?: Buffer }).stderr ?? err) };
  }
}

const canI = (ns: string, sa: string, verb: string, resource: string, inNs = ns) => {
  try {
    return kubectl(['auth', 'can-i', verb, resource, '-n', inNs, '--as', `system:serviceaccount:${ns}:${sa}`]).trim();
  } catch (err) {
    return String((err as { stdout?: Buffer }).stdout ?? '').trim();
  }
};

describe('leasehold operator on a real API server', () => {
  let ops = '';
  let app = '';
  let other = '';
  let port = 0;
  let operator: Proc | undefined;
  const started: Proc[] = [];

  const startOperator = () => {
    const p = startOperatorProcess({
      namespace: ops,
      identity: `op-${started.length}`,
      port,
      webhook: WEBHOOK,
      flags: [
        '--extra-host',
        '127.0.0.1',
        '--resync',
        '2s',
        // Its own election's timings (not the 15s/10s/2s defaults): the Lease must show them.
        '--lease-duration',
        '6s',
        '--renew-deadline',
        '4s',
        '--retry-period',
        '1s',
        '--log-level',
        'debug',
      ],
    });
    started.push(p);
    return p;
  };

  const webhookConfig = (failurePolicy: 'Fail' | 'Ignore', caBundle?: string) =>
    webhookConfiguration({ name: WEBHOOK, port, failurePolicy, namespaces: [app, other], caBundle });

  const applyWebhook = (failurePolicy: 'Fail' | 'Ignore') => {
    kubectlIn(['apply', '-f', '-'], JSON.stringify(webhookConfig(failurePolicy, webhookCaBundle(WEBHOOK))));
  };

  const caBundle = () => webhookCaBundle(WEBHOOK);

  before(async () => {
    ops = await freshNamespace('op');
    app = await freshNamespace('opapp');
    other = await freshNamespace('opother');
    for (const ns of [app, other]) kubectl(['create', 'serviceaccount', 'default', '-n', ns]);
    port = await freePort();
    kubectlIn(['create', '-f', '-'], JSON.stringify(webhookConfig('Fail')));
    operator = startOperator();
    await waitFor('the caBundle written', () => caBundle() !== '', 30_000, 100);
    // The API server reads webhook configurations through its cache: wait until a labelled pod is injected.
    await waitFor(
      'a first injection',
      () => {
        const r = createPod(app, `probe-${Date.now()}`, { 'leasehold.io/inject': 'true' });
        return r.ok && (JSON.parse(r.out) as PodJson).spec.containers.some((c) => c.name === 'leasehold');
      },
      30_000,
      200,
    );
  });

  after(() => {
    stopOperators(started, WEBHOOK);
    for (const ns of [ops, app, other]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('elects its reconciler on the Lease with the timings of its flags', async () => {
    const lease = await waitFor(
      'the Lease',
      () => {
        try {
          return json<{ spec: { holderIdentity?: string; leaseDurationSeconds?: number } }>(['get', 'lease', 'leasehold-operator', '-n', ops]);
        } catch {
          return undefined;
        }
      },
      30_000,
      100,
    );
    assert.equal(lease.spec.leaseDurationSeconds, 6);
    assert.match(lease.spec.holderIdentity ?? '', /^op-\d+$/);
  });

  it('injects a labelled pod: the sidecar, the status volume read-only, the lease from its name', () => {
    const r = createPod(app, 'web-1', { 'leasehold.io/inject': 'true' }, { 'leasehold.io/lease': 'web', 'leasehold.io/pod-label': 'true' });
    assert.ok(r.ok, r.out);
    const pod = json<PodJson>(['get', 'pod', 'web-1', '-n', app]);
    const sidecar = pod.spec.containers.find((c) => c.name === 'leasehold');
    assert.ok(sidecar, 'the sidecar was injected');
    assert.ok(sidecar.args!.includes('--lease=web'));
    assert.deepEqual(
      pod.spec.containers.find((c) => c.name === 'app')!.volumeMounts!.filter((m) => m.mountPath === '/leader'),
      [{ name: 'leasehold-status', mountPath: '/leader', readOnly: true }],
    );
    assert.equal(pod.metadata.annotations!['leasehold.io/injected-lease'], 'web');
  });

  it('leaves an unlabelled pod exactly as sent', () => {
    const r = createPod(app, 'plain', {});
    assert.ok(r.ok, r.out);
    const pod = json<PodJson>(['get', 'pod', 'plain', '-n', app]);
    assert.deepEqual(
      pod.spec.containers.map((c) => c.name),
      ['app'],
    );
    assert.equal(pod.spec.volumes?.some((v) => v.name === 'leasehold-status') ?? false, false);
    assert.equal(pod.metadata.annotations, undefined);
  });

  it('refuses a bad annotation at admission, naming it and the rule', () => {
    const r = createPod(app, 'bad', { 'leasehold.io/inject': 'true' }, { 'leasehold.io/lease-duration': '10s', 'leasehold.io/renew-deadline': '10s' });
    assert.equal(r.ok, false);
    assert.match(r.out, /denied the request: leasehold: annotations leasehold\.io\/lease-duration "10s", .* leaseDuration must be greater than renewDeadline/);
  });

  it("fills the sidecar's health flags from the app's readinessProbe; an unusable one is injected without, kubectl printing why; a circle is refused", () => {
    const inject = { 'leasehold.io/inject': 'true' };
    const ports = { ports: [{ name: 'http', containerPort: 8080 }] };
    const r = createPod(
      app,
      'healthy',
      inject,
      {},
      { ...ports, readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 2, failureThreshold: 2 } },
    );
    assert.ok(r.ok, r.out);
    const args = json<PodJson>(['get', 'pod', 'healthy', '-n', app]).spec.containers.find((c) => c.name === 'leasehold')!.args!;
    assert.deepEqual(
      args.filter((a) => a.startsWith('--health-')),
      [
        '--health-http=http://127.0.0.1:8080/ready',
        '--health-period=2s',
        '--health-timeout=1s',
        '--health-initial-delay=0s',
        '--health-failure-threshold=2',
        '--health-success-threshold=1',
      ],
    );

    // An exec probe: the pod is created and injected, without health, and kubectl prints the webhook's warning.
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'exec-probe', namespace: app, labels: inject },
      spec: { containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'], readinessProbe: { exec: { command: ['true'] } } }] },
    };
    const created = spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'create', '-f', '-'], {
      input: JSON.stringify(manifest),
      encoding: 'utf8',
    });
    assert.equal(created.status, 0, created.stderr);
    assert.match(
      created.stderr,
      /Warning: leasehold\.io\/health: no app health from container "app"'s readinessProbe \(it is an exec probe, which runs in the app container, where the sidecar cannot run it\); set leasehold\.io\/health to a URL, tcp:<port> or off/,
    );
    const execArgs = json<PodJson>(['get', 'pod', 'exec-probe', '-n', app]).spec.containers.find((c) => c.name === 'leasehold')!.args!;
    assert.deepEqual(
      execArgs.filter((a) => a.startsWith('--health-')),
      [],
    );

    const circle = createPod(app, 'circle', inject, { 'leasehold.io/health': 'http://127.0.0.1:4040/readyz' });
    assert.equal(circle.ok, false);
    assert.match(
      circle.out,
      /denied the request: leasehold: annotation leasehold\.io\/health "http:\/\/127\.0\.0\.1:4040\/readyz" is invalid: port 4040 is the leasehold sidecar's own port: the app's health must not depend on leadership/,
    );
  });

  it('grants the ServiceAccount its one Lease (and pods in podLabel mode), and removes the grant with the last pod', async () => {
    kubectl(['create', 'serviceaccount', 'worker', '-n', app]);
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'worker-1', namespace: app, labels: { 'leasehold.io/inject': 'true' }, annotations: { 'leasehold.io/lease': 'jobs' } },
      spec: { serviceAccountName: 'worker', containers: [{ name: 'app', image: 'busybox:1.36' }] },
    };
    kubectlIn(['create', '-f', '-'], JSON.stringify(manifest));
    await waitFor('the worker may update its lease', () => canI(app, 'worker', 'update', 'leases/jobs') === 'yes', 15_000, 100);
    assert.equal(canI(app, 'worker', 'update', 'leases/other'), 'no', 'another Lease');
    assert.equal(canI(app, 'worker', 'delete', 'leases/jobs'), 'no', 'another verb');
    assert.equal(canI(app, 'worker', 'update', 'leases/jobs', other), 'no', 'another namespace');
    assert.equal(canI(app, 'worker', 'patch', 'pods'), 'no', 'no pods without podLabel');
    await waitFor('the podLabel pod may patch pods', () => canI(app, 'default', 'patch', 'pods') === 'yes', 15_000, 100);
    kubectl(['delete', 'pod', 'worker-1', '-n', app, '--grace-period=0', '--force']);
    await waitFor('the grant removed', () => canI(app, 'worker', 'update', 'leases/jobs') === 'no', 15_000, 100);
  });

  it('grants nothing for a pod that only looks injected, nor for a Lease another controller holds', { timeout: 60_000 }, async () => {
    const outside = await freshNamespace('opout');
    try {
      kubectl(['create', 'serviceaccount', 'intruder', '-n', outside]);
      kubectl(['create', 'serviceaccount', 'intruder', '-n', app]);
      // What any pod creator can write: the injector's annotations and a container named leasehold.
      const lookalike = (ns: string, name: string) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name,
          namespace: ns,
          labels: { 'leasehold.io/inject': 'true' },
          annotations: { 'leasehold.io/injected-lease': 'kube-scheduler', 'leasehold.io/injected-pod-label': 'true' },
        },
        spec: {
          serviceAccountName: 'intruder',
          containers: [
            { name: 'app', image: 'busybox:1.36' },
            { name: 'leasehold', image: 'busybox:1.36' },
          ],
        },
      });
      // Where the webhook is called, it refuses the pod.
      let refused = '';
      try {
        kubectlIn(['create', '-f', '-'], JSON.stringify(lookalike(app, 'lookalike')));
      } catch (err) {
        refused = String((err as { stderr?: Buffer }).stderr ?? err);
      }
      assert.match(refused, /denied the request: leasehold: the pod has a container named "leasehold" but no valid annotation leasehold\.io\/injected-mark/);
      // Where it is not (a namespace outside its selector), the pod is created as written, and the
      // reconciler must still grant nothing.
      kubectlIn(['create', '-f', '-'], JSON.stringify(lookalike(outside, 'lookalike')));
      const uid = json<PodJson>(['get', 'pod', 'lookalike', '-n', outside]).metadata.uid;
      const notGranted = (ns: string, podUid: string) =>
        json<{ items: { reason: string; message: string; involvedObject: { uid: string } }[] }>(['get', 'events', '-n', ns]).items.find(
          (e) => e.reason === 'LeaseholdNotGranted' && e.involvedObject.uid === podUid,
        );
      const event = await waitFor('the forged pod reported', () => notGranted(outside, uid), 30_000, 200);
      assert.match(event.message, /no valid injection mark/);
      for (const [verb, resource] of [
        ['update', 'leases/kube-scheduler'],
        ['create', 'leases'],
        ['patch', 'pods'],
      ] as const) {
        assert.equal(canI(outside, 'intruder', verb, resource), 'no', `${verb} ${resource}`);
      }

      // Injected for real, but naming a Lease another controller made: refused until the
      // namespace's owner allows it by name.
      kubectlIn(
        ['apply', '-f', '-'],
        JSON.stringify({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'ctrl', namespace: app }, spec: { holderIdentity: 'ctrl-0' } }),
      );
      const squatter = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'squatter', namespace: app, labels: { 'leasehold.io/inject': 'true' }, annotations: { 'leasehold.io/lease': 'ctrl' } },
        spec: { serviceAccountName: 'intruder', containers: [{ name: 'app', image: 'busybox:1.36' }] },
      };
      const created = JSON.parse(kubectlIn(['create', '-f', '-', '-o', 'json'], JSON.stringify(squatter))) as PodJson;
      assert.ok(
        created.spec.containers.some((c) => c.name === 'leasehold'),
        'injected',
      );
      const refusal = await waitFor('the Lease refused', () => notGranted(app, created.metadata.uid), 30_000, 200);
      assert.match(refusal.message, /Lease .*\/ctrl exists and was not made by leasehold-operator .*leasehold\.io\/allowed-leases/);
      assert.equal(canI(app, 'intruder', 'update', 'leases/ctrl'), 'no');
      kubectl(['annotate', 'namespace', app, 'leasehold.io/allowed-leases=ctrl']);
      await waitFor('granted once allowed', () => canI(app, 'intruder', 'update', 'leases/ctrl') === 'yes', 30_000, 200);
      kubectl(['delete', 'pod', 'squatter', '-n', app, '--grace-period=0', '--force']);
      await waitFor('the grant removed', () => canI(app, 'intruder', 'update', 'leases/ctrl') === 'no', 30_000, 200);
    } finally {
      kubectl(['delete', 'namespace', outside, '--wait=false', '--ignore-not-found']);
    }
  });

  it("never binds a Role it did not make: one squatting the grant's name leaves the pod ungranted, said why", { timeout: 60_000 }, async () => {
    kubectl(['create', 'serviceaccount', 'squat', '-n', app]);
    const name = grantName(installationOf(ops, 'leasehold-operator'), 'squat', 'sq-lease');
    // Made before the pod by someone who can write Roles in the namespace, with rules of their choosing.
    kubectlIn(
      ['create', '-f', '-'],
      JSON.stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name, namespace: app },
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }],
      }),
    );
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'squatted', namespace: app, labels: { 'leasehold.io/inject': 'true' }, annotations: { 'leasehold.io/lease': 'sq-lease' } },
      spec: { serviceAccountName: 'squat', containers: [{ name: 'app', image: 'busybox:1.36' }] },
    };
    const created = JSON.parse(kubectlIn(['create', '-f', '-', '-o', 'json'], JSON.stringify(pod))) as PodJson;
    const refusal = await waitFor(
      'the pod reported',
      () =>
        json<{ items: { reason: string; message: string; involvedObject: { uid: string } }[] }>(['get', 'events', '-n', app]).items.find(
          (e) => e.reason === 'LeaseholdNotGranted' && e.involvedObject.uid === created.metadata.uid,
        ),
      30_000,
      200,
    );
    assert.match(refusal.message, new RegExp(`a Role ${app}/${name} exists and was not made by leasehold-operator`));
    assert.equal(canI(app, 'squat', 'list', 'secrets'), 'no', "the squatter's rules were not bound");
    assert.equal(canI(app, 'squat', 'update', 'leases/sq-lease'), 'no');
    assert.equal(spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'get', 'rolebinding', name, '-n', app]).status, 1, 'no binding made');
    // Removed, the grant follows at the next pass.
    kubectl(['delete', 'role', name, '-n', app]);
    await waitFor('granted once the squatter is gone', () => canI(app, 'squat', 'update', 'leases/sq-lease') === 'yes', 45_000, 200);
    assert.equal(canI(app, 'squat', 'list', 'secrets'), 'no');
    kubectl(['delete', 'pod', 'squatted', '-n', app, '--grace-period=0', '--force']);
  });

  it('reports a labelled pod created while the webhook was down, after the operator comes back', { timeout: 90_000 }, async () => {
    applyWebhook('Ignore');
    operator!.kill('SIGTERM');
    await operator!.exited;
    // With the webhook unreachable and failurePolicy Ignore, the pod is created without a sidecar.
    await waitFor('an uninjected pod', () => createPod(app, 'missed', { 'leasehold.io/inject': 'true' }).ok, 30_000, 200);
    const missed = json<PodJson>(['get', 'pod', 'missed', '-n', app]);
    assert.deepEqual(
      missed.spec.containers.map((c) => c.name),
      ['app'],
    );
    const back = Date.now();
    operator = startOperator();
    const event = await waitFor(
      'the Event on the pod',
      () => {
        const events = json<{ items: { reason: string; message: string; involvedObject: { uid: string } }[] }>(['get', 'events', '-n', app]).items;
        return events.find((e) => e.reason === 'LeaseholdNotInjected' && e.involvedObject.uid === missed.metadata.uid);
      },
      30_000,
      200,
    );
    console.log(`operator: uninjected pod reported ${Date.now() - back} ms after the operator's start`);
    assert.match(event.message, /without the leasehold sidecar/);
    await waitFor('the log line', () => operator!.stderr().includes('labelled pod not injected') && operator!.stderr().includes('"pod":"missed"'), 10_000, 100);
    applyWebhook('Fail');
  });

  it('a forced certificate renewal changes the served certificate while every pod creation succeeds', { timeout: 90_000 }, async () => {
    const served = () =>
      new Promise<string>((resolve, reject) => {
        void import('node:tls').then(({ connect }) => {
          const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
            resolve(s.getPeerX509Certificate()!.fingerprint256);
            s.end();
          });
          s.on('error', reject);
        });
      });
    await waitFor('the webhook back', async () => (await served().catch(() => '')) !== '', 30_000, 100);
    const before = await served();
    const bundleBefore = caBundle();
    kubectl(['annotate', 'secret', 'leasehold-operator-tls', '-n', ops, 'leasehold.io/renew=true']);
    let created = 0;
    let i = 0;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; i++) {
      const r = createPod(app, `rot-${i}`, { 'leasehold.io/inject': 'true' }, { 'leasehold.io/lease': 'rot' });
      assert.ok(r.ok, `pod ${i} refused during the renewal: ${r.out}`);
      assert.ok(
        (JSON.parse(r.out) as PodJson).spec.containers.some((c) => c.name === 'leasehold'),
        `pod ${i} injected`,
      );
      created++;
      if ((await served()) !== before && created >= 5) break;
    }
    const after = await served();
    assert.notEqual(after, before, 'the served certificate changed');
    assert.equal(caBundle(), bundleBefore, 'same CA: the bundle is unchanged');
    const ca = new X509Certificate(Buffer.from(bundleBefore, 'base64'));
    assert.ok(ca.ca);
    console.log(`operator: certificate renewed; ${created} pods created during it, all injected`);
  });
});
