/**
 * The operator fencing Kubernetes objects on a pod's request (leasehold.io/fence-objects, the
 * operator chart's fencing.objectPolicies; docs/fencing.md, "Kubernetes objects"), against a real
 * API server: the chart's policy and RBAC installed, the operator run as the chart's
 * ServiceAccount (so with the chart's rights only) and the flags it passes, a pod asking for
 * configmaps. The binding it makes is scoped to the pod's namespace, its Lease's label
 * and the kinds named; the API server then refuses a labelled ConfigMap written with a stale token
 * and accepts the current one, and leaves alone an unlabelled one, one in another namespace and a
 * kind not named. The pod deleted, the binding goes, and the stale write lands again.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, load, loadAll } from 'js-yaml';
import { REPO, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { buildTool } from '../support/build-tool.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { kubectlIn, startOperatorProcess, stopOperators, webhookCaBundle, webhookConfiguration } from '../support/operator-process.js';
import { freePort } from '../support/control-plane.js';
import { fenceBindingName } from '../../src/operator/fence-objects.js';
import { installationOf } from '../../src/operator/rbac.js';

const CHART = join(REPO, 'deploy/helm/leasehold-operator');
/** The release: its objects are cluster-scoped too (ClusterRole, webhook configuration, policy), so named per run. */
const RELEASE = `fence${process.pid}`;
const FULLNAME = `${RELEASE}-leasehold-operator`;
const WEBHOOK = FULLNAME;
const LEASE = 'fenced';

type Doc = { kind: string; metadata: { name: string; namespace?: string } };

/** What the API server answered a kubectl write: accepted, or its error text. */
function write(manifest: Record<string, unknown>): { ok: boolean; out: string } {
  try {
    return { ok: true, out: kubectlIn(['create', '-f', '-', '-o', 'name'], JSON.stringify(manifest)) };
  } catch (err) {
    return { ok: false, out: String((err as { stderr?: Buffer }).stderr ?? err) };
  }
}

const object = (kind: 'ConfigMap' | 'Secret', ns: string, name: string, token: number, labelled = true) => ({
  apiVersion: 'v1',
  kind,
  metadata: {
    name,
    namespace: ns,
    labels: labelled ? { 'leasehold.io/fenced-by': LEASE } : {},
    annotations: { 'leasehold.io/fencing-token': String(token) },
  },
  data: {},
});

