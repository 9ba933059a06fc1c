/**
 * Kubernetes objects fenced by the API server (docs/fencing.md, "Kubernetes objects"): the
 * chart's ValidatingAdmissionPolicy takes the Lease as its parameter and refuses a write to a
 * labelled ConfigMap unless it carries the Lease's current token. Here a real sidecar leads and
 * its app writes; the sidecar is frozen past its lease, another takes over and writes; the
 * frozen one resumes and its app's late writes, with its old token, are refused by the API
 * server itself, not by anything in leasehold. The writers are a user with RBAC on ConfigMaps
 * only: the API server reads the Lease for the policy, not the writer.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiException, CoreV1Api, KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { REPO, waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { admin, backendArgs, env, freshNamespace, kubectl, rawLease } from '../support/kube.js';
import { buildTool } from '../support/build-tool.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const CONFIGMAPS = { apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] };
let helmBin = '';

function helm(args: string[], valuesFile: string): { code: number; out: string; err: string } {
  const home = join(env().cpDir, 'helm-fencing');
  const r = spawnSync(helmBin, [...args, '-f', valuesFile], {
    encoding: 'utf8',
    env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home },
  });
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr };
}

/** The chart rendered in `namespace` with these values (written to a file: lists of maps). */
function template(dir: string, namespace: string, values: Record<string, unknown>, kubeVersion = '1.37.0') {
  const file = join(dir, `values-${namespace}.json`);
  writeFileSync(file, JSON.stringify(values));
  return helm(['template', 'demo', CHART, '--namespace', namespace, '--kube-version', kubeVersion], file);
}

type Doc = { kind: string; metadata: { name: string }; spec: Record<string, unknown> };
const docs = (yaml: string) => (loadAll(yaml) as (Doc | null)[]).filter((d): d is Doc => d !== null);

/** A writer with RBAC on this namespace's ConfigMaps and nothing else (no Leases). */
async function configMapWriter(namespace: string): Promise<CoreV1Api> {
  await admin.rbac().createNamespacedRole({
    namespace,
    body: { metadata: { name: 'writer' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'update', 'delete'] }] },
  });
  await admin.rbac().createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'writer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'writer' },
      subjects: [{ kind: 'User', name: env().restrictedUser, apiGroup: 'rbac.authorization.k8s.io' }],
    },
  });
  const kc = new KubeConfig();
  kc.loadFromFile(env().restricted);
  return kc.makeApiClient(CoreV1Api);
}

/** What the API server answered a write: its status code and message (201/200: accepted). */
async function answer(write: () => Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await write();
    return { code: 200, message: '' };
  } catch (e) {
    if (!(e instanceof ApiException)) throw e;
    const body = typeof e.body === 'string' ? (JSON.parse(e.body) as { message?: string }) : (e.body as { message?: string });
    return { code: e.code, message: body?.message ?? String(e.body) };
  }
}

