/**
 * The parts of a coordination.k8s.io/v1 Lease the Kubernetes stores read (store.ts for a lease,
 * group-store.ts for a shard group's records); every other field is carried as is.
 */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
  [other: string]: unknown;
}

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [other: string]: unknown;
  };
  spec?: LeaseSpec;
}

export interface LeaseList {
  metadata?: { resourceVersion?: string };
  items?: Lease[];
}

/** leaseTransitions is an int32 in coordination.k8s.io/v1: the API server refuses more. */
export const MAX_INT32 = 2_147_483_647;

/**
 * The Lease a PUT replaces `base` with, as both stores write it: the fields we do not own carried
 * from `base`, ours (`metadata`: annotations, labels) over them, and the compare-and-swap's
 * preconditions (the resourceVersion read, and the uid, without which a PUT recreates a deleted
 * Lease).
 */
export function replacementLease(
  base: Lease,
  metadata: Pick<NonNullable<Lease['metadata']>, 'annotations' | 'labels'>,
  spec: LeaseSpec,
  at: { name: string; namespace: string; resourceVersion: string; uid: string | undefined },
): Lease {
  return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { ...base.metadata, ...metadata, ...at }, spec };
}
