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
