/**
 * The pod annotations the injector reads (docs/operator.md lists each with its default), and the
 * label that opts a pod in. A label, not an annotation, because the webhook configuration's
 * objectSelector can match only labels: the API server then calls the webhook for those pods only.
 */
export const INJECT_LABEL = 'leasehold.io/inject';

export const ANNOTATION = {
  lease: 'leasehold.io/lease',
  leaseDuration: 'leasehold.io/lease-duration',
  renewDeadline: 'leasehold.io/renew-deadline',
  retryPeriod: 'leasehold.io/retry-period',
  readyWhen: 'leasehold.io/ready-when',
  podLabel: 'leasehold.io/pod-label',
  nativeSidecar: 'leasehold.io/native-sidecar',
  containers: 'leasehold.io/containers',
  port: 'leasehold.io/port',
  health: 'leasehold.io/health',
  healthContainer: 'leasehold.io/health-container',
  /** Shard mode (docs/shards.md): the sidecar is a member of the group named by the lease annotation, with this many shards. */
  shards: 'leasehold.io/shards',
  /** With shards: the group's member slots. */
  maxMembers: 'leasehold.io/max-members',
  /**
   * Kinds whose objects labelled leasehold.io/fenced-by=<lease> the API server fences with the
   * Lease's token (src/operator/fence-objects.ts); only when the operator runs with --fence-objects-policy.
   */
  fenceObjects: 'leasehold.io/fence-objects',
} as const;

/** Written by the injector: the lease the pod was injected for, read back by the reconciler. */
export const INJECTED_LEASE = 'leasehold.io/injected-lease';
/** Written by the injector: "true" when the sidecar keeps pod labels (its Role then holds pods). */
export const INJECTED_POD_LABEL = 'leasehold.io/injected-pod-label';
/**
 * Written by the injector for a member of a shard group only: the group's shard count and member
 * slots, which the reconciler's Role names by resourceNames. Absent for a lease's candidate (the
 * webhook removes any value a pod came with).
 */
export const INJECTED_SHARDS = 'leasehold.io/injected-shards';
export const INJECTED_MAX_MEMBERS = 'leasehold.io/injected-max-members';

/**
 * Written by the injector: an HMAC of the namespace, ServiceAccount, lease and pod-label mode (and
 * a shard group's counts) under the operator's own key (src/operator/injection-mark.ts). The reconciler grants only pods
 * whose mark is valid: the other two annotations and the container's name a pod creator can write.
 */
export const INJECTED_MARK = 'leasehold.io/injected-mark';

/** The namespace label that opts a namespace in when the operator runs with --namespace-opt-in (the chart's webhook.namespaceOptIn). */
export const NAMESPACE_OPT_IN = { key: 'leasehold.io/injection', value: 'enabled' } as const;

/**
 * A namespace annotation its owner sets: comma-separated names of existing Leases that were not
 * made for leasehold (another controller's) and that injected pods of the namespace may still be
 * granted. Any other existing Lease without leasehold's label is refused.
 */
export const ALLOWED_LEASES = 'leasehold.io/allowed-leases';

/** The injected container's name and the status volume's: a pod holding either is left unchanged or refused. */
export const SIDECAR_NAME = 'leasehold';
export const STATUS_VOLUME = 'leasehold-status';
export const STATUS_MOUNT = '/leader';
