/**
 * The operator chart's injection.mode (issue 44): what each mode renders, `auto` with and without
 * the MutatingAdmissionPolicy API (helm template --api-versions), the operator's arguments as the
 * CLI itself resolves them, and policy mode's label guard on the real API server.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { REPO, waitFor } from '../support/cli.js';
import { admin, env, freshNamespace } from '../support/kube.js';
import { buildTool } from '../support/build-tool.js';
import { parseFlags } from '../../cmd/cli-parser.js';
import { OPERATOR_OPTIONS, WEBHOOK_ONLY, resolveOperator } from '../../cmd/operator-command.js';
import { ANNOTATION, INJECTED_LEASE, INJECTED_MARK, INJECTED_MAX_MEMBERS, INJECTED_POD_LABEL, INJECTED_SHARDS } from '../../src/operator/annotations.js';

const CHART = join(REPO, 'deploy/helm/leasehold-operator');
const POLICY_API = 'admissionregistration.k8s.io/v1/MutatingAdmissionPolicy';
let helmBin = '';
const helmHome = mkdtempSync(join(tmpdir(), 'lh-chart-mode-'));
after(() => rmSync(helmHome, { recursive: true, force: true }));

/* eslint-disable @typescript-eslint/no-explicit-any */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return */
interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: Record<string, any>;
  rules?: any[];
  webhooks?: { objectSelector: unknown; namespaceSelector: unknown }[];
}

function template(set: string[], apiVersions: string[] = [], kubeVersion = '1.36.0'): { code: number; out: string; err: string } {
  const r = spawnSync(
    helmBin,
    [
      'template',
      'ops',
      CHART,
      '--namespace',
      'leasehold-system',
      '--kube-version',
      kubeVersion,
      ...apiVersions.flatMap((v) => ['--api-versions', v]),
      ...set.flatMap((s) => ['--set', s]),
    ],
    {
      encoding: 'utf8',
      env: { ...process.env, HELM_CACHE_HOME: join(helmHome, 'c'), HELM_CONFIG_HOME: join(helmHome, 'g'), HELM_DATA_HOME: join(helmHome, 'd') },
    },
  );
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr };
}

function render(set: string[] = [], apiVersions: string[] = [], kubeVersion?: string): Obj[] {
  const r = template(set, apiVersions, kubeVersion);
  assert.equal(r.code, 0, r.err);
  return (yaml.loadAll(r.out) as (Obj | null)[]).filter((d): d is Obj => d !== null);
}

const kinds = (docs: Obj[]) => docs.map((d) => d.kind).sort();
const container = (docs: Obj[]) => docs.find((d) => d.kind === 'Deployment')!.spec.template.spec.containers[0];
const args = (docs: Obj[]) => container(docs).args as string[];
/** The operator's arguments as `leasehold operator` resolves them: the chart never passes what the CLI refuses. */
const resolved = (docs: Obj[]) => resolveOperator(parseFlags(OPERATOR_OPTIONS, args(docs).slice(1), {}, { command: 'operator' }), { POD_NAME: 'ops-0' });

const WEBHOOK_KINDS = [
  'ClusterRole',
  'ClusterRoleBinding',
  'Deployment',
  'MutatingWebhookConfiguration',
  'PodDisruptionBudget',
  'Role',
  'RoleBinding',
  'Service',
  'ServiceAccount',
  // The sidecar guard, the same in both modes (sidecar-guard.yaml).
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
];
/** Policy mode: the mutating policy, and four validating ones (refusals, warnings, the label guard, the sidecar guard), each with its binding. */
const POLICY_KINDS = [
  'ClusterRole',
  'ClusterRoleBinding',
  'Deployment',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'PodDisruptionBudget',
  'ServiceAccount',
  ...Array<string>(4).fill('ValidatingAdmissionPolicy'),
  ...Array<string>(4).fill('ValidatingAdmissionPolicyBinding'),
];

