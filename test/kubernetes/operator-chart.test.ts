/**
 * The operator's chart (deploy/helm/leasehold-operator): what it renders, and on the real API
 * server that `helm uninstall` leaves no webhook configuration behind, so pods can be created
 * again (a dangling configuration with failurePolicy Fail would refuse every labelled pod).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import yaml from 'js-yaml';
import { buildTool } from '../support/build-tool.js';

const CHART = join(REPO, 'deploy/helm/leasehold-operator');
let helmBin = '';

function helm(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(helmBin, args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      KUBECONFIG: env().admin,
      HELM_CACHE_HOME: join(env().cpDir, 'helm-cache'),
      HELM_CONFIG_HOME: join(env().cpDir, 'helm-config'),
      HELM_DATA_HOME: join(env().cpDir, 'helm-data'),
    },
  });
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr };
}

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call */
type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec: Record<string, any>;
  rules?: any[];
  webhooks?: any[];
};

/**
 * These tests are the webhook's: injection.mode=webhook, not the default `auto` (which renders
 * the webhook here only because helm template asks no cluster; operator-chart-mode.test.ts covers
 * it). A test's own injection.mode, set after, wins.
 */
const template = (set: string[], namespace = 'leasehold-system') =>
  helm(['template', 'ops', CHART, '--namespace', namespace, '--kube-version', '1.31.0', ...['injection.mode=webhook', ...set].flatMap((s) => ['--set', s])]);

function render(set: string[] = [], namespace?: string): Obj[] {
  const r = template(set, namespace);
  assert.equal(r.code, 0, r.err);
  return (yaml.loadAll(r.out) as (Obj | null)[]).filter((d): d is Obj => d !== null);
}

/**
 * Values the chart must refuse, each with the value its message must name: a dotted path, which
 * helm's schema check names as a JSON pointer (`at '/webhook/failurePolicy'`), or a phrase.
 */
function assertRefused(cases: [string, string][], { lint = true } = {}): void {
  for (const [set, value] of cases) {
    const named = value.includes(' ') ? value : `at '/${value.split('.').join('/')}'`;
    const r = template([set]);
    assert.notEqual(r.code, 0, `${set} should be refused`);
    assert.ok(r.err.includes(named), `${set}: ${named} not in ${r.err}`);
    if (!lint) continue;
    const linted = helm(['lint', '--strict', CHART, '--set', set]);
    assert.notEqual(linted.code, 0, `helm lint: ${set} should be refused`);
    assert.ok((linted.out + linted.err).includes(named), `helm lint ${set}: ${named} not in ${linted.out}${linted.err}`);
  }
}
const one = (docs: Obj[], kind: string) => docs.filter((d) => d.kind === kind)[0]!;
const named = (docs: Obj[], kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name)!;

function createPod(ns: string, name: string): { ok: boolean; out: string } {
  const manifest = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { 'leasehold.io/inject': 'true' } },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] },
  };
  try {
    return {
      ok: true,
      out: execFileSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'create', '-f', '-'], {
        input: JSON.stringify(manifest),
        stdio: ['pipe', 'pipe', 'pipe'],
      }).toString(),
    };
  } catch (err) {
    return { ok: false, out: String((err as { stderr?: Buffer }).stderr ?? err) };
  }
}

