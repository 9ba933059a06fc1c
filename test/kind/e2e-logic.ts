/**
 * The decisions of the kind e2e suite, kept pure so they are unit-tested here although the
 * suite itself needs Docker and kind (test/kind/e2e.test.ts).
 */
export interface PodView {
  name: string;
  ready: boolean;
  deleting: boolean;
  /** /leader/status.json of the pod's sidecar, or null when it could not be read. */
  status: { isLeader: boolean; fencingToken: number | null; validUntil: string | null } | null;
}

export interface LeaseView {
  holderIdentity?: string;
  leaseTransitions?: number;
}

/**
 * The single leader, judged three ways that must agree: the Lease's holder is a live pod of
 * the release, that pod's status file says leader with a valid validUntil and the Lease's
 * token, and no other pod's status says leader. Returns the leader's name, or why not.
 */
export function singleLeader(pods: PodView[], lease: LeaseView, now: Date): { leader?: string; token?: number; problem?: string } {
  const live = pods.filter((p) => !p.deleting);
  const holder = live.find((p) => p.name === lease.holderIdentity);
  if (!holder) return { problem: `the Lease holder ${lease.holderIdentity ?? '(none)'} is not a live pod of the release` };
  const claiming = live.filter((p) => p.status?.isLeader && p.status.validUntil !== null && Date.parse(p.status.validUntil) > now.getTime());
  if (claiming.length !== 1) return { problem: `${claiming.length} pods claim leadership: ${claiming.map((p) => p.name).join(', ') || 'none'}` };
  if (claiming[0]!.name !== holder.name) return { problem: `${claiming[0]!.name} claims leadership but the Lease names ${holder.name}` };
  if (claiming[0]!.status!.fencingToken !== lease.leaseTransitions) {
    return { problem: `token mismatch: status ${claiming[0]!.status!.fencingToken}, Lease ${lease.leaseTransitions}` };
  }
  return { leader: holder.name, token: lease.leaseTransitions! };
}

/** Every live pod Ready: with the chart's default readiness (elected-any) all pods are. */
export function allReady(pods: PodView[], want: number): boolean {
  const live = pods.filter((p) => !p.deleting);
  return live.length === want && live.every((p) => p.ready);
}

/**
 * How long a deleted leader pod may take to be replaced as leader. Deletion sends SIGTERM, so
 * the sidecar releases and a standby takes over at once through its watch; if the release were
 * lost, the lease would expire: leaseDuration + 2.2 × retryPeriod, plus scheduling slack.
 */
export function failoverBoundMs(leaseDurationMs: number, retryPeriodMs: number, slackMs = 10_000): number {
  return leaseDurationMs + 2.2 * retryPeriodMs + slackMs;
}
