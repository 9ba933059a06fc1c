/**
 * Issue 44's one source of truth: the operator chart's admission policies (injection.mode=policy,
 * rendered by `helm template`, so this covers the chart's YAML and not a copy) against the
 * webhook (`leasehold operator` on this host, as in operator.test.ts), on one table of pods. Each
 * pod is created by server-side dry run in a namespace the webhook serves and in one bound to the
 * policies; the two results must be equal field for field (the webhook's mark aside: a policy
 * holds no secret to sign one) with the same warnings, and a pod one refuses the other refuses too, naming the same
 * annotation, in the same words where docs/operator.md does not say otherwise.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, waitFor, type Proc } from '../support/cli.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { buildTool } from '../support/build-tool.js';
import { freePort } from '../support/control-plane.js';
import { kubectlIn, startOperatorProcess, stopOperators, webhookConfiguration } from '../support/operator-process.js';
import { ANNOTATION, INJECTED_MARK } from '../../src/operator/annotations.js';
import { PARITY_ROWS, type ParityRow } from './policy-parity-rows.js';

const CHART = join(REPO, 'deploy/helm/leasehold-operator');
const NAME = `lho-parity-${process.pid}`;
/** A value of leasehold.io/inject of this test's own: no other install's webhook or policy selects these pods. */
const INJECT_VALUE = `parity-${process.pid}`;

type Json = Record<string, unknown>;
interface PodJson {
  metadata: { name?: string; annotations?: Record<string, string>; [k: string]: unknown };
  spec: Json;
}

/** A server-side dry-run create: the pod as admission left it and the warnings kubectl printed, or the refusal it printed. */
function dryRunCreate(namespace: string, pod: Json): { pod?: PodJson; refusal?: string; warnings: string[] } {
  const r = spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'create', '--dry-run=server', '-n', namespace, '-o', 'json', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', ...pod }),
  });
  const stderr = r.stderr.toString().trim();
  // The injector's warnings only: the API server adds its own (a duplicate port, ...). The
  // webhook's are printed as they are, the validating policy's after its name.
  const warnings = stderr.split('\n').flatMap((l) => /^Warning: .*?(leasehold\.io\/health: no app health .*)$/.exec(l)?.slice(1) ?? []);
  if (r.status === 0) return { pod: JSON.parse(r.stdout.toString()) as PodJson, warnings };
  return { refusal: stderr, warnings };
}

/** The pod of a row, labelled for this test's injector. */
function podOf(row: ParityRow): Json {
  const meta = (row.pod.metadata ?? {}) as Json;
  return { ...row.pod, metadata: { ...meta, labels: { ...(meta.labels as Json | undefined), 'leasehold.io/inject': INJECT_VALUE } } };
}

/**
 * What must be equal: the pod's metadata a pod creator or an injector writes, and its spec. The
 * ServiceAccount admission plugin names the token volume with a random suffix, and the API server
 * a pod from its generateName likewise, in both namespaces.
 */
function comparable(pod: PodJson): Json {
  const { [INJECTED_MARK]: _mark, ...annotations } = pod.metadata.annotations ?? {};
  const m = pod.metadata;
  const text = JSON.stringify({
    // A name the API server generated differs between the two creations.
    metadata: { name: m.generateName ? undefined : m.name, generateName: m.generateName, labels: m.labels, annotations, ownerReferences: m.ownerReferences },
    spec: pod.spec,
  }).replace(/kube-api-access-[a-z0-9]+/g, 'kube-api-access-*');
  return JSON.parse(text) as Json;
}

/** The injector's own words in a refusal: the webhook's and the validating policy's prefixes differ. */
function reason(refusal: string): string {
  const m = /denied (?:the )?request: (leasehold: [\s\S]*)$/.exec(refusal);
  return m ? m[1]!.trim() : refusal;
}

