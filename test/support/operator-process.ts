/**
 * `leasehold operator` as a process on this host, with the MutatingWebhookConfiguration that
 * points the API server at it through a url clientConfig (no cluster: no Service to route to).
 * Shared by the Kubernetes-tier operator tests.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startCli, isAlive, type Proc } from './cli.js';
import { env, kubectl } from './kube.js';

/** kubectl with a manifest on its standard input. */
export function kubectlIn(args: string[], input: string): string {
  return execFileSync(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, ...args], { input, stdio: ['pipe', 'pipe', 'pipe'] }).toString();
}

export interface OperatorOptions {
  namespace: string;
  identity: string;
  /** The port it listens on at 127.0.0.1, the one the webhook configuration's url names. */
  port: number;
  webhook: string;
  /** Flags particular to the test (timings, certificate mode, ...). */
  flags?: string[];
  /** Another identity than the admin's (a ServiceAccount's, to run with a chart's rights only). */
  kubeconfig?: string;
}

/** Starts `leasehold operator` with the flags every test needs, then the test's own. */
export function startOperatorProcess(o: OperatorOptions): Proc {
  return startCli([
    'operator',
    '--kubeconfig',
    o.kubeconfig ?? env().admin,
    '--namespace',
    o.namespace,
    '--identity',
    o.identity,
    '--listen',
    `127.0.0.1:${o.port}`,
    '--webhook-configuration',
    o.webhook,
    '--sidecar-image',
    'leasehold:test',
    '--tls-check',
    '1s',
    ...(o.flags ?? []),
  ]);
}

export interface WebhookOptions {
  name: string;
  port: number;
  failurePolicy: 'Fail' | 'Ignore';
  /** Only these namespaces: other tests share this API server. */
  namespaces: string[];
  caBundle?: string;
  /** The value of leasehold.io/inject it selects (the operator's --inject-value); "true" by default. */
  injectValue?: string;
}

/** The MutatingWebhookConfiguration that sends labelled pods' creation to the operator on this host. */
export function webhookConfiguration(o: WebhookOptions) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: o.name },
    webhooks: [
      {
        name: 'inject.leasehold.io',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: o.failurePolicy,
        timeoutSeconds: 5,
        reinvocationPolicy: 'Never',
        clientConfig: { url: `https://127.0.0.1:${o.port}/mutate-pods`, ...(o.caBundle ? { caBundle: o.caBundle } : {}) },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }],
        objectSelector: { matchLabels: { 'leasehold.io/inject': o.injectValue ?? 'true' } },
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: o.namespaces }] },
      },
    ],
  };
}

/** The caBundle the webhook configuration holds now ('' when none). */
export function webhookCaBundle(name: string): string {
  const current = JSON.parse(kubectl(['get', 'mutatingwebhookconfiguration', name, '-o', 'json'])) as { webhooks: { clientConfig: { caBundle?: string } }[] };
  return current.webhooks[0]?.clientConfig.caBundle ?? '';
}

/** Cleanup: kills the processes still running and deletes the webhook configuration (best effort, so the rest of the cleanup runs). */
export function stopOperators(procs: (Proc | undefined)[], webhook: string): void {
  for (const p of procs) if (p && isAlive(p.pid)) p.kill('SIGKILL');
  try {
    kubectl(['delete', 'mutatingwebhookconfiguration', webhook, '--ignore-not-found']);
  } catch {
    // best effort
  }
}
