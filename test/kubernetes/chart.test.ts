import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { env, freshNamespace, kubectl, rawLease } from '../support/kube.js';
import { kubeconfig } from '../support/control-plane.js';
import { loadAllYaml } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { buildTool } from '../support/build-tool.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
let helmBin = '';

function helm(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(helmBin, args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      HELM_CACHE_HOME: join(env().cpDir, 'helm-cache'),
      HELM_CONFIG_HOME: join(env().cpDir, 'helm-config'),
      HELM_DATA_HOME: join(env().cpDir, 'helm-data'),
    },
  });
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr };
}

function render(set: string[] = [], kubeVersion = '1.31.0'): Record<string, unknown>[] {
  const r = helm(['template', 'demo', CHART, '--namespace', 'apps', '--kube-version', kubeVersion, ...set.flatMap((s) => ['--set', s])]);
  assert.equal(r.code, 0, r.err);
  return (loadAllYaml(r.out) as (Record<string, unknown> | null)[]).filter((d): d is Record<string, unknown> => d !== null);
}

// Rendered manifests are walked as the untyped YAML they are; a wrong path fails the assertion.
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call */
type Obj = { kind: string; metadata: { name: string }; spec: Record<string, any>; rules?: any[] };
const find = (docs: Record<string, unknown>[], kind: string) => docs.filter((d) => d.kind === kind) as unknown as Obj[];