describe('the operator chart', () => {
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });

  it('passes helm lint --strict', () => {
    const r = helm(['lint', '--strict', CHART]);
    assert.equal(r.code, 0, r.out + r.err);
  });

  it('refuses values of the wrong type or shape, naming the value (values.schema.json)', () => {
    assertRefused([
      ['replicaCount=two', 'replicaCount'],
      ['replicaCount=0', 'replicaCount'],
      ['image.pullPolicy=Sometimes', 'image.pullPolicy'],
      ['image.repository=', 'image.repository'],
      ['webhook.failurePolicy=Retry', 'webhook.failurePolicy'],
      ['webhook.timeoutSeconds=31', 'webhook.timeoutSeconds'],
      ['webhook.namespaceOptIn=yes', 'webhook.namespaceOptIn'],
      // An objectSelector's value: a label value, never empty (an empty one would match no pod).
      ['webhook.injectValue=team/b', 'webhook.injectValue'],
      ['webhook.injectValue=', 'webhook.injectValue'],
      [`webhook.injectValue=${'a'.repeat(64)}`, 'webhook.injectValue'],
      ['webhook.excludeNamespaces[0]=Not_A_Namespace', 'webhook.excludeNamespaces.0'],
      ['nativeSidecar=sometimes', 'nativeSidecar'],
      ['certValidity=90', 'certValidity'],
      ['caValidity=ten-years', 'caValidity'],
      ['resync=30', 'resync'],
      ['logFormat=xml', 'logFormat'],
      ['podDisruptionBudget.minAvailable=half', 'podDisruptionBudget.minAvailable'],
      // The Secret is "<name>-tls", a DNS-1123 label: 60 characters and more would not be one.
      [`fullnameOverride=${'a'.repeat(60)}`, 'fullnameOverride'],
      ['fullnameOverride=Ops_Operator', 'fullnameOverride'],
      ['webhookk.failurePolicy=Fail', "'webhookk' not allowed"],
      // A Lease stores whole seconds: the operator would refuse 1500ms at start, in a crash loop.
      ['leaderElection.leaseDuration=1500ms', 'leaderElection.leaseDuration'],
      ['leaderElection.renewDeadline=10', 'leaderElection.renewDeadline'],
      ['leaderElection.retryPeriod=often', 'leaderElection.retryPeriod'],
    ]);
  });

  it("refuses election timings that break the sidecar's rules, naming the values (at template time)", () => {
    // helm lint reports a template's `fail` without failing, so helm template (and install) is what refuses these.
    assertRefused(
      [
        ['leaderElection.renewDeadline=15s', 'leaderElection.leaseDuration "15s" must be greater than leaderElection.renewDeadline "15s"'],
        ['leaderElection.leaseDuration=10s', 'leaderElection.leaseDuration "10s" must be greater than leaderElection.renewDeadline "10s"'],
        ['leaderElection.renewDeadline=2400ms', 'leaderElection.renewDeadline "2400ms" must be greater than 1.2 × leaderElection.retryPeriod "2s"'],
        ['leaderElection.retryPeriod=0s', 'leaderElection.retryPeriod "0s" must be from 1ms to 2147483647ms'],
        // The operator's own duration rules (parseDuration, durationRangeError), not float seconds:
        // each of these rendered and the operator exited 2 in a crash loop.
        ['leaderElection.retryPeriod=0.5ms', 'leaderElection.retryPeriod "0.5ms" must be a whole number of milliseconds'],
        ['leaderElection.retryPeriod=1.0001s', 'leaderElection.retryPeriod "1.0001s" must be a whole number of milliseconds'],
        ['leaderElection.leaseDuration=600h', 'leaderElection.leaseDuration "600h" must be from 1ms to 2147483647ms'],
        ['leaderElection.renewDeadline=3600ms,leaderElection.retryPeriod=3s', 'leaderElection.renewDeadline "3600ms" must be greater than 1.2 ×'],
        ['resync=0s', 'resync "0s" must be from 1ms to 2147483647ms'],
        ['resync=0.5ms', 'resync "0.5ms" must be a whole number of milliseconds'],
        ['resync=600h', 'resync "600h" must be from 1ms to 2147483647ms'],
        ['certValidity=30s', 'certValidity "30s" must be at least 1m'],
        ['caValidity=1h', 'caValidity "1h" must be longer than certValidity "2160h"'],
      ],
      { lint: false },
    );
  });

  it('passes the election timings to the operator', () => {
    const args = (set: string[]) => one(render(set), 'Deployment').spec.template.spec.containers[0].args as string[];
    const defaults = args([]);
    for (const arg of ['--lease-duration=15s', '--renew-deadline=10s', '--retry-period=2s']) assert.ok(defaults.includes(arg), arg);
    const set = args(['leaderElection.leaseDuration=1m', 'leaderElection.renewDeadline=40s', 'leaderElection.retryPeriod=2500ms']);
    for (const arg of ['--lease-duration=1m', '--renew-deadline=40s', '--retry-period=2500ms']) assert.ok(set.includes(arg), arg);
  });

  it('renders good values as given', () => {
    const docs = render([
      'replicaCount=3',
      'image.pullPolicy=Always',
      'webhook.timeoutSeconds=30',
      'webhook.excludeNamespaces[0]=batch',
      'nativeSidecar=auto',
      'certValidity=720h',
      'caValidity=8760h',
      'resync=1m30s',
      'logFormat=text',
      'podDisruptionBudget.minAvailable=50%',
      'fullnameOverride=ops',
    ]);
    const deployment = one(docs, 'Deployment');
    assert.equal(deployment.spec.replicas, 3);
    const args = deployment.spec.template.spec.containers[0].args as string[];
    for (const arg of [
      '--native-sidecar=auto',
      '--cert-validity=720h',
      '--ca-validity=8760h',
      '--resync=1m30s',
      '--log-format=text',
      '--exclude-namespace=batch',
    ]) {
      assert.ok(args.includes(arg), `${arg} in ${args.join(' ')}`);
    }
    assert.equal(one(docs, 'PodDisruptionBudget').spec.minAvailable, '50%');
    assert.equal(one(docs, 'MutatingWebhookConfiguration').webhooks![0].timeoutSeconds, 30);
  });

  it('injection.mode=policy renders the admission policies and their bindings instead of the webhook, on Kubernetes 1.36 and later', () => {
    const policy = (kube: string, set: string[] = []) =>
      helm([
        'template',
        'ops',
        CHART,
        '--namespace',
        'leasehold-system',
        '--kube-version',
        kube,
        '--set',
        'injection.mode=policy',
        ...set.flatMap((s) => ['--set', s]),
      ]);
    const old = policy('1.35.0');
    assert.notEqual(old.code, 0);
    assert.ok(old.err.includes('injection.mode=policy needs Kubernetes 1.36 or later'), old.err);

    const r = policy('1.36.0', ['webhook.namespaceOptIn=true', 'webhook.excludeNamespaces[0]=batch', 'webhook.injectValue=team-a']);
    assert.equal(r.code, 0, r.err);
    const docs = (yaml.loadAll(r.out) as (Obj | null)[]).filter((d): d is Obj => d !== null);
    const kinds = docs.map((d) => d.kind);
    assert.ok(!kinds.includes('MutatingWebhookConfiguration'), kinds.join(', '));
    for (const kind of ['MutatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicyBinding']) {
      // The injecting policy's and the refusing policy's bindings (the label guard's is checked in operator-chart-mode.test.ts).
      const binding = named(docs, kind, 'ops-leasehold-operator');
      assert.equal(binding.spec.policyName, named(docs, kind.replace('Binding', ''), 'ops-leasehold-operator').metadata.name);
      // The webhook's namespace rules and inject value, for the same pods.
      assert.deepEqual(binding.spec.matchResources, {
        objectSelector: { matchLabels: { 'leasehold.io/inject': 'team-a' } },
        namespaceSelector: {
          matchExpressions: [
            { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'leasehold-system', 'batch'] },
            { key: 'leasehold.io/injection', operator: 'In', values: ['enabled'] },
          ],
        },
      });
    }
    const mutating = one(docs, 'MutatingAdmissionPolicy');
    assert.equal(mutating.spec.reinvocationPolicy, 'IfNeeded');
    assert.equal(mutating.spec.failurePolicy, 'Fail');
    assert.deepEqual(
      mutating.spec.mutations.map((m: { patchType: string }) => m.patchType),
      ['JSONPatch', 'JSONPatch', 'JSONPatch', 'JSONPatch'],
    );
    // One validating policy refuses, one warns (a probe that gives no health), as the webhook does;
    // the label guard refuses labelling a pod after its creation.
    assert.deepEqual(
      docs
        .filter((d) => d.kind === 'ValidatingAdmissionPolicyBinding')
        .map((d): unknown[] => [d.spec.policyName, d.spec.validationActions])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      [
        ['ops-leasehold-operator', ['Deny']],
        ['ops-leasehold-operator-label-guard', ['Deny']],
        ['ops-leasehold-operator-sidecar-guard', ['Deny']],
        ['ops-leasehold-operator-warn', ['Warn']],
      ],
    );

    // Webhook mode: no injecting or refusing policy; only the sidecar guard, which both modes share.
    const webhookMode = render();
    assert.ok(!webhookMode.some((d) => d.kind === 'MutatingAdmissionPolicy'));
    assert.deepEqual(
      webhookMode.filter((d) => d.kind === 'ValidatingAdmissionPolicy').map((d) => d.metadata.name),
      ['ops-leasehold-operator-sidecar-guard'],
    );
  });

  it('renders 2 replicas, a PDB, and a webhook only for labelled pods outside kube-system and its own namespace', () => {
    const docs = render();
    assert.equal(one(docs, 'Deployment').spec.replicas, 2);
    assert.equal(one(docs, 'PodDisruptionBudget').spec.minAvailable, 1);
    const hook = one(docs, 'MutatingWebhookConfiguration').webhooks![0];
    assert.deepEqual(hook.objectSelector, { matchLabels: { 'leasehold.io/inject': 'true' } });
    assert.deepEqual(hook.namespaceSelector.matchExpressions, [
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'leasehold-system'] },
    ]);
    assert.equal(hook.failurePolicy, 'Fail');
    assert.equal(hook.clientConfig.caBundle, undefined, 'the operator writes the caBundle; the chart must not overwrite it');
    // Another install's value: its webhook and its operator select the same pods.
    const teamB = render(['webhook.injectValue=team-b']);
    assert.deepEqual(one(teamB, 'MutatingWebhookConfiguration').webhooks![0].objectSelector, { matchLabels: { 'leasehold.io/inject': 'team-b' } });
    assert.ok((one(teamB, 'Deployment').spec.template.spec.containers[0].args as string[]).includes('--inject-value=team-b'));
    assert.ok((one(docs, 'Deployment').spec.template.spec.containers[0].args as string[]).includes('--inject-value=true'));
    const optInDocs = render(['webhook.namespaceOptIn=true', 'webhook.failurePolicy=Ignore']);
    const optIn = one(optInDocs, 'MutatingWebhookConfiguration').webhooks![0];
    assert.equal(optIn.failurePolicy, 'Ignore');
    assert.deepEqual(optIn.namespaceSelector.matchExpressions[1], { key: 'leasehold.io/injection', operator: 'In', values: ['enabled'] });
    // The reconciler applies the same rule before it grants.
    const argsOf = (d: Obj[]) => one(d, 'Deployment').spec.template.spec.containers[0].args as string[];
    assert.ok(argsOf(optInDocs).includes('--namespace-opt-in'));
    assert.ok(!argsOf(docs).includes('--namespace-opt-in'));
  });

  it('its ClusterRole holds what it grants and no more; the webhook configuration only by name', () => {
    const role = render().find((d) => d.kind === 'ClusterRole')!;
    const verbs = (group: string, resource: string) =>
      role.rules!.filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r) => r.verbs as string[]);
    assert.deepEqual(verbs('coordination.k8s.io', 'leases').sort(), ['create', 'get', 'list', 'update', 'watch']);
    assert.deepEqual(verbs('', 'pods').sort(), ['get', 'list', 'patch', 'watch']);
    assert.deepEqual(verbs('', 'namespaces').sort(), ['get', 'list'], 'namespaces read, never written');
    assert.deepEqual(verbs('', 'secrets'), [], 'no Secret outside its namespace');
    assert.ok(!role.rules!.some((r) => r.verbs.includes('escalate') || r.verbs.includes('bind') || r.verbs.includes('*')));
    const hookRule = role.rules!.find((r) => r.resources.includes('mutatingwebhookconfigurations'));
    assert.deepEqual(hookRule.resourceNames, ['ops-leasehold-operator']);
  });

  it('fencing.objectPolicies: off, no policy, no right to bindings, no flag; on, one policy, that right and the flag naming it', () => {
    const argsOf = (d: Obj[]) => one(d, 'Deployment').spec.template.spec.containers[0].args as string[];
    const bindingRules = (d: Obj[]): unknown[] =>
      one(d, 'ClusterRole').rules!.filter((r) => (r.resources as string[]).includes('validatingadmissionpolicybindings'));
    // The sidecar guard (sidecar-guard.yaml) is the chart's in every mode; no other policy without fencing.
    const off = render().filter((d) => d.metadata.name !== 'ops-leasehold-operator-sidecar-guard');
    assert.ok(!off.some((d) => d.kind.startsWith('ValidatingAdmissionPolicy')));
    assert.deepEqual(bindingRules(off), []);
    assert.ok(!argsOf(off).some((a) => a.startsWith('--fence-objects-policy')));

    const on = render(['fencing.objectPolicies.enabled=true']).filter((d) => d.metadata.name !== 'ops-leasehold-operator-sidecar-guard');
    const policies = on.filter((d) => d.kind === 'ValidatingAdmissionPolicy');
    assert.equal(policies.length, 1);
    assert.ok(!on.some((d) => d.kind === 'ValidatingAdmissionPolicyBinding'), 'the chart binds nothing: the operator does, per Lease');
    const name = 'ops-leasehold-operator.leasehold-system.operator-fencing.leasehold.io';
    assert.equal(policies[0]!.metadata.name, name);
    // Never a name the leasehold chart's policy (<fullname>.<namespace>.fencing.leasehold.io) can have.
    assert.ok(!name.endsWith('.fencing.leasehold.io'));
    assert.deepEqual(policies[0]!.spec.paramKind, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' });
    assert.deepEqual(policies[0]!.spec.matchConstraints.resourceRules, [
      { apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: 'Namespaced' },
    ]);
    assert.deepEqual(bindingRules(on), [
      { apiGroups: ['admissionregistration.k8s.io'], resources: ['validatingadmissionpolicybindings'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
    ]);
    // The policy is the chart's to write: the operator only reads it, by name.
    assert.deepEqual(
      one(on, 'ClusterRole').rules!.filter((r) => (r.resources as string[]).includes('validatingadmissionpolicies')),
      [{ apiGroups: ['admissionregistration.k8s.io'], resources: ['validatingadmissionpolicies'], resourceNames: [name], verbs: ['get'] }],
    );
    assert.ok(argsOf(on).includes(`--fence-objects-policy=${name}`));
    assertRefused([['fencing.objectPolicies.enabled=yes', 'fencing.objectPolicies.enabled']]);
    const old = helm(['template', 'ops', CHART, '--kube-version', '1.29.0', '--set', 'fencing.objectPolicies.enabled=true']);
    assert.notEqual(old.code, 0);
    assert.match(old.err, /fencing\.objectPolicies\.enabled needs Kubernetes 1\.30 or later/);
  });

  describe('with certManager.enabled', () => {
    const cm = (set: string[] = [], namespace?: string) => render(['certManager.enabled=true', ...set], namespace);
    const args = (docs: Obj[]) => one(docs, 'Deployment').spec.template.spec.containers[0].args as string[];

    it("renders a Certificate for the Service's DNS names into the Secret the operator serves, and has the cainjector fill the caBundle", () => {
      const docs = cm();
      const service = one(docs, 'Service').metadata.name;
      const cert = named(docs, 'Certificate', 'ops-leasehold-operator');
      assert.deepEqual(cert.spec.dnsNames, [
        `${service}.leasehold-system.svc`,
        `${service}.leasehold-system.svc.cluster.local`,
        `${service}.leasehold-system`,
        service,
      ]);
      assert.equal(cert.metadata.namespace, 'leasehold-system');
      assert.equal(cert.spec.duration, '2160h');
      assert.equal(cert.spec.renewBefore, '720h');
      assert.ok(args(docs).includes(`--secret=${cert.spec.secretName}`), 'the operator serves the Secret cert-manager writes');
      assert.ok(args(docs).includes('--certificates=external'), 'and writes neither the Secret nor the caBundle');
      const hook = one(docs, 'MutatingWebhookConfiguration');
      assert.equal(hook.metadata.annotations?.['cert-manager.io/inject-ca-from'], `leasehold-system/${cert.metadata.name}`);
      assert.equal(hook.webhooks![0].clientConfig.caBundle, undefined);
    });

    it('without an issuer, makes a CA of its own: a selfSigned Issuer signs only the CA, which keeps its key on renewal', () => {
      const docs = cm();
      const serving = named(docs, 'Certificate', 'ops-leasehold-operator');
      const caIssuer = named(docs, 'Issuer', String(serving.spec.issuerRef.name));
      assert.deepEqual(serving.spec.issuerRef, { name: caIssuer.metadata.name, kind: 'Issuer', group: 'cert-manager.io' });
      const ca = docs.find((d) => d.kind === 'Certificate' && d.spec.secretName === caIssuer.spec.ca.secretName)!;
      assert.equal(ca.spec.isCA, true);
      assert.equal(ca.spec.privateKey.rotationPolicy, 'Never');
      assert.equal(ca.spec.duration, '87600h');
      assert.deepEqual(named(docs, 'Issuer', String(ca.spec.issuerRef.name)).spec, { selfSigned: {} });
    });

    it('with an issuer given, uses it and makes none', () => {
      const docs = cm([
        'certManager.issuerRef.name=corp-ca',
        'certManager.issuerRef.kind=ClusterIssuer',
        'certManager.duration=720h',
        'certManager.renewBefore=240h',
      ]);
      assert.equal(docs.filter((d) => d.kind === 'Issuer').length, 0);
      const certs = docs.filter((d) => d.kind === 'Certificate');
      assert.equal(certs.length, 1);
      assert.deepEqual(certs[0]!.spec.issuerRef, { name: 'corp-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
      assert.equal(certs[0]!.spec.duration, '720h');
    });

    it('holds less: reads the Secret cert-manager writes, makes only its mark key, and no webhook configuration at all', () => {
      const docs = cm();
      const role = docs.find((d) => d.kind === 'Role')!;
      assert.deepEqual(role.rules, [
        // Updated: a rotation, a retired key dropped, the keys put back when it was deleted.
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['ops-leasehold-operator-mark'], verbs: ['get', 'update'] },
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['ops-leasehold-operator-cert'], verbs: ['get'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      ]);
      assert.ok(args(docs).includes('--mark-secret=ops-leasehold-operator-mark'));
      const cluster = docs.find((d) => d.kind === 'ClusterRole')!;
      assert.ok(!cluster.rules!.some((r) => r.resources.includes('mutatingwebhookconfigurations')));
      // Without cert-manager, none of it.
      const own = render();
      assert.equal(own.filter((d) => d.apiVersion.startsWith('cert-manager.io/')).length, 0);
      assert.equal(one(own, 'MutatingWebhookConfiguration').metadata.annotations, undefined);
      assert.ok(args(own).includes('--secret=ops-leasehold-operator-tls') && !args(own).some((a) => a.startsWith('--certificates')));
    });

    it('refuses settings cert-manager would refuse, naming the values', () => {
      assertRefused([
        ['certManager.issuerRef.kind=Issuers', 'certManager.issuerRef.kind'],
        ['certManager.issuerRef.name=Corp_CA', 'certManager.issuerRef.name'],
        ['certManager.duration=90d', 'certManager.duration'],
        ['certManager.enabled=on', 'certManager.enabled'],
      ]);
      assertRefused(
        [
          ['certManager.renewBefore=2160h', 'certManager.renewBefore "2160h" must be less than certManager.duration "2160h"'],
          ['certManager.duration=30m', `certManager.duration "30m" must be at least 1h`],
          ['certManager.caDuration=720h', 'certManager.caDuration "720h" must be longer than certManager.duration "2160h"'],
        ].map(([set, message]) => [`certManager.enabled=true,${set}`, message] as [string, string]),
        { lint: false },
      );
    });

    it('its other resources are accepted by the API server (server-side dry run; no cert-manager CRDs here)', async () => {
      const ns = await freshNamespace('lhocm');
      try {
        const rest = cm([], ns).filter((d) => !d.apiVersion.startsWith('cert-manager.io/'));
        const out = execFileSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'apply', '--dry-run=server', '-f', '-'], {
          input: rest.map((d) => JSON.stringify(d)).join('\n'),
          stdio: ['pipe', 'pipe', 'pipe'],
        }).toString();
        assert.match(out, /mutatingwebhookconfiguration\.admissionregistration\.k8s\.io\/ops-leasehold-operator created \(server dry run\)/);
        assert.match(out, /deployment\.apps\/ops-leasehold-operator created \(server dry run\)/);
      } finally {
        kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
      }
    });
  });

  describe('installed on the API server', () => {
    /** This API server (1.37) serves MutatingAdmissionPolicy, so the default `auto` would install the policies. */
    const WEBHOOK_MODE = ['--set', 'injection.mode=webhook'];
    let ns = '';
    let apps = '';
    before(async () => {
      ns = await freshNamespace('lho');
      apps = await freshNamespace('lhoapps');
      kubectl(['create', 'serviceaccount', 'default', '-n', apps]);
    });
    after(() => {
      helm(['uninstall', `lho-${process.pid}`, '--namespace', ns]);
      for (const n of [ns, apps]) if (n) kubectl(['delete', 'namespace', n, '--wait=false', '--ignore-not-found']);
    });

    it('a second install selecting the same pods is refused at helm install, naming the first; with a value of its own it installs', async () => {
      const first = `lho-a-${process.pid}`;
      const second = `lho-b-${process.pid}`;
      const other = await freshNamespace('lhob');
      try {
        const a = helm(['install', first, CHART, '--namespace', ns, ...WEBHOOK_MODE, '--set', `fullnameOverride=${first}`]);
        assert.equal(a.code, 0, a.err);
        // Whatever the second's mode: a policy would inject the same pods the webhook does.
        for (const mode of ['webhook', 'policy']) {
          const same = helm(['install', second, CHART, '--namespace', other, '--set', `injection.mode=${mode}`, '--set', `fullnameOverride=${second}`]);
          assert.notEqual(same.code, 0, `the same value is refused (${mode})`);
          assert.ok(
            same.err.includes(
              `webhook.injectValue "true": the webhook configuration ${first}, another leasehold operator install, already injects pods labelled leasehold.io/inject=true`,
            ),
            same.err,
          );
          assert.equal(
            kubectl(['get', 'mutatingwebhookconfiguration,mutatingadmissionpolicybinding', second, '--ignore-not-found', '-o', 'name']).trim(),
            '',
            'nothing of it installed',
          );
        }
        const own = helm([
          'install',
          second,
          CHART,
          '--namespace',
          other,
          ...WEBHOOK_MODE,
          '--set',
          `fullnameOverride=${second}`,
          '--set',
          'webhook.injectValue=team-b',
        ]);
        assert.equal(own.code, 0, own.err);
        const selector = kubectl(['get', 'mutatingwebhookconfiguration', second, '-o', 'jsonpath={.webhooks[0].objectSelector.matchLabels}']);
        assert.deepEqual(JSON.parse(selector), { 'leasehold.io/inject': 'team-b' });
        // An upgrade of the first is not refused for its own configuration.
        const up = helm(['upgrade', first, CHART, '--namespace', ns, '--reuse-values']);
        assert.equal(up.code, 0, up.err);
      } finally {
        helm(['uninstall', second, '--namespace', other, '--wait']);
        helm(['uninstall', first, '--namespace', ns, '--wait']);
        kubectl(['delete', 'namespace', other, '--wait=false', '--ignore-not-found']);
      }
    });

    it("a second install on the value of one in policy mode (the default here) is refused in any mode, naming the first's binding", async () => {
      const first = `lho-p-${process.pid}`;
      const second = `lho-q-${process.pid}`;
      // A value of this process's own: no other test's install selects it.
      const value = `dup-${process.pid}`;
      const other = await freshNamespace('lhoq');
      const install = (release: string, namespace: string, set: string[]) =>
        helm(['install', release, CHART, '--namespace', namespace, ...[`fullnameOverride=${release}`, ...set].flatMap((s) => ['--set', s])]);
      try {
        // No injection.mode: `auto` asks this API server, which serves MutatingAdmissionPolicy.
        const a = install(first, ns, [`webhook.injectValue=${value}`]);
        assert.equal(a.code, 0, a.err);
        assert.equal(
          kubectl(['get', 'mutatingadmissionpolicybinding', first, '-o', 'name']).trim(),
          `mutatingadmissionpolicybinding.admissionregistration.k8s.io/${first}`,
        );
        assert.equal(kubectl(['get', 'mutatingwebhookconfiguration', first, '--ignore-not-found', '-o', 'name']).trim(), '', 'auto installed no webhook here');
        for (const mode of ['webhook', 'policy', 'auto']) {
          const same = install(second, other, [`injection.mode=${mode}`, `webhook.injectValue=${value}`]);
          assert.notEqual(same.code, 0, `the same value is refused (${mode})`);
          assert.ok(
            same.err.includes(
              `webhook.injectValue "${value}": the MutatingAdmissionPolicyBinding ${first}, another leasehold operator install (injection by policy), already injects pods labelled leasehold.io/inject=${value}`,
            ),
            same.err,
          );
          assert.equal(
            kubectl(['get', 'mutatingwebhookconfiguration,mutatingadmissionpolicybinding', second, '--ignore-not-found', '-o', 'name']).trim(),
            '',
            'nothing of it installed',
          );
        }
        // Its own binding is not another install's: an upgrade of the first passes.
        const up = helm(['upgrade', first, CHART, '--namespace', ns, '--reuse-values']);
        assert.equal(up.code, 0, up.err);
        const own = install(second, other, ['injection.mode=policy', `webhook.injectValue=${value}-b`]);
        assert.equal(own.code, 0, own.err);
      } finally {
        helm(['uninstall', second, '--namespace', other, '--wait']);
        helm(['uninstall', first, '--namespace', ns, '--wait']);
        kubectl(['delete', 'namespace', other, '--wait=false', '--ignore-not-found']);
      }
    });

    it('helm uninstall leaves no webhook configuration, and labelled pods can be created again', async () => {
      const release = `lho-${process.pid}`;
      const r = helm(['install', release, CHART, '--namespace', ns, ...WEBHOOK_MODE, '--set', `fullnameOverride=${release}`]);
      assert.equal(r.code, 0, r.err);
      const name = kubectl(['get', 'mutatingwebhookconfiguration', release, '-o', 'name']).trim();
      assert.equal(name, `mutatingwebhookconfiguration.admissionregistration.k8s.io/${release}`);
      // No replica runs here (no scheduler): with failurePolicy Fail the labelled pod is refused,
      // which is what a dangling configuration would do for ever.
      const refused = createPod(apps, 'while-installed');
      assert.equal(refused.ok, false, 'a labelled pod is refused while the webhook is installed and unreachable');
      const u = helm(['uninstall', release, '--namespace', ns, '--wait']);
      assert.equal(u.code, 0, u.err);
      assert.equal(kubectl(['get', 'mutatingwebhookconfiguration', release, '--ignore-not-found', '-o', 'name']).trim(), '');
      // The sidecar guard went with the release, but the API server drops a deleted admission
      // policy up to about a second late (docs/operator.md "Removing it"): its refusal meanwhile is
      // retried, as a workload's controller would; any other refusal, or a guard that stays, fails.
      const created = await waitFor(
        'a labelled pod created after the uninstall',
        () => {
          const c = createPod(apps, 'after-uninstall');
          if (c.ok) return c;
          assert.match(c.out, /sidecar-guard/, c.out);
          return undefined;
        },
        15_000,
        200,
      );
      assert.ok(created.ok, created.out);
    });
  });
});
