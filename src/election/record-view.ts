/**
 * What one candidate believes about the lease record: the record it last saw and when it saw it
 * change, the highest token it has seen, whether and since when the record is absent, and which
 * writes were its own. Expiry is judged here as client-go judges it: on this process's
 * monotonic clock, a lease duration after the record was last seen to change.
 *
 * It only records and answers; it never calls the store, and it tells nobody. The elector
 * announces what observe() reports and decides what to do about it.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { LeaseRecord, SuccessorClaim, VersionedRecord } from '../backends/lease-store.js';
import { JITTER_FACTOR, type Timings } from '../config/election-options.js';

export class RecordView {
  private current: VersionedRecord | null = null;
  private observedAtMono = 0;
  /** Counts the records observed (new versions): orders an attempt against an observation made at the same instant. */
  private observedSeq = 0;
  /** The highest token ever seen, in any record or deletion: a new term always goes past it. */
  private highest = 0;
  /**
   * The record was last seen absent: nobody but the sitting leader may create it before this
   * (a deleted record's holder, or a leader on a replaced store, may still be acting).
   */
  private absentUntilMono: number | null = null;
  /** When this candidate last learnt the record's state (a read, an event, its own write). */
  private lastViewMono: number | null = null;
  /**
   * During an absence, a change was hinted (an event without a record) or the store reopened a
   * replaced file: the absence may not have been continuous.
   */
  private absenceInterrupted = false;
  /**
   * The version our last successful write returned, and our last few writes by content: a
   * write whose answer was lost may have landed, and a metadata-only change (a label added to
   * the Lease) moves the version but keeps our content.
   */
  private ownVersion: string | null = null;
  private recentWrites: LeaseRecord[] = [];
  /** The foreign record under our identity that was last reported, so it is logged once. */
  private reportedImpostor: string | null = null;

  constructor(
    private readonly identity: string,
    private readonly timings: Readonly<Timings>,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** The record last seen (read, watched or written); null before the first, and while absent. */
  get observed(): VersionedRecord | null {
    return this.current;
  }

  /**
   * `version` is the record last seen, and this candidate learnt so (a read, an event, its own
   * write) at most `ms` ago. A write from an older view is not sent: a store whose versions
   * restart when the record is re-created may have issued that version again since.
   */
  confirmedWithin(version: string, ms: number): boolean {
    return this.current?.version === version && this.lastViewMono !== null && this.clock.monotonic() - this.lastViewMono <= ms;
  }

  /** The highest token seen in any record or deletion (0 if none): the next term goes past it. */
  get highestToken(): number {
    return this.highest;
  }

  /** How many new records have been observed so far. */
  get seq(): number {
    return this.observedSeq;
  }

  /**
   * Takes in a record read or watched (own = we just wrote it). Only a change of the record's
   * content restarts the observed expiry: another writer touching only the object's metadata (a
   * label, an annotation) moves its version, and if that counted as a change, a neighbour
   * relabelling a dead leader's Lease more often than its duration would stop failover for good.
   * The new version is still kept: a compare-and-swap must name the object as it is now.
   *
   * True when it shows a different leader: a new holder, or the same holder in a new term (it
   * lost the lease and took it again), whose token a follower must report.
   */
  observe(got: VersionedRecord, own = false): boolean {
    this.absentUntilMono = null;
    this.lastViewMono = this.clock.monotonic();
    const previous = this.current;
    // The same version is the same record, unless the store issued it again to a re-created
    // record: our own write, and any different content, are taken in whatever the version says.
    if (
      previous &&
      previous.version === got.version &&
      !own &&
      sameContent(previous.record, got.record) &&
      sameClaim(previous.record.successor, got.record.successor)
    )
      return false;
    if (previous && !own && sameContent(previous.record, got.record)) {
      // The lease's content is unchanged (a label, or a successor claim): its expiry still counts
      // from the last change, but the claim is the one now in the record.
      this.current = { record: got.record, version: got.version };
      return false;
    }
    this.current = got;
    this.observedSeq++;
    this.observedAtMono = this.clock.monotonic();
    this.highest = Math.max(this.highest, got.record.leaseTransitions);
    if (own) this.ownVersion = got.version;
    return !previous || previous.record.holderIdentity !== got.record.holderIdentity || previous.record.leaseTransitions !== got.record.leaseTransitions;
  }

  /** A watch reported the record deleted, with the token it last had. */
  noteDeleted(token: number): void {
    this.highest = Math.max(this.highest, token);
  }

  /** A record this candidate is about to send: if its answer is lost, it is still recognised as ours. */
  noteWrite(record: LeaseRecord): void {
    this.recentWrites = [...this.recentWrites.slice(-7), record];
  }

  /**
   * A change may have gone unseen (an event without a record, or the store reopened a replaced
   * file): an absence in progress may not have been continuous.
   */
  interruptAbsence(): void {
    if (this.absentUntilMono !== null) this.absenceInterrupted = true;
  }

  /**
   * The record is gone: nobody but the sitting leader creates it before a lease duration. The
   * wait continues across absences seen one poll apart; after a longer gap in this candidate's
   * view (hung requests, a pause) the record may have been recreated and deleted again unseen,
   * with its holder still acting, so the wait starts over.
   */
  noteAbsent(): void {
    const now = this.clock.monotonic();
    const pollGap = this.timings.retryPeriodMs * (2 + JITTER_FACTOR); // one jittered wait plus a quick read
    const continuous = this.absentUntilMono !== null && !this.absenceInterrupted && this.lastViewMono !== null && now - this.lastViewMono <= pollGap;
    this.lastViewMono = now;
    this.absenceInterrupted = false;
    if (!continuous) {
      const last = this.current?.record;
      const waitMs = Math.max(this.timings.leaseDurationMs, last ? last.leaseDurationSeconds * 1000 : 0);
      const restarted = this.absentUntilMono !== null;
      this.absentUntilMono = now + waitMs;
      this.log.info('lease absent: creating it after a lease duration unless it reappears', {
        waitMs,
        createsAt: new Date(this.clock.now().getTime() + waitMs).toISOString(),
        why: 'a lease never seen looks the same as one just deleted, whose holder may still be acting',
        highestTokenSeen: this.highest,
        restarted,
      });
    }
    this.current = null;
  }

  /** The record is absent and a lease duration has not passed since that was first seen (see noteAbsent). */
  absenceWaitPending(): boolean {
    return this.absentUntilMono !== null && this.absentUntilMono > this.clock.monotonic();
  }

  /**
   * Did this candidate write this record? Its identity alone does not say: another process
   * may run with the same --identity (or be a leasehold started inside `leasehold run`'s
   * command). A record under our identity that we did not write is another holder's.
   */
  isOwn(seen: VersionedRecord): boolean {
    const rec = seen.record;
    if (rec.holderIdentity !== this.identity) return false;
    // A write whose answer was lost (a timeout) may still have landed: recognise it by content.
    if (seen.version === this.ownVersion || this.recentWrites.some((w) => sameRecord(rec, w))) return true;
    const key = `${rec.leaseTransitions}/${rec.acquireTime?.getTime() ?? ''}`;
    if (this.reportedImpostor !== key) {
      this.reportedImpostor = key;
      this.log.error('the lease is held under this identity by a record this process did not write', {
        holder: rec.holderIdentity,
        token: rec.leaseTransitions,
        rule: 'another process runs with the same identity (or this one restarted): treated as another holder until it expires',
      });
    }
    return false;
  }

  /** Released, or ours from an ended term: free from the moment it was seen. */
  freeOnSight(seen: VersionedRecord): boolean {
    return seen.record.holderIdentity === '' || this.isOwn(seen);
  }

  /** When the record last observed (`seen`) became free for this candidate: on sight, or at its expiry. */
  freeAtMono(seen: VersionedRecord): number {
    return this.freeOnSight(seen) ? this.observedAtMono : this.expiresAtMono(seen.record);
  }

  expired(rec: LeaseRecord): boolean {
    return this.expiresAtMono(rec) <= this.clock.monotonic();
  }

  /** An unchanged record expires a lease duration after we observed it (client-go's rule). */
  private expiresAtMono(rec: LeaseRecord): number {
    return this.observedAtMono + rec.leaseDurationSeconds * 1000;
  }
}

/**
 * The whole leader-election record unchanged (client-go compares the record, never the object's
 * resourceVersion): a write by any candidate changes at least its renewTime.
 */
function sameContent(a: LeaseRecord, b: LeaseRecord): boolean {
  return sameRecord(a, b) && a.leaseDurationSeconds === b.leaseDurationSeconds;
}

/** Same holder, token and times (to the millisecond): the record we wrote, whatever its version. */
export function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseTransitions === b.leaseTransitions &&
    a.renewTime?.getTime() === b.renewTime?.getTime() &&
    a.acquireTime?.getTime() === b.acquireTime?.getTime()
  );
}

/** Two claims are the same claim: same claimant, same claim time (to the millisecond). */
export function sameClaim(a: SuccessorClaim | null | undefined, b: SuccessorClaim | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.identity === b.identity && a.claimedAt.getTime() === b.claimedAt.getTime();
}
