/**
 * The storage half of leader election, as client-go's resourcelock: a LeaseStore stores and
 * returns lease records with compare-and-swap, and makes no election decision. The one
 * algorithm lives in src/sidecar/elector.ts.
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
}

export interface VersionedRecord {
  record: LeaseRecord;
  /**
   * Opaque: a Kubernetes resourceVersion, or a digest of the SQLite row. Any write to the
   * record, by anyone, changes it; compare it only for equality.
   */
  version: string;
}

export interface LeaseStore {
  /** 'sqlite' or 'kubernetes'; used in logs and metric labels. */
  readonly backend: string;
  /** Where the leases live (a file path, a namespace), for messages. */
  readonly location: string;

  /** The record and its version, or null when no record of that name exists. */
  get(name: string): Promise<VersionedRecord | null>;

  /** Creates the record; ConflictError when one already exists. Returns the new version. */
  create(name: string, record: LeaseRecord): Promise<string>;

  /**
   * Replaces the record only if its version is still `expectedVersion`; ConflictError when it
   * changed, NotFoundError when it is gone. Never an unconditional write. Returns the new version.
   */
  update(name: string, record: LeaseRecord, expectedVersion: string): Promise<string>;

  /**
   * Optional: calls `onChange` soon after the record may have changed (a hint only; it may
   * fire spuriously or late, and a lost event must never matter for correctness), with the
   * record the event carried when it carried one (a deleted Lease's last state included), so
   * candidates learn the highest token even of a record they never read. Returns a
   * function that stops watching. Standbys use it to act on a release at once instead of at
   * their next retry.
   */
  watch?(name: string, onChange: (seen?: LeaseRecord) => void): () => void;

  close(): Promise<void>;
}

/** A record as one line of text, for logs and error messages. */
export function formatRecord(r: LeaseRecord): string {
  const holder = r.holderIdentity === '' ? '(none)' : r.holderIdentity;
  return `holder=${holder} token=${r.leaseTransitions} duration=${r.leaseDurationSeconds}s renewed=${r.renewTime?.toISOString() ?? '-'}`;
}