describe('the operator fences Kubernetes objects for a pod that asks (leasehold.io/fence-objects)', () => {
  const started: Proc[] = [];
  const dir = scratchDir(() => started, 'leasehold-op-fence-');
  const cleanups: (() => void)[] = [];
  let ops = '';
  let app = '';
  let other = '';
  let policy = '';

  before(async () => {
    ops = await freshNamespace('opf');
    app = await freshNamespace('opfapp');
    other = await freshNamespace('opfother');
    for (const ns of [app, other]) kubectl(['create', 'serviceaccount', 'default', '-n', ns]);

    // The policy exactly as the chart renders it with the value on.
    const helm = buildTool('build-helm.sh');
    const home = join(env().cpDir, 'helm-op-fence');
    const r = spawnSync(
      helm,
      [
        'template',
        RELEASE,
        CHART,
        '--namespace',
        ops,
        '--kube-version',
        '1.37.0',
        '--set',
        'fencing.objectPolicies.enabled=true',
        '--set',
        'injection.mode=webhook',
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home },
      },
    );
    assert.equal(r.status, 0, r.stderr);
    // Less the sidecar guard (sidecar-guard.yaml, in every mode): this test is the fencing policy's.
    const docs = (loadAll(r.stdout) as (Doc | null)[]).filter((d): d is Doc => d !== null && !d.metadata.name.endsWith('-sidecar-guard'));
    const policies = docs.filter((d) => d.kind === 'ValidatingAdmissionPolicy');
    assert.equal(policies.length, 1, 'one policy, and no binding of the chart’s own');
    assert.ok(!docs.some((d) => d.kind === 'ValidatingAdmissionPolicyBinding'));
    policy = policies[0]!.metadata.name;
    // The policy and the chart's RBAC, as helm would install them; the operator runs on this host.
    const kinds = ['ValidatingAdmissionPolicy', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
    const file = join(dir.path, 'installed.json');
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs.filter((d) => kinds.includes(d.kind)) }));
    kubectl(['apply', '-f', file]);
    cleanups.push(() => kubectl(['delete', 'validatingadmissionpolicy', policy, '--ignore-not-found']));
    cleanups.push(() => kubectl(['delete', 'clusterrole,clusterrolebinding', FULLNAME, '--ignore-not-found']));
    // A kubeconfig of the chart's ServiceAccount: the admin's server and CA, that account's token.
    const token = kubectl(['create', 'token', FULLNAME, '-n', ops, '--duration', '1h']).trim();
    const config = load(readFileSync(env().admin, 'utf8')) as { users: { user: Record<string, unknown> }[] };
    for (const u of config.users) u.user = { token };
    const asOperator = join(dir.path, 'operator.kubeconfig');
    writeFileSync(asOperator, dump(config), { mode: 0o600 });
    // The operator's flag is what the chart passes it.
    const deployment = r.stdout.match(/--fence-objects-policy=(\S+)/);
    assert.equal(deployment?.[1], policy);

    const port = await freePort();
    kubectlIn(['create', '-f', '-'], JSON.stringify(webhookConfiguration({ name: WEBHOOK, port, failurePolicy: 'Fail', namespaces: [app, other] })));
    started.push(
      startOperatorProcess({
        namespace: ops,
        identity: 'op-fence',
        port,
        webhook: WEBHOOK,
        // The chart's rights only, so the names they allow: its Secrets, its Lease, its webhook configuration.
        kubeconfig: asOperator,
        flags: [
          ...['--lease', FULLNAME, '--secret', `${FULLNAME}-tls`, '--mark-secret', `${FULLNAME}-mark`],
          ...['--extra-host', '127.0.0.1', '--resync', '2s', '--fence-objects-policy', policy],
        ],
      }),
    );
    await waitFor('the caBundle written', () => webhookCaBundle(WEBHOOK) !== '', 30_000, 100);
    // The API server reads webhook configurations through its cache: wait until a labelled pod is injected.
    let n = 0;
    await waitFor(
      'a first injection',
      () => {
        const probe = {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `probe-${n++}`, namespace: other, labels: { 'leasehold.io/inject': 'true' } },
          spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] },
        };
        return (
          write(probe).ok &&
          (
            JSON.parse(kubectl(['get', 'pod', probe.metadata.name, '-n', other, '-o', 'json'])) as { spec: { containers: { name: string }[] } }
          ).spec.containers.some((c) => c.name === 'leasehold')
        );
      },
      30_000,
      200,
    );
  });

  after(() => {
    stopOperators(started, WEBHOOK);
    for (const c of cleanups) {
      try {
        c();
      } catch {
        // best effort: the rest still runs
      }
    }
    for (const ns of [ops, app, other]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it("makes a binding scoped to the pod's namespace, Lease and kinds; the API server fences with it; gone with the pod", { timeout: 180_000 }, async () => {
    const binding = fenceBindingName(installationOf(ops, FULLNAME), app, LEASE);
    cleanups.push(() => kubectl(['delete', 'validatingadmissionpolicybinding', binding, '--ignore-not-found']));
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'writer',
        namespace: app,
        labels: { 'leasehold.io/inject': 'true' },
        annotations: { 'leasehold.io/lease': LEASE, 'leasehold.io/fence-objects': 'configmaps' },
      },
      spec: { containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
    };
    const created = write(pod);
    assert.ok(created.ok, created.out);
    const injected = JSON.parse(kubectl(['get', 'pod', 'writer', '-n', app, '-o', 'json'])) as { spec: { containers: { name: string }[] } };
    assert.ok(
      injected.spec.containers.some((c) => c.name === 'leasehold'),
      'injected',
    );

    type Binding = { spec: { policyName: string; paramRef: unknown; matchResources: Record<string, unknown> } };
    const made = await waitFor(
      'the binding',
      () => {
        try {
          return JSON.parse(kubectl(['get', 'validatingadmissionpolicybinding', binding, '-o', 'json'])) as Binding;
        } catch {
          return undefined;
        }
      },
      30_000,
      200,
    );
    assert.equal(made.spec.policyName, policy);
    assert.deepEqual(made.spec.paramRef, { name: LEASE, namespace: app, parameterNotFoundAction: 'Deny' });
    assert.deepEqual(made.spec.matchResources.namespaceSelector, { matchLabels: { 'kubernetes.io/metadata.name': app } });
    assert.deepEqual(made.spec.matchResources.objectSelector, { matchLabels: { 'leasehold.io/fenced-by': LEASE } });
    assert.deepEqual(made.spec.matchResources.resourceRules, [
      { apiGroups: [''], apiVersions: ['*'], resources: ['configmaps'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: 'Namespaced' },
    ]);

    // The Lease the operator made for the pod, held as a sidecar would hold it at token 5 (no
    // kubelet runs the sidecar here).
    kubectl(['patch', 'lease', LEASE, '-n', app, '--type=merge', '-p', JSON.stringify({ spec: { holderIdentity: 'writer', leaseTransitions: 5 } })]);

    // Waiting for the refusal is waiting for the API server to load the binding and see the Lease.
    let probes = 0;
    const stale = await waitFor(
      'a stale write refused',
      () => {
        // A new name each time: a write the policy did not see yet lands and stays.
        const r = write(object('ConfigMap', app, `stale-${probes++}`, 4));
        return !r.ok && r;
      },
      30_000,
      200,
    );
    assert.match(stale.out, /Forbidden|denied/);
    assert.match(stale.out, /the leasehold\.io\/fencing-token annotation is 4, but the current fencing token of Lease fenced is 5/);
    assert.ok(write(object('ConfigMap', app, 'fresh', 5)).ok, 'the current token accepted');
    assert.ok(write(object('ConfigMap', app, 'unlabelled', 4, false)).ok, 'an unlabelled object is not fenced');
    assert.ok(write(object('ConfigMap', other, 'elsewhere', 4)).ok, 'another namespace is not fenced');
    assert.ok(write(object('Secret', app, 'not-named', 4)).ok, 'a kind the pod did not name is not fenced');

    // The pod gone, the binding goes with the next pass, and nothing is fenced any more.
    kubectl(['delete', 'pod', 'writer', '-n', app, '--grace-period=0', '--force']);
    await waitFor(
      'the binding removed',
      () => {
        try {
          kubectl(['get', 'validatingadmissionpolicybinding', binding]);
          return false;
        } catch {
          return true;
        }
      },
      30_000,
      200,
    );
    await waitFor('a stale write accepted again', () => write(object('ConfigMap', app, `after-${probes++}`, 4)).ok, 30_000, 200);
  });
});
