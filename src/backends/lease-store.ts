/**
 * The storage half of leader election, as client-go's resourcelock: a LeaseStore stores and
 * returns lease records with compare-and-swap, and makes no election decision. The one
 * algorithm lives in src/election/candidate-loop.ts.
 */

/** The Lease spec's fields. `leaseTransitions` is the fencing token. */
export interface LeaseRecord {
  /** '' when released or never held. */
  holderIdentity: string;
  /** How long candidates must see the record unchanged before they may take it. */
  leaseDurationSeconds: number;
  acquireTime: Date | null;
  renewTime: Date | null;
  /** Grows by one on every change of term; never decreases, never reused. */
  leaseTransitions: number;
  /**
   * The standby that has said it will take the lease the moment it is free, so the others stand
   * back (src/election/successor.ts). Not part of the lease itself: no candidate's right to the
   * lease depends on it, and a store that cannot keep it (no successorClaims, or kept() false) drops it.
   * Absent or null: nobody has.
   */
  successor?: SuccessorClaim | null;
}

/** A standby's claim to go first when the lease is next free. */
export interface SuccessorClaim {
  identity: string;
  /** When the claimant last wrote (or refreshed) the claim, by its own clock; to the millisecond. */
  claimedAt: Date;
}

export interface VersionedRecord {
  record: LeaseRecord;
  /**
   * Opaque: a Kubernetes resourceVersion, a PostgreSQL row's version, a digest of the SQLite
   * row with its name's write count. Any write that changes a value of the record, by anyone,
   * changes it, and a version never comes back: not when earlier values are written back, not
   * after a delete and a re-create. A write of the very values held may keep it (the API server
   * persists no no-op update), and a compare-and-swap carrying it then succeeds, rightly: nothing
   * was written between, so the record holds what its caller read. Compare it only for equality.
   */
  version: string;
}

/** What a watch saw. Stores that cannot tell (SQLite) send an empty event: "something changed". */
export interface WatchEvent {
  /** The record and its version after the change; null when the record was deleted. */
  record?: VersionedRecord | null;
  /** The last state of a deleted record (its token must not be forgotten). */
  deleted?: LeaseRecord;
}

/**
 * A store's one capability for successor claims (src/election/successor.ts). A store without it
 * drops `successor`, and its candidates never claim: a claim that vanished on write would be
 * claimed again and again.
 */
export interface SuccessorClaimSupport {
  /**
   * Whether `successor` round-trips now (written by create/update, returned by get and watch
   * events); false: the store drops it, and nobody claims. May change when the store reopens.
   */
  kept(): boolean;
  /**
   * Optional, for a store whose watch polls (SQLite): its watches of `name` ask `named()` before
   * each wait and poll at their quick rate while it is true. The elector answers true while
   * this candidate is the named successor, whose takeover waits on noticing the release; the
   * other standbys keep the cheap rate. Returns a function that stops the asking.
   */
  pollQuicklyWhile?(name: string, named: () => boolean): () => void;
}

/**
 * Per-call options, as client-go passes a `ctx`. When `signal` aborts, a call still in flight
 * is cancelled (its request destroyed) and rejects with the signal's reason; a call started on
 * an aborted signal rejects without touching the store. A write cancelled after it was sent may
 * still have been applied: callers treat the outcome as unknown, never as "not written".
 */
export interface CallOptions {
  signal?: AbortSignal;
  /**
   * false: the call must not wait on a lock another client holds (SQLite's busy timeout): it
   * answers BackendUnavailableError at once instead, writing nothing, as when the wait ran out.
   * A store whose waits are bounded by `signal` alone (PostgreSQL, Kubernetes) may ignore it.
   * Default true. Releases that are retried use it (src/holder/end-of-term-rule.ts,
   * releaseWaitsForLock).
   */
  waitForLock?: boolean;
}

/**
 * The contract every store keeps, stated once as a suite and run against each of them
 * (src/testing/lease-store-contract.ts): the in-memory store, SQLite and Kubernetes.
 */
export interface LeaseStore {
  /** 'sqlite' or 'kubernetes'; used in logs and metric labels. */
  readonly backend: string;
  /** Where the leases live (a file path, a namespace), for messages. */
  readonly location: string;
  /**
   * The largest token the store can hold: 2^53 − 1 (the largest integer a JS number keeps
   * exactly) unless the store's own type is narrower (a Lease's leaseTransitions is an int32).
   */
  readonly maxToken?: number;

  /** The record and its version, or null when no record of that name exists. */
  get(name: string, opts?: CallOptions): Promise<VersionedRecord | null>;

  /** Creates the record; ConflictError when one already exists. Returns the new version. */
  create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string>;

  /**
   * Replaces the record only if its version is still `expectedVersion`. ConflictError when
   * that version is no longer current: the record changed, or it was deleted (a deleted record
   * is never recreated by an update), as the Kubernetes API answers a stale resourceVersion.
   * Never an unconditional write. Returns the new version.
   */
  update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string>;

  /**
   * Optional: reports changes of the record as they happen. A hint only: events may be late,
   * lost or spurious, and correctness must never depend on them (every decision is still made
   * by a compare-and-swap). `onHealth(true)` means every change from now on will be reported
   * (a Kubernetes watch is connected); standbys then stop polling and wait for events, with a
   * periodic safety re-read. Returns a function that stops watching.
   */
  watch?(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void;

  /**
   * Optional: what is wrong with the store that will not fix itself and that a person must
   * act on (PostgreSQL: the table was dropped), or null. Health and readiness report it.
   */
  problem?(): string | null;

  /** Optional: the store keeps successor claims (see SuccessorClaimSupport). */
  readonly successorClaims?: SuccessorClaimSupport;

  close(): Promise<void>;
}
