/**
 * The app's health as the election sees it: whether this candidate may campaign (and keep
 * leading), why not, and a way to hear of changes. The elector takes any object of this shape
 * (CandidateOptions.eligibility); AppHealth (a probe) and ManualHealth (the caller's own signal)
 * are the two this package makes.
 */
export interface Eligibility {
  /** True when the app is healthy enough to lead: campaign, claim, keep the lease. */
  eligible(): boolean;
  /** Null while eligible; otherwise why the candidate stands aside, and since when. */
  standAside(): StandAside | null;
  /**
   * `onChange` runs after each change of eligibility, state or reason (what `standAside()` says):
   * whoever shows the reason (the status files, /leader) hears of a new one only through it. The
   * returned function unsubscribes.
   */
  subscribe(onChange: () => void): () => void;
}

export interface StandAside {
  /** One line: `app unhealthy: GET http://127.0.0.1:8080/healthz: connection refused`. */
  reason: string;
  /** When the candidate became ineligible (wall time). */
  since: Date;
}

/** unknown: no verdict yet (or the sidecar could not probe); never eligible. */
export type HealthState = 'unknown' | 'healthy' | 'unhealthy';

export interface HealthSnapshot {
  state: HealthState;
  /** When `state` last changed (wall time). */
  since: Date;
  /** The last failure's reason while unhealthy or unknown; null while healthy. */
  reason: string | null;
  eligible: boolean;
  /** While healthy but held down: when it becomes eligible unless a probe fails first. */
  eligibleAt: Date | null;
}
