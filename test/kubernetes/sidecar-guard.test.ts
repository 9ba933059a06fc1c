/**
 * The operator chart's sidecar guard on the real API server (templates/sidecar-guard.yaml,
 * docs/operator.md "Pod creation during a switch"): the ValidatingAdmissionPolicy that refuses the
 * CREATE of a labelled pod no injector gave the sidecar, in the namespaces the injector would
 * inject, and nothing else. Then the switch's window in small: with the chart's
 * MutatingAdmissionPolicy in force a labelled pod is injected and passes the guard (validation
 * runs after mutation); its binding deleted, as a switch drops an injector, every creation is
 * either injected or refused, never admitted without the sidecar. And the chart refuses to switch
 * an install from its webhook to the policy before its guard is installed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { buildTool } from '../support/build-tool.js';
import { kubectlIn } from '../support/operator-process.js';

const CHART = join(REPO, 'deploy/helm/leasehold-operator');
const NAME = `lho-guard-${process.pid}`;
/** Values of leasehold.io/inject of this test's own: no other test's webhook or policy selects these pods. */
const INJECT_VALUE = `guard-${process.pid}`;
const OPT_IN_NAME = `lho-guard-optin-${process.pid}`;
const OPT_IN_VALUE = `guard-optin-${process.pid}`;
const GUARD_MESSAGE = new RegExp(`leasehold: the pod is labelled leasehold\\.io/inject=${INJECT_VALUE} but no injector gave it the leasehold sidecar`);

interface Created {
  containers?: string[];
  refusal?: string;
}

type Container = { name: string; image: string; restartPolicy?: string };

/** A server-side dry-run create: the pod's container names (init containers last) as admission left them, or the refusal. */
function dryRunCreate(namespace: string, labels: Record<string, string>, extra: { containers?: Container[]; initContainers?: Container[] } = {}): Created {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'app', labels },
    spec: {
      containers: [{ name: 'app', image: 'busybox' }, ...(extra.containers ?? [])],
      ...(extra.initContainers ? { initContainers: extra.initContainers } : {}),
    },
  };
  const r = spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'create', '--dry-run=server', '-n', namespace, '-o', 'json', '-f', '-'], {
    input: JSON.stringify(pod),
    encoding: 'utf8',
  });
  if (r.status !== 0) return { refusal: r.stderr.trim() };
  const out = JSON.parse(r.stdout) as { spec: { containers: { name: string }[]; initContainers?: { name: string }[] } };
  return { containers: [...out.spec.containers, ...(out.spec.initContainers ?? [])].map((c) => c.name) };
}

/** helm template of the chart's guard (and, with `mutating`, its MutatingAdmissionPolicy) with these values. */
function render(set: string[], ns: string, mutating: boolean): string {
  const r = spawnSync(
    buildTool('build-helm.sh'),
    [
      'template',
      'ops',
      CHART,
      '--namespace',
      ns,
      '--kube-version',
      '1.37.0',
      '-s',
      'templates/sidecar-guard.yaml',
      ...(mutating ? ['-s', 'templates/admission-policy.yaml'] : []),
      ...['injection.mode=policy', ...set].flatMap((s) => ['--set', s]),
    ],
    {
      encoding: 'utf8',
      env: {
        ...process.env,
        HELM_CACHE_HOME: join(env().cpDir, 'helm-cache'),
        HELM_CONFIG_HOME: join(env().cpDir, 'helm-config'),
        HELM_DATA_HOME: join(env().cpDir, 'helm-data'),
      },
    },
  );
  assert.equal(r.status, 0, `helm template: ${r.stderr}`);
  return r.stdout;
}

const labelled = { 'leasehold.io/inject': INJECT_VALUE };
const sidecar: Container = { name: 'leasehold', image: 'leasehold:dev' };

