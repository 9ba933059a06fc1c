import { existsSync } from 'node:fs';
import { InvalidConfigError, StoreOpenError } from '../errors.js';
import type { LeaseStore } from './lease-store.js';
import type { GroupStore } from './group-store.js';
import { loadDriver } from './driver.js';
import { guardedLogger, type Logger } from '../log.js';
import type { KubeConnection } from '../kube/connect.js';

export type { KubeConnection };

export type BackendName = 'sqlite' | 'kubernetes' | 'postgres';
export const BACKENDS: readonly BackendName[] = ['sqlite', 'kubernetes', 'postgres'];

export interface StoreSettings {
  backend: BackendName;
  /** sqlite: the database file. */
  db: string;
  /** kubernetes: the Lease's namespace; undefined = the kubeconfig context's, the pod's own, else "default". */
  namespace?: string | undefined;
  /** kubernetes: a kubeconfig path; undefined = $KUBECONFIG, ~/.kube/config, then in-cluster. */
  kubeconfig?: string | undefined;
  /** postgres: a postgres:// URL; undefined = the PG* variables and ~/.pgpass. Never logged. */
  postgresUrl?: string | undefined;
  /** postgres: the table, `schema.table` (default public.leases). */
  postgresTable?: string | undefined;
  /** Bound on one API request that carries no signal of its own, ms. */
  requestTimeoutMs?: number | undefined;
  /**
   * sqlite: how long a write waits for another process's lock, ms (default 1000). It holds the
   * event loop that long: a candidate gives storeTimeouts(timings).busyTimeoutMs.
   */
  busyTimeoutMs?: number | undefined;
  /** Where the store reports what it does on its own (sqlite: reopening a replaced file). */
  log?: Logger | undefined;
  /**
   * Only read (`leasehold status`): SQLite opens the file read-only and refuses a missing one
   * rather than create it; nothing is ever written.
   */
  readonly?: boolean | undefined;
  /** sqlite: accept a db on a network filesystem (refused otherwise), only if every candidate runs on this one machine. */
  allowNetworkFilesystem?: boolean | undefined;
  /** kubernetes: an API connection made by connectKubernetes, shared with other callers (the pod labeller). */
  kube?: KubeConnection | undefined;
}

/** Connects to the cluster (src/kube/connect.ts), loading the Kubernetes code only when asked for. */
export async function connectKubernetes(s: Pick<StoreSettings, 'namespace' | 'kubeconfig' | 'requestTimeoutMs'>): Promise<KubeConnection> {
  const { connect } = await import('../kube/connect.js');
  return connect(s);
}

/** A store that keeps both leases and shard groups' records (every backend's does). */
export type OpenedStore = LeaseStore & GroupStore;

/**
 * Opens the configured backend: one store for leases and for shard groups (their records in a
 * table or Leases of their own). Each backend's code (and SQLite's native module) is loaded
 * only when asked for.
 */
export async function openStore(s: StoreSettings): Promise<OpenedStore> {
  // An app's logger may throw: a store's logging must not fail its reopen or its queries.
  const log = s.log && guardedLogger(s.log);
  switch (s.backend) {
    case 'sqlite': {
      const { SqliteLeaseStore } = await loadDriver('better-sqlite3', 'sqlite', () => import('./sqlite/store.js'));
      if (s.readonly) {
        const { checkSqliteFile } = await import('./sqlite/file-check.js');
        checkSqliteFile(s.db);
        if (!existsSync(s.db)) throw new StoreOpenError(`no lease store at ${s.db}: no candidate has run with this database file yet`, { field: 'db' });
        return new SqliteLeaseStore(s.db, { readonly: true, onOversized: (message) => log?.warn(message) });
      }
      return new SqliteLeaseStore(s.db, {
        busyTimeoutMs: s.busyTimeoutMs,
        onReopen: (message) => log?.warn(message),
        onOversized: (message) => log?.warn(message),
        allowNetworkFilesystem: s.allowNetworkFilesystem ?? false,
      });
    }
    case 'postgres': {
      const { PostgresLeaseStore } = await import('./postgres/store.js');
      return PostgresLeaseStore.open({ url: s.postgresUrl, table: s.postgresTable, requestTimeoutMs: s.requestTimeoutMs, log, readonly: s.readonly });
    }
    case 'kubernetes': {
      const { KubernetesLeaseStore } = await import('./kubernetes/store.js');
      const kube = s.kube ?? (await connectKubernetes(s));
      return new KubernetesLeaseStore(kube.client, kube.namespace);
    }
    default:
      throw new InvalidConfigError(`backend ${JSON.stringify(s.backend)} is not supported: use one of ${BACKENDS.join(', ')}`, {
        field: 'backend',
        rule: `must be one of ${BACKENDS.join(', ')}`,
      });
  }
}
