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
} as const;

/** Written by the injector: the lease the pod was injected for, read back by the reconciler. */
export const INJECTED_LEASE = 'leasehold.io/injected-lease';
/** Written by the injector: "true" when the sidecar keeps pod labels (its Role then holds pods). */
export const INJECTED_POD_LABEL = 'leasehold.io/injected-pod-label';

/** The injected container's name and the status volume's: a pod holding either is left unchanged or refused. */
export const SIDECAR_NAME = 'leasehold';
export const STATUS_VOLUME = 'leasehold-status';
export const STATUS_MOUNT = '/leader';
