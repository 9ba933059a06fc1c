/**
 * Policy mode's namespace rules on the real API server (issue 44): the chart's
 * MutatingAdmissionPolicy and ValidatingAdmissionPolicy, rendered by `helm template` with
 * `injection.mode=policy` and `webhook.namespaceOptIn=true`, act on a labelled pod only in a
 * namespace labelled `leasehold.io/injection: enabled` that is neither excluded
 * (`webhook.excludeNamespaces`) nor the release's own; everywhere else the pod is created as sent.
 * Both bindings' namespaceSelectors are what keeps them out: without either, this test fails.
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
const NAME = `lho-nsrules-${process.pid}`;
/** A value of leasehold.io/inject of this test's own: no other install's webhook or policy selects these pods. */
const INJECT_VALUE = `nsrules-${process.pid}`;
const OPT_IN = 'leasehold.io/injection=enabled';

interface Created {
  containers?: string[];
  refusal?: string;
}

/** A server-side dry-run create of a pod labelled for this install: its container names as admission left them, or the refusal. */
function dryRunCreate(namespace: string, annotations: Record<string, string> = {}, labelled = true): Created {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'app', labels: labelled ? { 'leasehold.io/inject': INJECT_VALUE } : {}, annotations },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
  };
  const r = spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'create', '--dry-run=server', '-n', namespace, '-o', 'json', '-f', '-'], {
    input: JSON.stringify(pod),
    encoding: 'utf8',
  });
  if (r.status !== 0) return { refusal: r.stderr.trim() };
  const out = JSON.parse(r.stdout) as { spec: { containers: { name: string }[]; initContainers?: { name: string }[] } };
  return { containers: [...out.spec.containers, ...(out.spec.initContainers ?? [])].map((c) => c.name) };
}

const injected = (c: Created) => c.containers?.includes('leasehold') === true;
/** An annotation the validating policy refuses (the port rule): it shows where that binding acts. */
const BAD = { 'leasehold.io/port': '70000' };

describe('policy mode with webhook.namespaceOptIn: the namespaces the policies act in', () => {
  let ops = '';
  let optedIn = '';
  let notOptedIn = '';
  let excluded = '';
  let later = '';
  let rendered = '';

  before(async () => {
    ops = await freshNamespace('nsrules-op');
    optedIn = await freshNamespace('nsrules-in');
    notOptedIn = await freshNamespace('nsrules-out');
    excluded = await freshNamespace('nsrules-excl');
    later = await freshNamespace('nsrules-later');
    // This control plane runs no controller-manager: pods need their ServiceAccount made by hand.
    for (const ns of [ops, optedIn, notOptedIn, excluded, later]) kubectl(['create', 'serviceaccount', 'default', '-n', ns]);
    // The excluded namespace and the release's own are opted in too: the exclusion must win.
    for (const ns of [ops, optedIn, excluded]) kubectl(['label', 'namespace', ns, OPT_IN]);

    const r = spawnSync(
      buildTool('build-helm.sh'),
      [
        'template',
        'ops',
        CHART,
        '--namespace',
        ops,
        '--kube-version',
        '1.37.0',
        '-s',
        'templates/admission-policy.yaml',
        '-s',
        'templates/validating-policy.yaml',
        ...[
          'injection.mode=policy',
          `fullnameOverride=${NAME}`,
          `webhook.injectValue=${INJECT_VALUE}`,
          'webhook.namespaceOptIn=true',
          `webhook.excludeNamespaces[0]=${excluded}`,
        ].flatMap((s) => ['--set', s]),
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
    rendered = r.stdout;
    kubectlIn(['create', '-f', '-'], rendered);

    // Admission sees new policies through its informers: wait until each acts where it should,
    // so that a pod left alone below is left alone by the rules, not by a policy not yet loaded.
    await waitFor('the mutating policy to inject', () => injected(dryRunCreate(optedIn)), 60_000, 200);
    await waitFor('the validating policy to refuse', () => dryRunCreate(optedIn, BAD).refusal?.includes(`ValidatingAdmissionPolicy '${NAME}'`), 60_000, 200);
  });

  after(() => {
    // Cluster-scoped objects outlive the namespaces: delete them whatever happened above.
    if (rendered) spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'delete', '--ignore-not-found', '-f', '-'], { input: rendered });
    for (const ns of [ops, optedIn, notOptedIn, excluded, later]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('an opted-in namespace: a labelled pod is injected and a bad annotation refused; an unlabelled pod is left alone', () => {
    assert.deepEqual(dryRunCreate(optedIn).containers, ['app', 'leasehold']);
    assert.match(dryRunCreate(optedIn, BAD).refusal ?? 'created', /leasehold: annotation leasehold\.io\/port "70000" is invalid/);
    assert.deepEqual(dryRunCreate(optedIn, BAD, false).containers, ['app']);
  });

  it('a namespace without leasehold.io/injection: enabled: the labelled pod is created as sent, bad annotation and all', () => {
    assert.deepEqual(dryRunCreate(notOptedIn).containers, ['app']);
    const bad = dryRunCreate(notOptedIn, BAD);
    assert.deepEqual(bad.containers, ['app'], `refused: ${bad.refusal}`);
  });

  it("an excluded namespace and the release's own, though opted in: created as sent", () => {
    for (const ns of [excluded, ops]) {
      assert.deepEqual(dryRunCreate(ns).containers, ['app'], ns);
      const bad = dryRunCreate(ns, BAD);
      assert.deepEqual(bad.containers, ['app'], `${ns} refused: ${bad.refusal}`);
    }
  });

  it('a namespace opted in later: its labelled pods are injected from then on', async () => {
    assert.deepEqual(dryRunCreate(later).containers, ['app']);
    kubectl(['label', 'namespace', later, OPT_IN]);
    await waitFor('the namespace label to be seen by admission', () => injected(dryRunCreate(later)), 30_000, 200);
  });
});
