import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { CoordinationV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { KubernetesLeaseStore } from '../../src/backends/kubernetes/store.js';
import { connect } from '../../src/kube/connect.js';

/** The control plane started by test/support/with-control-plane.ts; tests fail fast without it. */
export function env() {
  const admin = process.env.LEASEHOLD_TEST_KUBECONFIG;
  if (!admin || !existsSync(admin)) {
    throw new Error('LEASEHOLD_TEST_KUBECONFIG is not set: run this tier through `npm test` or `npm run test:kubernetes`');
  }
  return {
    admin,
    restricted: process.env.LEASEHOLD_TEST_RESTRICTED_KUBECONFIG!,
    restrictedUser: process.env.LEASEHOLD_TEST_RESTRICTED_USER!,
    binDir: process.env.LEASEHOLD_TEST_BIN_DIR!,
    cpDir: process.env.LEASEHOLD_TEST_CONTROL_PLANE_DIR!,
  };
}

function adminConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(env().admin);
  return kc;
}

export const admin = {
  core: () => adminConfig().makeApiClient(CoreV1Api),
  coordination: () => adminConfig().makeApiClient(CoordinationV1Api),
  rbac: () => adminConfig().makeApiClient(RbacAuthorizationV1Api),
};

let seq = 0;
/** A fresh namespace per test, so tests never see each other's Leases. */
export async function freshNamespace(prefix = 'lh'): Promise<string> {
  const name = `${prefix}-${process.pid}-${seq++}`;
  await admin.core().createNamespace({ body: { metadata: { name } } });
  return name;
}

export function storeFor(namespace: string, kubeconfig = env().admin): KubernetesLeaseStore {
  return storeFromConfig({ namespace, kubeconfig });
}

/** A store on a connection of its own, as the sidecar connects (src/kube/connect.ts). */
export function storeFromConfig(opts: { namespace?: string; kubeconfig?: string }): KubernetesLeaseStore {
  const { client, namespace } = connect(opts);
  return new KubernetesLeaseStore(client, namespace);
}

export function kubectl(args: string[], kubeconfig = env().admin): string {
  return execFileSync(join(env().binDir, 'kubectl'), ['--kubeconfig', kubeconfig, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

/** The Lease exactly as stored, through kubectl (not through the code under test). */
export function rawLease(namespace: string, name: string): { metadata: Record<string, unknown>; spec: Record<string, unknown> } {
  return JSON.parse(kubectl(['get', 'lease', name, '-n', namespace, '-o', 'json'])) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
}

export function backendArgs(namespace: string, lease: string, kubeconfig = env().admin): string[] {
  return ['--backend', 'kubernetes', '--kubeconfig', kubeconfig, '--namespace', namespace, '--lease', lease];
}
