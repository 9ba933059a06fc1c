/**
 * What the election engine is given and what it tells: its options, its listener, its terms and
 * its snapshot. The engine itself (candidate-loop.ts) is internal; LeaderElection and the sidecar build
 * it from these.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { LeaseRecord, LeaseStore } from '../backends/lease-store.js';
import type { ElectionConfig } from '../config/election-options.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';

export interface LeadershipTerm {
  token: number;
  acquiredAt: Date;
  /** Wall time at which the last successful acquire/renew request started. */
  renewedAt: Date;
  /** renewedAt + renewDeadline: after this the leader has stepped down or is frozen. */
  validUntil: Date;
  /** onStartedLeading only: ms from the moment this candidate saw the lease free to its takeover; absent when it created the lease. */
  sinceFreeMs?: number;
}

export interface CandidateListener {
  /** This candidate became leader with a new fencing token. */
  onStartedLeading?(term: LeadershipTerm): void;
  /** A renewal succeeded; validUntil moved on. */
  onRenewed?(term: LeadershipTerm): void;
  /** This candidate is no longer leader; called before anything else happens. */
  onStoppedLeading?(reason: string): void;
  /** The holder seen in the record changed ('' = released), or the same holder began a new term (a new token). */
  onNewLeader?(holder: string, record: LeaseRecord): void;
  /** A renewal by the leader failed (it may still be inside its deadline). */
  onRenewFailed?(reason: string): void;
  /** The leader's optimistic update from its cached record failed and it fell back to a read. */
  onSlowPath?(): void;
}

/**
 * The election's own options (lease, identity, timings, contention window) come resolved
 * (resolveElectionConfig, src/config/election-options.ts): the engine checks none of them again.
 * The identity must be unique among candidates: two processes with one identity both believe they lead.
 */
export interface CandidateOptions extends ElectionConfig {
  store: LeaseStore;
  /** Default: the real clock. */
  clock?: Clock;
  /** Default Math.random; injected so tests pin the jitter. */
  random?: () => number;
  /**
   * Release the lease at the end of a term (stop(), a step-down for the app, a missed renewal
   * once the store answers again), once the gate has seen its work stop. Default true.
   */
  releaseOnCancel?: boolean;
  /**
   * Asked on stop(), after the step-down was announced and before the release is sent: the
   * release waits for it, and `false` (or a throw) leaves the lease to expire instead. The
   * sidecar answers whether "not leader" reached every reader: a release while a reader
   * still sees "leader" would let the next leader start beside it.
   */
  releaseGate?: () => boolean | Promise<boolean>;
  /**
   * A release keeps the term's acquireTime instead of writing now, so the released record
   * still says when the last term began (`leasehold run --skip-if-ran-within` reads it).
   * client-go ignores acquireTime on a released lease. Default false: client-go's release.
   */
  releaseKeepsAcquireTime?: boolean;
  /** Bound on one backend call. Default renewDeadline / 2. */
  requestTimeoutMs?: number;
  /**
   * A standby relying on a connected watch still reads the lease this often, in case the watch
   * silently stopped delivering. Default max(60 × retryPeriod, leaseDuration): 120 s. Its cost
   * grows with the number of standbys: 100 standbys re-reading every 60 × retryPeriod send
   * fewer requests than 5 of client-go's, which read every retryPeriod.
   */
  safetyRereadMs?: number;
  /**
   * Standbys claim to be the successor, in stores that keep claims (src/election/successor.ts):
   * the claimant takes a free lease at once and the others stand back. Default true; false
   * leaves the contention window as the only rule (and writes no claims).
   */
  successorClaims?: boolean;
  /**
   * The app's health as the election sees it (src/health/). While it says not eligible, this
   * candidate does not campaign (no takeover, no successor claim; it withdraws its claim), and
   * a leader steps down and releases (with releaseOnCancel) as stop() does, then stays a
   * standby. It can only make the candidate stand aside or step down earlier, never lead.
   * Default: none, always eligible.
   */
  eligibility?: Eligibility;
  /**
   * The end-of-term gate's drain: resolves once the work of the term that just ended has stopped
   * (the app's confirmation, CMD's exit, the library's promises), or false when it cannot be
   * known (the sidecar could not tell its app "not leader"). Asked once for every term that ends,
   * whatever ended it, after the step-down was announced and before the release and any new
   * term. Default: none, no work to wait for.
   */
  drain?: () => Promise<boolean | void>;
  /**
   * How long the gate waits for `drain`. Past it (or on false, or a rejection) the work may still
   * run: the lease is not released, and this candidate stands aside until the ended term's lease
   * could have expired. 0: the drain is not waited for (client-go's release). Default
   * renewDeadline.
   */
  drainTimeoutMs?: number;
  listener?: CandidateListener;
  log?: Logger;
}

export interface CandidateSnapshot {
  lease: string;
  identity: string;
  isLeader: boolean;
  /** The holder in the last record seen; null before the first successful read. */
  holder: string | null;
  /** Our term's token while we lead; null otherwise (a follower must have no token to write with). */
  fencingToken: number | null;
  /** The token in the last record seen, whoever holds it. */
  observedToken: number | null;
  /** The highest token this candidate has seen in any record or deletion (0 if none): its next term goes past it. */
  highestToken: number;
  acquiredAt: Date | null;
  renewedAt: Date | null;
  validUntil: Date | null;
  /** Monotonic ms of the last successful acquire/renew; null if never. */
  lastRenewMonotonic: number | null;
  /**
   * Monotonic ms by which the loop should next make progress: the end of its current wait
   * (which, for a standby relying on its watch, can be a minute away) or of its attempt.
   */
  loopDueMonotonic: number | null;
  running: boolean;
  /** Why this candidate does not campaign (its app is not eligible), and since when; null when it does. */
  standingAside: StandAside | null;
}

/** What the engine's helpers (its schedule, its successor claim) ask of the candidate itself. */
export interface Standing {
  /** Whether it leads now. */
  isLeader(): boolean;
  /** Whether it campaigns: its app lets it (its eligibility, and no standing aside after a term whose work was not seen to stop). */
  campaigning(): boolean;
}
