import { InvalidConfigError } from '../errors.js';
import type { LeaseStore } from './lease-store.js';
import type { Logger } from '../log.js';

export type BackendName = 'sqlite' | 'kubernetes';
export const BACKENDS: readonly BackendName[] = ['sqlite', 'kubernetes'];

export interface StoreSettings {
  backend: BackendName;
  /** sqlite: the database file. */
  db: string;
  /** kubernetes: the Lease's namespace; undefined = the pod's own, else "default". */
  namespace?: string;
  /** kubernetes: a kubeconfig path; undefined = in-cluster, then $KUBECONFIG, then ~/.kube/config. */
  kubeconfig?: string;
  /** Bound on one API request, ms. */
  requestTimeoutMs?: number;
  /** Where the store reports what it does on its own (sqlite: reopening a replaced file). */
  log?: Logger;
}

/** Opens the configured backend. Each backend's code (and SQLite's native module) is loaded only when asked for. */
export async function openStore(s: StoreSettings): Promise<LeaseStore> {
  switch (s.backend) {
    case 'sqlite': {
      const { SqliteLeaseStore } = await import('./sqlite-store.js');
      return new SqliteLeaseStore(s.db, { onReopen: (message) => s.log?.warn(message) });
    }
    case 'kubernetes': {
      const { KubernetesLeaseStore } = await import('./kubernetes-store.js');
      return KubernetesLeaseStore.fromConfig({ namespace: s.namespace, kubeconfig: s.kubeconfig, requestTimeoutMs: s.requestTimeoutMs });
    }
    default:
      throw new InvalidConfigError(`--backend ${JSON.stringify(s.backend)} is not supported: use one of ${BACKENDS.join(', ')}`);
  }
}