describe('Kubernetes objects fenced by the API server with the Lease as the policy parameter', () => {
  const dir = scratchDir(() => cands, 'leasehold-fenced-');
  const cands: Candidate[] = [];
  const cleanups: (() => void)[] = [];
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });
  after(() => {
    // Cluster-scoped: a fresh namespace does not take them away.
    for (const c of cleanups) c();
  });

  it("refuses a frozen former leader's late writes; the new leader's data stays", { timeout: 120_000 }, async () => {
    const ns = await freshNamespace('fenced');
    const lease = 'fenced';
    const rendered = template(dir.path, ns, { app: { enabled: false }, leasehold: { lease }, fencing: { resources: [CONFIGMAPS] } });
    assert.equal(rendered.code, 0, rendered.err);
    const fencing = docs(rendered.out).filter((d) => d.kind.startsWith('ValidatingAdmissionPolicy'));
    assert.deepEqual(
      fencing.map((d) => d.kind),
      ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'],
    );
    const manifest = join(dir.path, 'fencing.json');
    writeFileSync(manifest, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: fencing }));
    kubectl(['apply', '-f', manifest]);
    const names = fencing.map((d) => `${d.kind.toLowerCase()}/${d.metadata.name}`);
    cleanups.push(() => kubectl(['delete', ...names, '--ignore-not-found']));

    const api = await configMapWriter(ns);
    const configMap = (name: string, holder: string, token: number | string | null, labelled = true): V1ConfigMap => ({
      metadata: {
        name,
        labels: labelled ? { 'leasehold.io/fenced-by': lease } : {},
        annotations: token === null ? {} : { 'leasehold.io/fencing-token': String(token) },
      },
      data: { holder },
    });
    const create = (body: V1ConfigMap) => answer(() => api.createNamespacedConfigMap({ namespace: ns, body }));
    const replace = (body: V1ConfigMap) => answer(() => api.replaceNamespacedConfigMap({ namespace: ns, name: body.metadata!.name!, body }));
    const stored = () => api.readNamespacedConfigMap({ namespace: ns, name: 'data' });
    const refusedBecause = (r: { code: number; message: string }, why: RegExp) => {
      assert.equal(r.code, 403, `refused with 403 Forbidden: ${JSON.stringify(r)}`);
      assert.match(r.message, why);
    };

    // No Lease yet: the binding's parameterNotFoundAction refuses every write of a fenced
    // object. Waiting for that refusal is also waiting for the API server to load the policy.
    let probes = 0;
    const noLease = await waitFor(
      'the policy to refuse a write while its Lease does not exist',
      async () => {
        // A new name each time: a write the policy did not see yet lands and stays.
        const r = await create(configMap(`probe-${probes++}`, 'nobody', 1));
        return r.code !== 200 && r;
      },
      30_000,
      200,
    );
    console.log(`no Lease: ${noLease.code} ${noLease.message}`);
    // The API server answers 422 here: "failed to configure binding: no params found for
    // policy binding with `Deny` parameterNotFoundAction".
    assert.equal(noLease.code, 422, JSON.stringify(noLease));
    assert.match(noLease.message, /no params found for policy binding with `Deny` parameterNotFoundAction/);

    const a = startSidecar(dir.path, 'fence-a', backendArgs(ns, lease), T);
    cands.push(a);
    const first = await waitFor('a to lead', () => validLeaders([a])[0], 20_000);
    assert.equal(rawLease(ns, lease).spec.leaseTransitions, first.token, "the token is the Lease's leaseTransitions");
    const oldToken = first.token; // what a's app read while it led, and will write with when it resumes

    refusedBecause(await create(configMap('data', 'a', null)), /annotation is missing, but the current fencing token of Lease fenced is \d+/);
    refusedBecause(
      await create(configMap('data', 'a', oldToken + 1)),
      new RegExp(`annotation is ${oldToken + 1}, but the current fencing token of Lease fenced is ${oldToken}`),
    );
    refusedBecause(await create(configMap('data', 'a', oldToken - 1)), new RegExp(`annotation is ${oldToken - 1}, but`));
    refusedBecause(await create(configMap('data', 'a', `0${oldToken}`)), new RegExp(`annotation is 0${oldToken}, but`));
    refusedBecause(await create(configMap('data', 'a', 'x')), /annotation is not a decimal number, but/);
    // The current token is accepted; a's app keeps the version it wrote, for a delete later.
    const aWrite = await api.createNamespacedConfigMap({ namespace: ns, body: configMap('data', 'a', oldToken) });
    assert.equal((await create(configMap('other', 'a', oldToken))).code, 200);
    // Unlabelled objects are not fenced.
    assert.equal((await create(configMap('free', 'anyone', null, false))).code, 200);

    // a freezes past its lease; b takes over with the next token and writes.
    const b = startSidecar(dir.path, 'fence-b', backendArgs(ns, lease), T);
    cands.push(b);
    a.proc.kill('SIGSTOP');
    const next = await waitFor('b to lead', () => validLeaders([b])[0], 20_000);
    assert.ok(next.token > oldToken, `b's token ${next.token} is above a's ${oldToken}`);
    await waitFor(
      "the API server's view of the Lease to reach b's token",
      async () => (await replace(configMap('data', 'b', next.token))).code === 200,
      10_000,
      100,
    );
    const bWrite = await stored();
    assert.equal(bWrite.data?.holder, 'b');

    // a resumes; its app writes what it was writing, with the token it had.
    a.proc.kill('SIGCONT');
    const late = await replace(configMap('data', 'a', oldToken));
    console.log(`a's late write: ${late.code} ${late.message}`);
    refusedBecause(late, new RegExp(`annotation is ${oldToken}, but the current fencing token of Lease fenced is ${next.token}`));
    // Dropping the label in the same write does not take the object out of the fence.
    refusedBecause(await replace(configMap('data', 'a', oldToken, false)), /current fencing token of Lease fenced/);
    refusedBecause(await replace(configMap('data', 'a', null, false)), /annotation is missing/);
    // A delete carries no token: the object as stored must carry the current one. b has not
    // written "other", which still holds a's stamp, so a's delete of it is refused ...
    refusedBecause(
      await answer(() => api.deleteNamespacedConfigMap({ namespace: ns, name: 'other' })),
      new RegExp(`annotation is ${oldToken} on the object to delete, but the current fencing token of Lease fenced is ${next.token}`),
    );
    // ... while "data" holds b's stamp: only a precondition on the version a last wrote stops
    // a's delete there (what docs/fencing.md tells a deleting writer to send).
    const conflict = await answer(() =>
      api.deleteNamespacedConfigMap({ namespace: ns, name: 'data', body: { preconditions: { resourceVersion: aWrite.metadata!.resourceVersion! } } }),
    );
    assert.equal(conflict.code, 409, JSON.stringify(conflict));

    const after = await stored();
    assert.equal(after.data?.holder, 'b', "the ConfigMap holds the new leader's data");
    assert.equal(after.metadata?.annotations?.['leasehold.io/fencing-token'], String(next.token));
    assert.equal(after.metadata?.resourceVersion, bWrite.metadata?.resourceVersion, 'nothing of a landed');

    // The Lease released (b stops, a gone first so it cannot take the release): nobody holds a
    // current token, every write is refused.
    a.proc.kill('SIGKILL');
    await a.proc.exited;
    b.proc.kill('SIGTERM');
    assert.equal((await b.proc.exited).code, 0);
    await waitFor('the release', () => rawLease(ns, lease).spec.holderIdentity === '', 10_000);
    await waitFor(
      "the API server's view of the released Lease",
      async () => {
        const r = await replace(configMap('data', 'b', next.token));
        return r.code !== 200 && r;
      },
      10_000,
      100,
    ).then((r) => refusedBecause(r, /Lease fenced has no holder/));
    // Deletes without a current token: refused to the writer, accepted from the namespace
    // controller (impersonated: this control plane runs no controller manager), which empties
    // a namespace being deleted.
    const nsController = ['--as', 'system:serviceaccount:kube-system:namespace-controller'];
    refusedBecause(await answer(() => api.deleteNamespacedConfigMap({ namespace: ns, name: 'other' })), /Lease fenced has no holder/);
    kubectl(['delete', 'configmap', 'other', '-n', ns, ...nsController]);
    assert.equal((await answer(() => api.readNamespacedConfigMap({ namespace: ns, name: 'other' }))).code, 404, "the namespace controller's delete landed");

    // The history lost (docs/fencing.md, "When the history is lost"): a Lease whose token went
    // back to a's. The object holds b's later token, checked in the write's own
    // compare-and-swap, so a's token is still refused, whatever the Lease says.
    kubectl(['patch', 'lease', lease, '-n', ns, '--type', 'merge', '-p', JSON.stringify({ spec: { holderIdentity: 'fence-a', leaseTransitions: oldToken } })]);
    await waitFor(
      'the refusal of a token below the one the object holds',
      async () => {
        const r = await replace(configMap('data', 'a', oldToken));
        assert.notEqual(r.code, 200, 'a token below the stored one must never land');
        return /below the token/.test(r.message) && r;
      },
      10_000,
      100,
    ).then((r) => refusedBecause(r, new RegExp(`annotation is ${oldToken}, below the token ${next.token} of the write the object holds`)));

    // The Lease deleted: parameterNotFoundAction Deny refuses again.
    kubectl(['delete', 'lease', lease, '-n', ns]);
    await waitFor(
      'the refusal of a write once the Lease is gone',
      async () => /no params found for policy binding/.test((await replace(configMap('data', 'b', next.token))).message),
      10_000,
      100,
    );
    assert.equal((await stored()).data?.holder, 'b');
    // With the Lease gone, the API server refuses before the policy's match conditions are
    // evaluated: even the namespace controller cannot delete (docs/fencing.md, "Deletes").
    const stuck = spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'delete', 'configmap', 'data', '-n', ns, ...nsController], {
      encoding: 'utf8',
    });
    assert.notEqual(stuck.status, 0);
    assert.match(stuck.stderr, /no params found for policy binding with `Deny` parameterNotFoundAction/);
  });

  it('the chart renders the policy and binding only when asked, for the kinds named, and refuses what it cannot fence', () => {
    const none = template(dir.path, 'apps', {});
    assert.equal(none.code, 0, none.err);
    assert.equal(docs(none.out).filter((d) => d.kind.startsWith('ValidatingAdmissionPolicy')).length, 0, 'nothing cluster-scoped by default');

    const deployments = { apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] };
    const r = template(dir.path, 'apps', { leasehold: { lease: 'billing' }, fencing: { resources: [CONFIGMAPS, deployments] } });
    assert.equal(r.code, 0, r.err);
    const [policy, binding] = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].map((k) => docs(r.out).find((d) => d.kind === k)!);
    assert.equal(policy!.metadata.name, 'demo-leasehold.apps.fencing.leasehold.io', 'the namespace in the name: two releases never share one');
    assert.deepEqual(policy!.spec.paramKind, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' });
    assert.deepEqual(policy!.spec.matchConstraints, {
      resourceRules: [CONFIGMAPS, deployments].map((k) => ({ ...k, operations: ['CREATE', 'UPDATE', 'DELETE'] })),
    });
    assert.equal(policy!.spec.failurePolicy, 'Fail');
    assert.deepEqual(binding!.spec, {
      policyName: policy!.metadata.name,
      validationActions: ['Deny'],
      paramRef: { name: 'billing', parameterNotFoundAction: 'Deny' },
      matchResources: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'apps' } },
        objectSelector: { matchLabels: { 'leasehold.io/fenced-by': 'billing' } },
      },
    });

    const refused: [Record<string, unknown>, RegExp][] = [
      [{ shards: { count: 4 }, fencing: { resources: [CONFIGMAPS] } }, /fencing\.resources needs leader election: in shard mode/],
      [{ leasehold: { lease: 'l'.repeat(64) }, fencing: { resources: [CONFIGMAPS] } }, /the Lease name "l{64}" is longer than 63 characters/],
      [{ fencing: { resources: [{ apiGroups: [''], apiVersions: ['v1'] }] } }, /at '\/fencing\/resources\/0': missing property 'resources'/],
      [{ fencing: { resources: [{ ...CONFIGMAPS, resources: [] }] } }, /at '\/fencing\/resources\/0\/resources'/],
    ];
    for (const [values, why] of refused) {
      const bad = template(dir.path, 'apps', values);
      assert.notEqual(bad.code, 0, `rendered ${JSON.stringify(values)}`);
      assert.match(bad.err, why);
    }
    const old = template(dir.path, 'apps', { fencing: { resources: [CONFIGMAPS] } }, '1.29.9');
    assert.notEqual(old.code, 0, 'rendered for 1.29');
    assert.match(old.err, /fencing\.resources needs Kubernetes 1\.30 or later .*this cluster is v1\.29\.9/);
  });
});