describe("the operator chart's injection.mode", () => {
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });

  it('auto is the default: the webhook without the MutatingAdmissionPolicy API (helm template asks no cluster), the policies with it', () => {
    const values = yaml.load(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { injection: { mode: string } };
    assert.equal(values.injection.mode, 'auto');
    const without = render();
    assert.deepEqual(kinds(without), WEBHOOK_KINDS);
    assert.equal(resolved(without).mode, 'webhook');
    const withApi = render([], [POLICY_API]);
    assert.deepEqual(kinds(withApi), POLICY_KINDS);
    assert.equal(resolved(withApi).mode, 'policy');
    // A values file that sets no mode at all (injection: {}) is auto too.
    assert.deepEqual(kinds(render(['injection.mode=null'], [POLICY_API])), POLICY_KINDS);
  });

  it('webhook: the webhook, its Service, its Secrets Role; the operator in webhook mode, even where the policy API is served', () => {
    for (const docs of [render(['injection.mode=webhook']), render(['injection.mode=webhook'], [POLICY_API])]) {
      assert.deepEqual(kinds(docs), WEBHOOK_KINDS);
      assert.equal(resolved(docs).mode, 'webhook');
      assert.ok(!args(docs).some((a) => a.startsWith('--injection-mode')));
      assert.ok(args(docs).includes('--secret=ops-leasehold-operator-tls') && args(docs).includes('--mark-secret=ops-leasehold-operator-mark'));
      assert.deepEqual(container(docs).ports, [{ name: 'webhook', containerPort: 8443, protocol: 'TCP' }]);
      assert.equal(container(docs).readinessProbe.httpGet.scheme, 'HTTPS');
      assert.ok(docs.find((d) => d.kind === 'ClusterRole')!.rules!.some((r) => r.resources.includes('mutatingwebhookconfigurations')));
    }
  });

  it('policy: no webhook configuration, TLS or mark Secret, Service or webhook port; the operator in policy mode with no webhook-only flag', () => {
    const docs = render(['injection.mode=policy']);
    assert.deepEqual(kinds(docs), POLICY_KINDS);
    const s = resolved(docs);
    assert.equal(s.mode, 'policy');
    assert.deepEqual(s.listen, { host: '0.0.0.0', port: 8080 });
    for (const flag of WEBHOOK_ONLY) assert.ok(!args(docs).some((a) => a.startsWith(`--${flag}=`)), `--${flag} is not passed`);
    assert.deepEqual(container(docs).ports, [{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    for (const probe of ['readinessProbe', 'livenessProbe'])
      assert.deepEqual(container(docs)[probe].httpGet, { path: '/healthz', port: 'http', scheme: 'HTTP' });
    const role = docs.find((d) => d.kind === 'ClusterRole')!;
    assert.ok(!role.rules!.some((r) => r.resources.includes('mutatingwebhookconfigurations') || r.resources.includes('secrets')));
    assert.ok(!docs.some((d) => d.apiVersion.startsWith('cert-manager.io/')));
  });

  it('auto: policy when the API server serves MutatingAdmissionPolicy in admissionregistration.k8s.io/v1, else the webhook', () => {
    const without = render(['injection.mode=auto']);
    assert.deepEqual(kinds(without), WEBHOOK_KINDS);
    assert.equal(resolved(without).mode, 'webhook');
    // The v1beta1 API (Kubernetes 1.34 and 1.35, off by default) is not enough.
    assert.deepEqual(kinds(render(['injection.mode=auto'], ['admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy'])), WEBHOOK_KINDS);
    const withApi = render(['injection.mode=auto'], [POLICY_API]);
    assert.deepEqual(kinds(withApi), POLICY_KINDS);
    assert.equal(resolved(withApi).mode, 'policy');
  });

  it('refuses a mode it does not have, and cert-manager where nothing is served', () => {
    const bad = template(['injection.mode=mutating']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /at '\/injection\/mode'/);
    for (const [set, api] of [
      [['injection.mode=policy'], []],
      [['injection.mode=auto'], [POLICY_API]],
      [[], [POLICY_API]],
    ] as const) {
      const r = template([...set, 'certManager.enabled=true'], [...api]);
      assert.notEqual(r.code, 0, set.join(' '));
      assert.match(
        r.err,
        set.length === 1 && set[0] === 'injection.mode=policy'
          ? /certManager\.enabled is true, but injection\.mode "policy" installs the MutatingAdmissionPolicy: no webhook, so no certificate/
          : // Where the mode was not set, the message says why auto picked the policy.
            /certManager\.enabled is true, but injection\.mode "auto" installs the MutatingAdmissionPolicy \(auto, the default, picks it where the API server serves admissionregistration\.k8s\.io\/v1 MutatingAdmissionPolicy\): no webhook, so no certificate/,
      );
    }
    assert.equal(template(['injection.mode=auto', 'certManager.enabled=true']).code, 0, 'auto without the API is the webhook, which cert-manager serves');
  });

  it("the label guard: UPDATEs of this install's labelled pods, outside the excluded namespaces, every annotation the injector reads or writes", () => {
    const docs = render(['injection.mode=policy', 'webhook.injectValue=team-b', 'webhook.excludeNamespaces[0]=batch']);
    const guard = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy' && d.metadata.name === 'ops-leasehold-operator-label-guard')!;
    assert.ok(guard, 'no label guard');
    assert.deepEqual(guard.spec.matchConstraints.resourceRules[0].operations, ['UPDATE']);
    assert.deepEqual(guard.spec.matchConstraints.objectSelector, { matchLabels: { 'leasehold.io/inject': 'team-b' } });
    assert.deepEqual(guard.spec.matchConstraints.namespaceSelector.matchExpressions[0].values, ['kube-system', 'leasehold-system', 'batch']);
    const guarded = (guard.spec.variables as { name: string; expression: string }[]).find((v) => v.name === 'guarded')!.expression;
    const listed = [...guarded.matchAll(/'([^']+)'/g)].map((m) => m[1]).sort();
    assert.deepEqual(listed, [...Object.values(ANNOTATION), INJECTED_LEASE, INJECTED_POD_LABEL, INJECTED_SHARDS, INJECTED_MAX_MEMBERS, INJECTED_MARK].sort());
    assert.ok(!listed.includes('leasehold.io/token'), "the sidecar's own pod annotation stays writable");
    const binding = docs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding' && d.metadata.name === guard.metadata.name)!;
    assert.deepEqual(binding.spec, { policyName: guard.metadata.name, validationActions: ['Deny'] });
  });

  it('the sidecar guard: the same object in both modes, so a switch neither makes nor changes it; CREATEs of the pods the injector selects', () => {
    const guardOf = (docs: Obj[]) => docs.filter((d) => d.metadata.name === 'ops-leasehold-operator-sidecar-guard');
    const set = ['webhook.injectValue=team-b', 'webhook.excludeNamespaces[0]=batch', 'webhook.namespaceOptIn=true'];
    const webhook = render(['injection.mode=webhook', ...set], [POLICY_API]);
    const guard = guardOf(webhook);
    assert.deepEqual(kinds(guard), ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    // Byte for byte what policy mode and auto (either way) render: helm leaves it untouched.
    assert.deepEqual(guardOf(render(['injection.mode=policy', ...set], [POLICY_API])), guard);
    assert.deepEqual(guardOf(render(['injection.mode=auto', ...set], [POLICY_API])), guard);
    assert.deepEqual(guardOf(render(['injection.mode=auto', ...set])), guard);
    const [policy, binding] = [guard.find((d) => d.kind === 'ValidatingAdmissionPolicy')!, guard.find((d) => d.kind.endsWith('Binding'))!];
    assert.equal(policy.spec.failurePolicy, 'Fail');
    assert.deepEqual(policy.spec.matchConstraints.resourceRules, [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }]);
    assert.match(String(policy.spec.validations[0].message), /labelled leasehold\.io\/inject=team-b but no injector gave it the leasehold sidecar/);
    assert.deepEqual(binding.spec.validationActions, ['Deny']);
    assert.equal(binding.spec.policyName, policy.metadata.name);
    // Exactly the webhook's pods (and so the policies'): its objectSelector and namespaceSelector.
    const wh = webhook.find((d) => d.kind === 'MutatingWebhookConfiguration')!.webhooks![0]!;
    assert.deepEqual(binding.spec.matchResources, { objectSelector: wh.objectSelector, namespaceSelector: wh.namespaceSelector });
    const policyBinding = render(['injection.mode=policy', ...set]).find((d) => d.kind === 'MutatingAdmissionPolicyBinding')!;
    assert.deepEqual(binding.spec.matchResources, policyBinding.spec.matchResources);
  });

  it('no sidecar guard under failurePolicy Ignore (pods without the sidecar were chosen over refusals), in either mode', () => {
    for (const mode of ['webhook', 'policy', 'auto'])
      for (const api of [[], [POLICY_API]]) {
        const docs = render([`injection.mode=${mode}`, 'webhook.failurePolicy=Ignore'], api);
        assert.ok(!docs.some((d) => d.metadata.name.endsWith('-sidecar-guard')), `${mode} ${api.join(' ')}`);
      }
  });

  it('no sidecar guard where the API server does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy', () => {
    const guarded = (kube: string, apiVersions: string[]) =>
      render(['injection.mode=webhook'], apiVersions, kube).some((d) => d.metadata.name === 'ops-leasehold-operator-sidecar-guard');
    // helm template lists no kinds: the version decides (the API is GA, and on, from 1.30).
    assert.equal(guarded('1.29.0', []), false);
    assert.equal(guarded('1.30.0', []), true);
    // helm install and upgrade list every kind the cluster serves: discovery decides, whatever the version.
    assert.equal(guarded('1.31.0', ['v1/Pod']), false, 'the API turned off on a 1.31 cluster');
    assert.equal(guarded('1.31.0', ['v1/Pod', 'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy']), true);
    assert.equal(guarded('1.29.0', ['v1/Pod', 'admissionregistration.k8s.io/v1beta1/ValidatingAdmissionPolicy']), false, 'v1beta1 is not enough');
  });
});

describe('the label guard on the real API server', () => {
  let ns = '';
  let guardName = '';
  const value = `guard-${process.pid}`;
  const kubectl = (argv: string[], input?: string) =>
    spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, ...argv], { input, encoding: 'utf8' });

  before(async () => {
    helmBin ||= buildTool('build-helm.sh');
    ns = await freshNamespace('label-guard');
    // This control plane runs no controller-manager: pods need their ServiceAccount made by hand.
    await admin.core().createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'default' } } });
    // This process's own inject value and names: the guard matches no other test's pods.
    // The label guard alone: the sidecar guard would refuse these labelled pods sent without a sidecar.
    const docs = render(['injection.mode=policy', `webhook.injectValue=${value}`, `fullnameOverride=lg-${process.pid}`]).filter(
      (d) => d.kind.startsWith('ValidatingAdmissionPolicy') && d.metadata.name === `lg-${process.pid}-label-guard`,
    );
    assert.equal(docs.length, 2);
    guardName = docs[0]!.metadata.name;
    const created = kubectl(['create', '-f', '-'], docs.map((d) => JSON.stringify(d)).join('\n'));
    assert.equal(created.status, 0, created.stderr);
    for (const name of ['plain', 'labelled', 'bare'])
      assert.equal(
        kubectl(
          ['create', '-n', ns, '-f', '-'],
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: {
              name,
              ...(name === 'labelled' ? { labels: { 'leasehold.io/inject': value }, annotations: { 'leasehold.io/lease': 'web' } } : {}),
              // Labelled, and no annotations at all: the guard's CEL must not fail on a missing map.
              ...(name === 'bare' ? { labels: { 'leasehold.io/inject': value } } : {}),
            },
            spec: { containers: [{ name: 'app', image: 'busybox' }] },
          }),
        ).status,
        0,
      );
    // Admission sees a new policy through its informers: wait until it refuses.
    await waitFor(
      'the label guard to act',
      () => kubectl(['label', '--dry-run=server', '-n', ns, 'pod/plain', `leasehold.io/inject=${value}`]).status !== 0,
      30_000,
      200,
    );
  });

  after(() => {
    if (guardName) kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', guardName, '--ignore-not-found']);
    if (ns) kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  it('refuses labelling a pod after its creation, naming the rule', () => {
    const r = kubectl(['label', '-n', ns, 'pod/plain', `leasehold.io/inject=${value}`]);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, new RegExp(`the label leasehold\\.io/inject=${value} can be set only when a pod is created`));
    assert.equal(kubectl(['label', '-n', ns, 'pod/plain', 'leasehold.io/inject=another-install']).status, 0, "another install's value is not this guard's");
  });

  it("refuses changing an injector's annotation of a labelled pod; the sidecar's own, other labels and removing the label pass", () => {
    const edited = kubectl(['annotate', '--overwrite', '-n', ns, 'pod/labelled', 'leasehold.io/lease=payments']);
    assert.notEqual(edited.status, 0);
    assert.match(edited.stderr, /annotation leasehold\.io\/lease of a pod labelled leasehold\.io\/inject=guard-\d+ cannot change after it is created/);
    const added = kubectl(['annotate', '-n', ns, 'pod/labelled', 'leasehold.io/pod-label=true']);
    assert.match(added.stderr, /annotation leasehold\.io\/pod-label of a pod/);
    assert.equal(kubectl(['annotate', '-n', ns, 'pod/labelled', 'leasehold.io/token=7']).status, 0, 'pod-label mode writes leasehold.io/token');
    assert.equal(kubectl(['label', '-n', ns, 'pod/labelled', 'leasehold.io/role=leader']).status, 0);
    assert.equal(kubectl(['label', '-n', ns, 'pod/labelled', 'leasehold.io/inject-']).status, 0, 'a pod may always leave');
    const bare = kubectl(['label', '-n', ns, 'pod/bare', 'leasehold.io/role=follower']);
    assert.equal(bare.status, 0, `a labelled pod without annotations is updated: ${bare.stderr}`);
    assert.match(kubectl(['annotate', '-n', ns, 'pod/bare', 'leasehold.io/lease=web']).stderr, /annotation leasehold\.io\/lease of a pod/);
  });
});
