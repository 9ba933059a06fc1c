import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { admin, env, freshNamespace, kubectl } from '../support/kube.js';
import { waitFor } from '../support/cli.js';

/**
 * Issue 44's spike: what the API server itself does with MutatingAdmissionPolicy, pinned so that
 * the policy-mode injector is built on facts and fails here first if a release changes them.
 * Every pod is a server-side dry-run create; the policies are cluster-scoped, so their names carry
 * this process's id and their bindings select only this test's two namespaces.
 */
const FIXTURE = join(import.meta.dirname, 'admission-policy-facts.yaml');

interface Container {
  name: string;
  args?: string[];
  restartPolicy?: string;
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext?: Record<string, unknown>;
}
interface Pod {
  metadata: { annotations?: Record<string, string> };
  spec: { containers: Container[]; initContainers?: Container[]; volumes?: { name: string; emptyDir?: Record<string, unknown> }[] };
}

/** A server-side dry-run create: the pod as admission left it, or the API server's refusal. */
function dryRunCreate(namespace: string, pod: Record<string, unknown>): { pod?: Pod; refusal?: string } {
  const r = spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'create', '--dry-run=server', '-n', namespace, '-o', 'json', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', ...pod }),
  });
  if (r.status === 0) return { pod: JSON.parse(r.stdout.toString()) as Pod };
  return { refusal: r.stderr.toString().trim() };
}

const sidecarArgs = (lease: string) => ['sidecar', '--backend=kubernetes', `--lease=${lease}`, '--status-dir=/leader'];
const statusMount = { name: 'leasehold-status', mountPath: '/leader', readOnly: true };