describe('the Helm chart', () => {
  const dir = scratchDir(() => cands);
  const cands: Candidate[] = [];
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });

  it('passes helm lint --strict', () => {
    const r = helm(['lint', '--strict', CHART]);
    assert.equal(r.code, 0, r.out + r.err);
  });

  it('renders a plain sidecar container by default (released at SIGTERM with the app), native on request; identity from the downward API', () => {
    const plain = find(render(), 'Deployment')[0]!.spec.template.spec;
    assert.equal(plain.initContainers, undefined);
    assert.deepEqual(
      plain.containers.map((c: { name: string }) => c.name),
      ['app', 'leasehold'],
    );
    const sidecar = plain.containers[1];
    assert.equal(sidecar.restartPolicy, undefined);
    const identity = sidecar.env.find((e: { name: string }) => e.name === 'LEASEHOLD_IDENTITY');
    assert.equal(identity.valueFrom.fieldRef.fieldPath, 'metadata.name');
    assert.ok(sidecar.args.includes('--ready-when=elected-any'), 'rollout-safe readiness by default');
    assert.equal(sidecar.livenessProbe.httpGet.path, '/healthz');
    assert.equal(sidecar.readinessProbe.httpGet.path, '/readyz');
    assert.equal(plain.securityContext.runAsNonRoot, true);
    assert.equal(sidecar.securityContext.readOnlyRootFilesystem, true);
    assert.equal(plain.volumes[0].name, 'leader');

    const native = find(render(['leasehold.nativeSidecar=true']), 'Deployment')[0]!.spec.template.spec;
    assert.equal(native.initContainers[0].name, 'leasehold');
    assert.equal(native.initContainers[0].restartPolicy, 'Always');
    assert.deepEqual(
      native.containers.map((c: { name: string }) => c.name),
      ['app'],
    );
    const auto = find(render(['leasehold.nativeSidecar=auto'], '1.28.0'), 'Deployment')[0]!.spec.template.spec;
    assert.equal(auto.initContainers, undefined, '"auto" is native only on 1.29+');
  });

  it('scopes the Role to the one Lease, with create as its own rule; optional parts follow values', () => {
    const role = find(render(['leasehold.lease=billing']), 'Role')[0]!;
    assert.deepEqual(JSON.parse(JSON.stringify(role.rules)), [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['billing'], verbs: ['get', 'update', 'list', 'watch'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    ]);
    assert.equal(find(render(), 'ServiceMonitor').length, 0);
    assert.equal(find(render(['metrics.serviceMonitor.enabled=true']), 'ServiceMonitor').length, 1);
    const onlyRbac = render(['app.enabled=false']);
    assert.equal(find(onlyRbac, 'Deployment').length, 0);
    assert.equal(find(onlyRbac, 'Role').length, 1);
    assert.deepEqual(find(onlyRbac, 'Service'), [], 'app.enabled=false renders only the ServiceAccount and RBAC (and the test pod)');
    const labelled = render(['podLabel.enabled=true']);
    assert.ok(find(labelled, 'Deployment')[0]!.spec.template.spec.containers[1].args.includes('--pod-label'));
    assert.deepEqual(JSON.parse(JSON.stringify(find(labelled, 'Role')[0]!.rules!.at(-1))), {
      apiGroups: [''],
      resources: ['pods'],
      verbs: ['get', 'list', 'patch'],
    });
    // Labels are for people and tools, never for routing: no Service selects them
    // (the leader Service: chart-leader-service.test.ts).
    assert.ok(
      find(labelled, 'Service').every((svc) => svc.spec.selector?.['leasehold.io/role'] === undefined),
      'a Service selects the role label',
    );
    const tuned = find(
      render([
        'imagePullSecrets[0].name=pull',
        'podLabels.team=billing',
        'leasehold.extraArgs[0]=--log-level=debug',
        'leasehold.extraEnv[0].name=EXTRA',
        'leasehold.extraEnv[0].value=debug',
        'leasehold.readinessProbe.periodSeconds=5',
        'leasehold.livenessProbe.failureThreshold=6',
      ]),
      'Deployment',
    )[0]!.spec.template;
    assert.deepEqual(JSON.parse(JSON.stringify(tuned.spec.imagePullSecrets)), [{ name: 'pull' }]);
    assert.equal(tuned.metadata.labels.team, 'billing');
    const side = tuned.spec.containers[1];
    assert.equal(side.args.at(-1), '--log-level=debug');
    assert.deepEqual(JSON.parse(JSON.stringify(side.env.at(-1))), { name: 'EXTRA', value: 'debug' });
    assert.equal(side.readinessProbe.periodSeconds, 5);
    assert.equal(side.livenessProbe.failureThreshold, 6);
    assert.equal(find(render(), 'Role')[0]!.rules!.length, 2, 'no pod access unless podLabel.enabled');
    const strict = find(render(['leasehold.readyWhen=leader']), 'Deployment')[0]!.spec.template.spec;
    assert.ok(strict.containers[1].args.includes('--ready-when=leader'));
  });

  it("an optional NetworkPolicy, off by default: the app's ports open to all, the sidecar's port only to the peers given; the API server takes it", async () => {
    assert.equal(find(render(), 'NetworkPolicy').length, 0, 'off by default');
    const monitoring = '[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]';
    const r = helm([
      'template',
      'demo',
      CHART,
      '--kube-version',
      '1.37.0',
      '--set',
      'networkPolicy.enabled=true',
      '--set-json',
      `networkPolicy.sidecarFrom=${monitoring}`,
    ]);
    assert.equal(r.code, 0, r.err);
    // Plain YAML: client-node's loader types the objects (a rule's `from` becomes `_from`).
    const docs = (loadAll(r.out) as (Record<string, unknown> | null)[]).filter((d): d is Record<string, unknown> => d !== null);
    const [policy] = find(docs, 'NetworkPolicy');
    assert.deepEqual(JSON.parse(JSON.stringify(policy!.spec)), {
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'leasehold', 'app.kubernetes.io/instance': 'demo' } },
      policyTypes: ['Ingress'],
      ingress: [{ ports: [{ port: 8080, protocol: 'TCP' }] }, { ports: [{ port: 4040, protocol: 'TCP' }], from: JSON.parse(monitoring) }],
    });
    const closed = find(render(['networkPolicy.enabled=true', 'app.ports=null']), 'NetworkPolicy')[0]!;
    assert.deepEqual(JSON.parse(JSON.stringify(closed.spec.ingress)), [], 'no app port, no peer: nothing from the network');
    // Taken by the API server as rendered.
    const ns = await freshNamespace('netpol');
    const manifests = join(dir.path, 'netpol.yaml');
    writeFileSync(manifests, r.out);
    kubectl(['apply', '-n', ns, '-f', manifests]);
    assert.match(kubectl(['get', 'networkpolicy', 'demo-leasehold', '-n', ns, '-o', 'jsonpath={.spec.ingress[1].from[0].namespaceSelector}']), /monitoring/);
    for (const [set, message] of [
      [['networkPolicy.enabled=true', 'app.enabled=false'], /networkPolicy\.enabled needs app\.enabled/],
      [['networkPolicy.sidecarFrom[0].pods=x'], /sidecarFrom/],
    ] as [string[], RegExp][]) {
      const bad = helm(['template', 'demo', CHART, '--kube-version', '1.37.0', ...set.flatMap((x) => ['--set', x])]);
      assert.notEqual(bad.code, 0, set.join(' '));
      assert.match(bad.err, message);
    }
  });

  it('rejects values of the wrong type or shape (values.schema.json)', () => {
    const cases: [string, RegExp][] = [
      ['replicaCount=three', /replicaCount/],
      ['leasehold.readyWhen=sometimes', /readyWhen/],
      ['leasehold.leaseDuration=15', /leaseDuration/],
      // A Lease stores whole seconds: the sidecar would refuse 1500ms at start, in a crash loop.
      ['leasehold.leaseDuration=1500ms', /leaseDuration/],
      // A flag the chart sets, given again: the sidecar would exit 2 on every start.
      ['leasehold.extraArgs[0]=--lease-duration=5s', /extraArgs/],
      ['leasehold.extraArgs[0]=--pod-label', /extraArgs/],
      ['leasehold.lease=Bad_Name', /lease/],
      ['leasehold.port=70000', /port/],
      ['unknownKey=1', /unknownKey|additional/i],
      // --set turns 1 into a number, which a container's env refuses: caught here, not at apply.
      ['leasehold.extraEnv[0].name=A,leasehold.extraEnv[0].value=1', /extraEnv.*value|value.*string/i],
    ];
    for (const [set, field] of cases) {
      const r = helm(['template', 'demo', CHART, '--set', set]);
      assert.notEqual(r.code, 0, `${set} should be rejected`);
      assert.match(r.err, field, `${set}: ${r.err}`);
    }
  });

  it("applies to a real API server; the chart's ServiceAccount token elects, renews, releases, and can do nothing more", { timeout: 120_000 }, async () => {
    const ns = await freshNamespace('chart');
    const manifests = join(dir.path, 'manifests.yaml');
    const r = helm(['template', 'demo', CHART, '--namespace', ns, '--kube-version', '1.37.0', '--set', 'leasehold.lease=chart-lease']);
    assert.equal(r.code, 0, r.err);
    writeFileSync(manifests, r.out);
    kubectl(['apply', '-n', ns, '-f', manifests]);
    const sa = 'demo-leasehold';
    assert.match(kubectl(['get', 'deployment', sa, '-n', ns, '-o', 'name']), /deployment.apps\/demo-leasehold/);

    // TokenRequest: a short-lived token of the chart's own ServiceAccount.
    const token = kubectl(['create', 'token', sa, '-n', ns, '--duration', '10m']).trim();
    const saConfig = join(dir.path, 'sa.kubeconfig');
    const server = /server: (.*)/.exec(kubectl(['config', 'view', '--minify', '-o', 'yaml']))![1]!.trim();
    writeFileSync(saConfig, kubeconfig(server, join(env().cpDir, 'ca.crt'), sa, token), { mode: 0o600 });

    const can = (verb: string, resource: string, extra: string[] = []) =>
      spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', saConfig, 'auth', 'can-i', verb, resource, '-n', ns, ...extra], {
        encoding: 'utf8',
      }).stdout.trim();
    assert.equal(can('get', 'leases/chart-lease'), 'yes');
    assert.equal(can('update', 'leases/chart-lease'), 'yes');
    assert.equal(can('create', 'leases'), 'yes');
    assert.equal(can('update', 'leases/someone-elses'), 'no');
    assert.equal(can('delete', 'leases/chart-lease'), 'no');
    assert.equal(can('patch', 'leases/chart-lease'), 'no');
    assert.equal(can('list', 'leases', ['--all-namespaces']), 'no');
    assert.equal(can('get', 'secrets'), 'no');
    assert.equal(can('get', 'pods'), 'no');
    assert.equal(can('list', 'namespaces'), 'no');

    const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
    const args = ['--backend', 'kubernetes', '--kubeconfig', saConfig, '--namespace', ns, '--lease', 'chart-lease'];
    const a = startSidecar(dir.path, 'chart-a', args, T);
    const b = startSidecar(dir.path, 'chart-b', args, T);
    cands.push(a, b);
    const first = await waitFor('a leader under the chart RBAC', () => validLeaders([a, b])[0], 20_000);
    const renewed = rawLease(ns, 'chart-lease').spec.renewTime;
    await waitFor('a renewal', () => rawLease(ns, 'chart-lease').spec.renewTime !== renewed, 5_000);
    const t0 = Date.now();
    first.c.proc.kill('SIGTERM');
    const next = await waitFor('the other to take over after the release', () => validLeaders([a, b]).find((l) => l.c !== first.c), 10_000);
    assert.ok(next.token > first.token);
    assert.ok(Date.now() - t0 < 400 + 1_500, 'the watch works under the chart RBAC: the release is taken over at once');
    assert.equal((await first.c.proc.exited).code, 0);
    assert.doesNotMatch(first.c.proc.stderr() + next.c.proc.stderr(), /LEASEHOLD_ERR_FORBIDDEN|forbidden/i);
  });
});