describe('the sidecar guard on the real API server', () => {
  let ops = '';
  let apps = '';
  let excluded = '';
  let optedIn = '';
  const rendered: string[] = [];

  before(async () => {
    ops = await freshNamespace('guard-ops');
    apps = await freshNamespace('guard-apps');
    excluded = await freshNamespace('guard-excl');
    optedIn = await freshNamespace('guard-in');
    // This control plane runs no controller-manager: pods need their ServiceAccount made by hand.
    for (const ns of [ops, apps, excluded, optedIn]) kubectl(['create', 'serviceaccount', 'default', '-n', ns]);
    kubectl(['label', 'namespace', optedIn, 'leasehold.io/injection=enabled']);
    rendered.push(render([`fullnameOverride=${NAME}`, `webhook.injectValue=${INJECT_VALUE}`, `webhook.excludeNamespaces[0]=${excluded}`], ops, true));
    // A second install with namespace opt-in: its guard acts only in opted-in namespaces.
    rendered.push(render([`fullnameOverride=${OPT_IN_NAME}`, `webhook.injectValue=${OPT_IN_VALUE}`, 'webhook.namespaceOptIn=true'], ops, false));
    // The guards alone first (the mutating policy's binding held back): what they refuse, and what not.
    const [withPolicy, optIn] = rendered as [string, string];
    const guardsOnly = withPolicy
      .split(/^---$/m)
      .filter((d) => !d.includes('kind: MutatingAdmissionPolicyBinding'))
      .join('---');
    kubectlIn(['create', '-f', '-'], guardsOnly);
    kubectlIn(['create', '-f', '-'], optIn);
    // Admission sees a new policy through its informers: wait until each guard refuses.
    await waitFor('the guard to refuse', () => GUARD_MESSAGE.test(dryRunCreate(apps, labelled).refusal ?? ''), 60_000, 200);
    await waitFor('the opt-in guard to refuse', () => dryRunCreate(optedIn, { 'leasehold.io/inject': OPT_IN_VALUE }).refusal !== undefined, 60_000, 200);
  });

  after(() => {
    // Cluster-scoped objects outlive the namespaces: delete them whatever happened above.
    for (const r of rendered) spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'delete', '--ignore-not-found', '-f', '-'], { input: r });
    for (const ns of [ops, apps, excluded, optedIn]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it("refuses a labelled pod without the sidecar, naming the rule and this install's value", () => {
    const r = dryRunCreate(apps, labelled);
    assert.equal(r.containers, undefined, 'admitted without the sidecar');
    assert.match(r.refusal!, new RegExp(`ValidatingAdmissionPolicy '${NAME}-sidecar-guard' with binding '${NAME}-sidecar-guard' denied request`));
    assert.match(r.refusal!, GUARD_MESSAGE);
    // The opt-in install's guard, in an opted-in namespace.
    assert.match(dryRunCreate(optedIn, { 'leasehold.io/inject': OPT_IN_VALUE }).refusal ?? 'admitted', /no injector gave it the leasehold sidecar/);
  });

  it('passes a pod with the sidecar, as a container or as a native sidecar', () => {
    assert.deepEqual(dryRunCreate(apps, labelled, { containers: [sidecar] }).containers, ['app', 'leasehold']);
    assert.deepEqual(dryRunCreate(apps, labelled, { initContainers: [{ ...sidecar, restartPolicy: 'Always' }] }).containers, ['app', 'leasehold']);
  });

  it('passes every pod the injector would not touch: unlabelled, another value, an excluded namespace, the release namespace, not opted in', () => {
    const admitted = (ns: string, labels: Record<string, string>, what: string) => {
      const r = dryRunCreate(ns, labels);
      assert.deepEqual(r.containers, ['app'], `${what}: ${r.refusal}`);
    };
    admitted(apps, {}, 'unlabelled');
    admitted(apps, { 'leasehold.io/inject': 'another-install' }, "another install's value");
    admitted(excluded, labelled, 'webhook.excludeNamespaces');
    admitted(ops, labelled, "the release's own namespace");
    admitted(apps, { 'leasehold.io/inject': OPT_IN_VALUE }, 'a namespace not opted in (namespaceOptIn)');
    admitted(excluded, { 'leasehold.io/inject': OPT_IN_VALUE }, 'a namespace not opted in (namespaceOptIn)');
  });

  it("the switch in small: the policy's pods pass the guard; with the injector's binding gone, refusals, never a pod without the sidecar", async () => {
    // The mutating policy bound: a labelled pod is injected, and the guard, run after the mutation, passes it.
    const binding = (rendered[0] ?? '')
      .split(/^---$/m)
      .filter((d) => d.includes('kind: MutatingAdmissionPolicyBinding'))
      .join('---');
    assert.match(binding, /kind: MutatingAdmissionPolicyBinding/);
    kubectlIn(['create', '-f', '-'], binding);
    await waitFor('the mutating policy to inject', () => dryRunCreate(apps, labelled).containers?.includes('leasehold'), 60_000, 200);
    assert.deepEqual(dryRunCreate(apps, labelled).containers, ['app', 'leasehold']);
    // The injector goes, as a switch drops one: from its deletion until admission stops applying
    // it, and after, every creation is injected or refused by the guard.
    kubectlIn(['delete', 'mutatingadmissionpolicybinding', NAME], '');
    const seen = { injected: 0, refused: 0 };
    await waitFor(
      'the guard to refuse with the injector gone',
      () => {
        const r = dryRunCreate(apps, labelled);
        if (r.containers) {
          assert.deepEqual(r.containers, ['app', 'leasehold'], 'admitted without the sidecar while the injector went');
          seen.injected++;
          return false;
        }
        assert.match(r.refusal!, GUARD_MESSAGE);
        seen.refused++;
        return true;
      },
      60_000,
      50,
    );
    console.log(`sidecar guard: after the injector's binding was deleted, ${seen.injected} creations injected, then refused by the guard`);
  });

  it('refuses to switch an install from its webhook to the policy before its guard is installed, naming the way', () => {
    // An install of a chart without the guard, in webhook mode: its webhook configuration (one
    // that no pod meets: another value, Ignore, an address nothing serves).
    const name = `lho-old-${process.pid}`;
    const webhook = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name },
      webhooks: [
        {
          name: 'inject.leasehold.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Ignore',
          clientConfig: { url: 'https://127.0.0.1:9/mutate-pods' },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
          objectSelector: { matchLabels: { 'leasehold.io/inject': `old-${process.pid}` } },
        },
      ],
    };
    const set = [`fullnameOverride=${name}`, `webhook.injectValue=old-${process.pid}`];
    // The chart rendered with lookup asking the cluster, as at helm install and upgrade
    // (--dry-run=server: nothing is written; helm install would also refuse to adopt objects
    // this test made without Helm's ownership).
    const upgrade = (mode: string) =>
      spawnSync(
        buildTool('build-helm.sh'),
        [
          'template',
          'ops',
          CHART,
          '--dry-run=server',
          // What discovery would say of this API server (helm template does not ask it).
          '--kube-version',
          '1.37.0',
          '--api-versions',
          'admissionregistration.k8s.io/v1/MutatingAdmissionPolicy',
          '--kubeconfig',
          env().admin,
          '--namespace',
          ops,
          ...[`injection.mode=${mode}`, ...set].flatMap((s) => ['--set', s]),
        ],
        {
          encoding: 'utf8',
          env: {
            ...process.env,
            HELM_CACHE_HOME: join(env().cpDir, 'helm-cache'),
            HELM_CONFIG_HOME: join(env().cpDir, 'helm-config'),
            HELM_DATA_HOME: join(env().cpDir, 'helm-data'),
          },
        },
      );
    const guard = render(set, ops, false);
    try {
      kubectlIn(['create', '-f', '-'], JSON.stringify(webhook));
      for (const mode of ['policy', 'auto']) {
        const r = upgrade(mode);
        assert.notEqual(r.status, 0, `${mode}: rendered`);
        assert.match(
          r.stderr,
          new RegExp(
            `injection\\.mode "${mode}" switches this install from its webhook to the MutatingAdmissionPolicy, but its sidecar guard \\(ValidatingAdmissionPolicy and binding ${name}-sidecar-guard\\) is not installed yet`,
          ),
        );
        assert.match(r.stderr, /upgrade with --set injection\.mode=webhook first, then switch/);
      }
      // The first step: webhook mode renders, guard included.
      const first = upgrade('webhook');
      assert.equal(first.status, 0, first.stderr);
      assert.match(first.stdout, new RegExp(`name: ${name}-sidecar-guard`));
      // Once the guard is installed, the switch renders.
      kubectlIn(['create', '-f', '-'], guard);
      const second = upgrade('policy');
      assert.equal(second.status, 0, second.stderr);
      assert.match(second.stdout, /kind: MutatingAdmissionPolicy\n/);
    } finally {
      spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'delete', '--ignore-not-found', '-f', '-'], { input: guard });
      spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'delete', '--ignore-not-found', 'mutatingwebhookconfiguration', name]);
    }
  });
});