function labelled(extra: { annotations?: Record<string, string>; spec?: Record<string, unknown> } = {}) {
  return {
    metadata: { name: 'p', labels: { 'leasehold.io/inject': 'true' }, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    // No token volume from the ServiceAccount admission plugin, unless a case asks for it: so a pod
    // can come without spec.volumes at all.
    spec: { automountServiceAccountToken: false, containers: [{ name: 'app', image: 'busybox' }], ...extra.spec },
  };
}

describe('MutatingAdmissionPolicy on the real API server (issue 44 facts)', () => {
  let injectNs = '';
  let applyNs = '';
  let unguardedNs = '';
  let rendered = '';

  before(async () => {
    injectNs = await freshNamespace('policy-inject');
    applyNs = await freshNamespace('policy-apply');
    unguardedNs = await freshNamespace('policy-unguarded');
    // This control plane runs no controller-manager: pods need their ServiceAccount made by hand.
    for (const ns of [injectNs, applyNs, unguardedNs])
      await admin.core().createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'default' } } });
    rendered = readFileSync(FIXTURE, 'utf8')
      .replaceAll('__INJECT_NAMESPACE__', injectNs)
      .replaceAll('__APPLY_NAMESPACE__', applyNs)
      .replaceAll('__UNGUARDED_NAMESPACE__', unguardedNs)
      .replaceAll('leasehold-facts-', `leasehold-facts-${process.pid}-`);
    const r = spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'create', '-f', '-'], { input: rendered });
    assert.equal(r.status, 0, `the policies were accepted: ${r.stderr.toString()}`);
    // Admission sees a new policy and binding through its informers: wait until all three act.
    await waitFor(
      'the JSONPatch policy to inject',
      () => dryRunCreate(injectNs, labelled()).pod?.spec.containers.some((c) => c.name === 'leasehold'),
      30_000,
      200,
    );
    await waitFor('the apply-configuration policy to act', () => dryRunCreate(applyNs, labelled()).refusal, 30_000, 200);
    await waitFor(
      'the validating policy to refuse',
      () => dryRunCreate(injectNs, labelled({ annotations: { 'leasehold.io/lease': 'Bad_Lease' } })).refusal,
      30_000,
      200,
    );
  });

  after(() => {
    // Cluster-scoped objects outlive the namespaces: delete them whatever happened above.
    if (rendered) spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'delete', '--ignore-not-found', '-f', '-'], { input: rendered });
    for (const ns of [injectNs, applyNs, unguardedNs]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  it('admissionregistration.k8s.io/v1 serves both policy kinds with no flag on the control plane', () => {
    const list = JSON.parse(kubectl(['get', '--raw', '/apis/admissionregistration.k8s.io/v1'])) as { resources: { name: string; kind: string }[] };
    const kinds = list.resources.map((r) => r.kind);
    for (const k of ['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) {
      assert.ok(kinds.includes(k), `${k} is served at v1: ${kinds.join(', ')}`);
    }
  });

  it('one JSONPatch policy appends the sidecar with args, downward-API env, a mount and securityContext', () => {
    const { pod, refusal } = dryRunCreate(injectNs, labelled());
    assert.ok(pod, refusal);
    const names = pod.spec.containers.map((c) => c.name);
    assert.deepEqual(names, ['app', 'leasehold']);
    const s = pod.spec.containers[1]!;
    assert.deepEqual(s.args, sidecarArgs('leasehold'));
    assert.deepEqual(s.env, [{ name: 'LEASEHOLD_IDENTITY', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } }]);
    assert.deepEqual(s.volumeMounts, [{ name: 'leasehold-status', mountPath: '/leader' }]);
    assert.deepEqual(s.securityContext, {
      runAsNonRoot: true,
      runAsUser: 1000,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
  });

  it('one expression creates spec.volumes when absent and appends when present; app mounts likewise', () => {
    const without = dryRunCreate(injectNs, labelled()).pod!;
    assert.deepEqual(without.spec.volumes, [{ name: 'leasehold-status', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }]);
    assert.deepEqual(without.spec.containers[0]!.volumeMounts, [statusMount], 'a container without volumeMounts gets the list');

    const withVolumes = dryRunCreate(
      injectNs,
      labelled({
        spec: {
          containers: [
            { name: 'app', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] },
            { name: 'bare', image: 'busybox' },
          ],
          volumes: [{ name: 'data', emptyDir: {} }],
        },
      }),
    ).pod!;
    assert.deepEqual(
      withVolumes.spec.volumes?.map((v) => v.name),
      ['data', 'leasehold-status'],
    );
    assert.deepEqual(withVolumes.spec.containers[0]!.volumeMounts, [{ name: 'data', mountPath: '/data' }, statusMount], 'appended after the mount it had');
    assert.deepEqual(withVolumes.spec.containers[1]!.volumeMounts, [statusMount]);
  });

  it('the ServiceAccount admission plugin runs again after the policy: the injected sidecar gets the token mount too', () => {
    const pod = dryRunCreate(injectNs, labelled({ spec: { automountServiceAccountToken: true } })).pod!;
    const sidecar = pod.spec.containers.find((c) => c.name === 'leasehold')!;
    assert.deepEqual(
      sidecar.volumeMounts?.map((m) => m.mountPath),
      ['/leader', '/var/run/secrets/kubernetes.io/serviceaccount'],
    );
  });

  it('an annotation is added by a ~1-escaped path, or as a new map; the lease annotation is read with a default', () => {
    const bare = dryRunCreate(injectNs, labelled()).pod!;
    assert.deepEqual(bare.metadata.annotations, { 'leasehold.io/injected-lease': 'leasehold' });
    const named = dryRunCreate(injectNs, labelled({ annotations: { 'leasehold.io/lease': 'my-lease' } })).pod!;
    assert.deepEqual(named.metadata.annotations, { 'leasehold.io/lease': 'my-lease', 'leasehold.io/injected-lease': 'my-lease' });
    assert.deepEqual(named.spec.containers[1]!.args, sidecarArgs('my-lease'));
  });

  it('a native sidecar goes among the init containers with restartPolicy Always', () => {
    const native = { 'leasehold.io/native-sidecar': 'true' };
    const first = dryRunCreate(injectNs, labelled({ annotations: native })).pod!;
    assert.deepEqual(
      first.spec.initContainers?.map((c) => [c.name, c.restartPolicy]),
      [['leasehold', 'Always']],
    );
    assert.deepEqual(
      first.spec.containers.map((c) => c.name),
      ['app'],
    );
    const after = dryRunCreate(injectNs, labelled({ annotations: native, spec: { initContainers: [{ name: 'init', image: 'busybox' }] } })).pod!;
    assert.deepEqual(
      after.spec.initContainers?.map((c) => [c.name, c.restartPolicy ?? null]),
      [
        ['init', null],
        ['leasehold', 'Always'],
      ],
    );
  });

  it('a pod already carrying a leasehold container is left unchanged (matchCondition), so reinvocation adds nothing', () => {
    const sent = labelled({
      spec: {
        containers: [
          { name: 'app', image: 'busybox' },
          { name: 'leasehold', image: 'mine', args: ['own'] },
        ],
      },
    });
    const pod = dryRunCreate(injectNs, sent).pod!;
    assert.deepEqual(
      pod.spec.containers.map((c) => [c.name, c.args ?? null]),
      [
        ['app', null],
        ['leasehold', ['own']],
      ],
    );
    assert.equal(pod.spec.volumes, undefined);
    assert.equal(pod.metadata.annotations, undefined);
  });

  it('an unlabelled pod is not touched', () => {
    const pod = dryRunCreate(injectNs, {
      metadata: { name: 'p' },
      spec: { automountServiceAccountToken: false, containers: [{ name: 'app', image: 'busybox' }] },
    }).pod!;
    assert.deepEqual(
      pod.spec.containers.map((c) => c.name),
      ['app'],
    );
    assert.equal(pod.spec.volumes, undefined);
  });

  it('an ApplyConfiguration that sets a container\'s args is refused: "may not mutate atomic arrays, maps or structs"', () => {
    const { refusal } = dryRunCreate(applyNs, labelled());
    const name = `leasehold-facts-${process.pid}-apply`;
    assert.equal(
      refusal,
      `The pods "p" is invalid: : policy '${name}' with binding '${name}' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.containers[0].args`,
    );
  });

  it('a ValidatingAdmissionPolicy refuses a bad lease annotation by name, and sees the mutated pod', () => {
    const { refusal } = dryRunCreate(injectNs, labelled({ annotations: { 'leasehold.io/lease': 'Bad_Lease' } }));
    const name = `leasehold-facts-${process.pid}-refuse`;
    assert.equal(
      refusal,
      `The pods "p" is invalid: : ValidatingAdmissionPolicy '${name}' with binding '${name}' denied request: annotation leasehold.io/lease: Bad_Lease is not a DNS-1123 subdomain (lower-case letters, digits, - and .)`,
    );
    // The same policy's second rule refuses a labelled pod without the sidecar: a good pod passes,
    // so validation ran on the pod as the mutating policy left it.
    const good = dryRunCreate(injectNs, labelled({ annotations: { 'leasehold.io/lease': 'good.lease' } }));
    assert.ok(good.pod, good.refusal);
  });

  it('reinvocationPolicy IfNeeded runs a policy again on its own result: without a guard it appends twice', () => {
    const { refusal } = dryRunCreate(unguardedNs, labelled());
    assert.equal(refusal, 'The Pod "p" is invalid: spec.containers[2].name: Duplicate value: "extra"');
  });
});
