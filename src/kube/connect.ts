import { KubeClient } from './api-client.js';
import { loadConnection } from './kubeconfig.js';

/** One API client and the namespace it works in, shared by the lease store and the pod labeller. */
export interface KubeConnection {
  client: KubeClient;
  namespace: string;
}

/**
 * Connects the way every kubernetes caller here does: kubeconfig from the argument, else
 * $KUBECONFIG, ~/.kube/config, then the pod's service account (kubeconfig.ts); the namespace
 * from the argument, the kubeconfig context or the pod, else "default".
 */
export function connect(opts: { kubeconfig?: string | undefined; namespace?: string | undefined; requestTimeoutMs?: number | undefined }): KubeConnection {
  const conn = loadConnection(opts.kubeconfig);
  return { client: new KubeClient(conn, opts.requestTimeoutMs), namespace: opts.namespace ?? conn.namespace ?? 'default' };
}