function helmTemplate(set: string[]): string {
  const r = spawnSync(
    buildTool('build-helm.sh'),
    [
      'template',
      'ops',
      CHART,
      '--namespace',
      'leasehold-system',
      '--kube-version',
      '1.37.0',
      '-s',
      'templates/admission-policy.yaml',
      '-s',
      'templates/validating-policy.yaml',
      ...set.flatMap((s) => ['--set', s]),
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

describe('injection by policy equals injection by webhook (issue 44 parity table)', () => {
  let ops = '';
  let webhookNs = '';
  let policyNs = '';
  let rendered = '';
  let webhook = '';
  const started: Proc[] = [];

  before(async () => {
    ops = await freshNamespace('parity-op');
    webhookNs = await freshNamespace('parity-webhook');
    policyNs = await freshNamespace('parity-policy');
    // This control plane runs no controller-manager: pods need their ServiceAccount made by hand.
    for (const ns of [webhookNs, policyNs]) kubectl(['create', 'serviceaccount', 'default', '-n', ns]);

    webhook = NAME;
    const port = await freePort();
    kubectlIn(
      ['create', '-f', '-'],
      JSON.stringify(webhookConfiguration({ name: webhook, port, failurePolicy: 'Fail', namespaces: [webhookNs], injectValue: INJECT_VALUE })),
    );
    started.push(
      startOperatorProcess({ namespace: ops, identity: 'parity-op', port, webhook, flags: ['--extra-host', '127.0.0.1', '--inject-value', INJECT_VALUE] }),
    );

    // The chart's policies as an install would render them, with the webhook's image and a
    // namespace rule that keeps them off the webhook's namespace (the only change to the defaults).
    rendered = helmTemplate([
      'injection.mode=policy',
      `fullnameOverride=${NAME}`,
      `webhook.injectValue=${INJECT_VALUE}`,
      `webhook.excludeNamespaces[0]=${webhookNs}`,
      `webhook.excludeNamespaces[1]=${ops}`,
      'image.repository=leasehold',
      'image.tag=test',
    ]);
    kubectlIn(['create', '-f', '-'], rendered);

    // Admission sees new configurations and policies through its informers: wait until each acts.
    const probe = { metadata: { name: 'probe' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } };
    const injected = (ns: string) => () => {
      const r = dryRunCreate(ns, podOf({ name: 'probe', pod: probe }));
      return r.pod?.spec.containers !== undefined && (r.pod.spec.containers as { name: string }[]).some((c) => c.name === 'leasehold');
    };
    await waitFor('the webhook to inject', injected(webhookNs), 60_000, 200);
    await waitFor('the mutating policy to inject', injected(policyNs), 60_000, 200);
    const bad = podOf({ name: 'probe', pod: { ...probe, metadata: { name: 'probe', annotations: { [ANNOTATION.lease]: 'Bad_Lease' } } } });
    await waitFor('the validating policy to refuse', () => dryRunCreate(policyNs, bad).refusal?.includes('ValidatingAdmissionPolicy'), 60_000, 200);
  });

  after(() => {
    stopOperators(started, webhook);
    // Cluster-scoped objects outlive the namespaces: delete them whatever happened above.
    if (rendered) spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, 'delete', '--ignore-not-found', '-f', '-'], { input: rendered });
    for (const ns of [ops, webhookNs, policyNs]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('the table names every annotation the injector reads, in a pod it injects and in one it refuses', () => {
    for (const key of Object.values(ANNOTATION)) {
      const named = (r: ParityRow) => key in ((r.pod.metadata as { annotations?: Json } | undefined)?.annotations ?? {});
      assert.ok(
        PARITY_ROWS.some((r) => !r.refused && named(r)),
        `no injected row sets ${key}`,
      );
      assert.ok(
        PARITY_ROWS.some((r) => r.refused && named(r)),
        `no refused row sets ${key}`,
      );
    }
  });

  for (const row of PARITY_ROWS) {
    it(row.refused ? `refuses in both: ${row.name}` : `injects alike: ${row.name}`, () => {
      const byWebhook = dryRunCreate(webhookNs, podOf(row));
      const byPolicy = dryRunCreate(policyNs, podOf(row));
      if (!row.refused) {
        assert.ok(byWebhook.pod, `the webhook refused: ${byWebhook.refusal}`);
        assert.ok(byPolicy.pod, `the policy refused: ${byPolicy.refusal}`);
        assert.deepEqual(comparable(byPolicy.pod), comparable(byWebhook.pod));
        assert.deepEqual(byPolicy.warnings, byWebhook.warnings, 'the same warnings');
        assert.equal(byWebhook.warnings.length, row.warns ? 1 : 0, `warnings: ${JSON.stringify(byWebhook.warnings)}`);
        row.check?.(byPolicy.pod as unknown as Json);
        return;
      }
      assert.ok(byWebhook.refusal, 'the webhook injected it');
      assert.ok(byPolicy.refusal, `the policy injected it: ${JSON.stringify(byPolicy.pod?.spec)}`);
      assert.match(byWebhook.refusal, /admission webhook "inject\.leasehold\.io" denied the request: leasehold: /);
      assert.match(byPolicy.refusal, new RegExp(`ValidatingAdmissionPolicy '${NAME}' with binding '${NAME}' denied request: leasehold: `));
      const words = { webhook: reason(byWebhook.refusal), policy: reason(byPolicy.refusal) };
      if (row.refused === 'same words') assert.equal(words.policy, words.webhook);
      else for (const r of [words.webhook, words.policy]) assert.ok(r.includes(row.refused.names), `${JSON.stringify(row.refused.names)} not in ${r}`);
    });
  }

  it('a pod the webhook injected, created again, is left unchanged by both', () => {
    const row = PARITY_ROWS.find((r) => r.name === 'a lease and pod labels')!;
    const once = dryRunCreate(webhookNs, podOf(row)).pod!;
    assert.ok(once.metadata.annotations?.[INJECTED_MARK], 'the webhook marked it');
    // The pod as a copy would send it: what the API server assigned left out.
    const { namespace: _ns, uid: _uid, creationTimestamp: _ts, resourceVersion: _rv, managedFields: _mf, ...metadata } = once.metadata as Json;
    const again = { metadata, spec: once.spec };
    const byWebhook = dryRunCreate(webhookNs, again);
    const byPolicy = dryRunCreate(policyNs, again);
    assert.ok(byWebhook.pod, byWebhook.refusal);
    assert.ok(byPolicy.pod, byPolicy.refusal);
    assert.deepEqual(comparable(byWebhook.pod), comparable(once));
    assert.deepEqual(comparable(byPolicy.pod), comparable(once));
  });
});