describe('--pod-label on a real API server', () => {
  const dir = scratchDir(() => cands);
  const cands: Candidate[] = [];

  it('labels the leader pod leader and the others follower, and swaps on a handoff', { timeout: 60_000 }, async () => {
    const ns = await freshNamespace('label');
    // No controller-manager here: create the default ServiceAccount the Pod admission needs.
    kubectl(['create', 'serviceaccount', 'default', '-n', ns]);
    for (const pod of ['pod-a', 'pod-b']) kubectl(['run', pod, '-n', ns, '--image', 'busybox:1.36', '--restart', 'Never', '--command', '--', 'sleep', '3600']);
    const role = (pod: string) => kubectl(['get', 'pod', pod, '-n', ns, '-o', 'jsonpath={.metadata.labels.leasehold\\.io/role}']).trim();
    const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
    const args = ['--backend', 'kubernetes', '--kubeconfig', env().admin, '--namespace', ns, '--lease', 'labelled', '--pod-label'];
    const a = startSidecar(dir.path, 'pod-a', args, T);
    const b = startSidecar(dir.path, 'pod-b', args, T);
    cands.push(a, b);
    const first = await waitFor('a leader', () => validLeaders([a, b])[0], 20_000);
    const other = first.c === a ? 'pod-b' : 'pod-a';
    await waitFor('labels', () => role(first.c.id) === 'leader' && role(other) === 'follower', 10_000, 200);
    first.c.proc.kill('SIGTERM');
    await first.c.proc.exited;
    assert.equal(role(first.c.id), 'follower', 'relabelled follower before exiting');
    await waitFor('the new leader labelled', () => role(other) === 'leader', 10_000, 200);
  });
});
