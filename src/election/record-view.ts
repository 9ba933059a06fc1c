/**
 * What one candidate believes about the lease record: the record it last saw (or that it is
 * absent, and until when), when it saw its content and its successor claim change, the highest
 * token it has seen, and which writes were its own (and which of them may have landed unseen).
 * Expiry is judged here as client-go judges it: on this process's monotonic clock, a lease
 * duration after the record was last seen to change.
 *
 * It only records and answers; it never calls the store, and it tells nobody. The elector
 * announces what observe() reports and decides what to do about it.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { LeaseRecord, SuccessorClaim, VersionedRecord } from '../backends/lease-store.js';
import { JITTER_FACTOR, type Timings } from '../config/election-options.js';

/**
 * The record is absent: nobody but the sitting leader may create it before `untilMono` (a deleted
 * record's holder, or a leader on a replaced store, may still be acting).
 */
interface Absence {
  readonly absentUntilMono: number;
}

/** A write of ours that may go unanswered: a new term's (a takeover or a creation), or a successor claim. */
export type WriteKind = 'takeover' | 'claim';

/** What a candidate knows of its own writes. */
interface OwnWrites {
  /** Its last eight lease records sent, answered or not: a write whose answer was lost is recognised by content. */
  readonly sent: readonly LeaseRecord[];
  /** The version its last answered lease write returned (a metadata-only change moves the version, not the content). */
  readonly version: string | null;
  /** Its writes that got no answer (a timeout, a dropped connection): they may have landed though no view shows them. */
  readonly unanswered: readonly WriteKind[];
}

export class RecordView {
  /** The record last seen (read, watched or written), or its absence; null before the first look. */
  private last: VersionedRecord | Absence | null = null;
  /**
   * The last change of the record's content, as seen: when. A new object for each change, so an
   * attempt can tell whether one came since it started, even at the same instant (lastChange).
   */
  private change: Readonly<{ atMono: number }> = { atMono: 0 };
  /** When the claim in the record (or its absence) was last seen to change: a claim is judged by this. */
  private claimSinceMono = 0;
  /** The highest token ever seen, in any record or deletion: a new term always goes past it. */
  private highest = 0;
  /**
   * When this candidate last learnt the record's state (a read, an event, its own write); null
   * during an absence once a change may have gone unseen (see interruptAbsence).
   */
  private lastViewMono: number | null = null;
  private own: OwnWrites = { sent: [], version: null, unanswered: [] };
  /** The foreign record under our identity that was last reported, so it is logged once. */
  private reportedImpostor: string | null = null;

  /** `requestTimeoutMs`: a view at most this old may be written from without a read (recentlyConfirmed). */
  constructor(
    private readonly identity: string,
    private readonly timings: Readonly<Timings>,
    private readonly requestTimeoutMs: number,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** The record last seen (read, watched or written); null before the first, and while absent. */
  get observed(): VersionedRecord | null {
    return this.last && 'record' in this.last ? this.last : null;
  }

  /**
   * `version` is the record last seen, and this candidate learnt so (a read, an event, its own
   * write) at most one request timeout ago. A write from an older view is not sent: a store whose
   * versions restart when the record is re-created may have issued that version again since.
   */
  recentlyConfirmed(version: string): boolean {
    return this.observed?.version === version && this.lastViewMono !== null && this.clock.monotonic() - this.lastViewMono <= this.requestTimeoutMs;
  }

  /** The highest token seen in any record or deletion (0 if none): the next term goes past it. */
  get highestToken(): number {
    return this.highest;
  }

  /** The last change of the record's content seen, as a token: the same object until the next change. */
  get lastChange(): object {
    return this.change;
  }

  /** When the successor claim last seen (or its absence) was first seen as it is. */
  get claimSeenSinceMono(): number {
    return this.claimSinceMono;
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
    const now = this.clock.monotonic();
    const previous = this.observed;
    // A changed claim (or one seen after none, or after an absence) restarts its age.
    if (!previous || !sameClaim(previous.record.successor, got.record.successor)) this.claimSinceMono = now;
    this.lastViewMono = now;
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
      this.last = { record: got.record, version: got.version };
      return false;
    }
    this.last = got;
    this.change = { atMono: now };
    this.highest = Math.max(this.highest, got.record.leaseTransitions);
    if (own) this.own = { ...this.own, version: got.version };
    return !previous || previous.record.holderIdentity !== got.record.holderIdentity || previous.record.leaseTransitions !== got.record.leaseTransitions;
  }

  /** A watch reported the record deleted, with the token it last had. */
  noteDeleted(token: number): void {
    this.highest = Math.max(this.highest, token);
  }

  /** A record this candidate is about to send: if its answer is lost, it is still recognised as ours. */
  noteWrite(record: LeaseRecord): void {
    this.own = { ...this.own, sent: [...this.own.sent.slice(-7), record] };
  }

  /**
   * What became of a write of ours of this kind: `answered` (it landed, or a conflict or a
   * refusal said it did not, or a read since shows either way), or not (it may have landed unseen).
   */
  noteAnswer(kind: WriteKind, answered: boolean): void {
    const others = this.own.unanswered.filter((k) => k !== kind);
    this.own = { ...this.own, unanswered: answered ? others : [...others, kind] };
  }

  /** A write of ours of this kind got no answer, and nothing has answered for it since: it may have landed unseen. */
  mayHaveLanded(kind: WriteKind): boolean {
    return this.own.unanswered.includes(kind);
  }

  /**
   * A change may have gone unseen (an event without a record, or the store reopened a replaced
   * file): an absence in progress may not have been continuous.
   */
  interruptAbsence(): void {
    if (this.absence) this.lastViewMono = null;
  }

  /**
   * The record is gone: nobody but the sitting leader creates it before a lease duration. The
   * wait continues across absences seen one poll apart; after a longer gap in this candidate's
   * view (hung requests, a pause, or a change that may have gone unseen: interruptAbsence) the
   * record may have been recreated and deleted again unseen, with its holder still acting, so
   * the wait starts over.
   */
  noteAbsent(): void {
    const now = this.clock.monotonic();
    const pollGap = this.timings.retryPeriodMs * (2 + JITTER_FACTOR); // one jittered wait plus a quick read
    const absence = this.absence;
    const continuous = absence !== null && this.lastViewMono !== null && now - this.lastViewMono <= pollGap;
    this.lastViewMono = now;
    if (continuous) return;
    const last = this.observed?.record;
    const waitMs = Math.max(this.timings.leaseDurationMs, last ? last.leaseDurationSeconds * 1000 : 0);
    this.last = { absentUntilMono: now + waitMs };
    this.log.info('lease absent: creating it after a lease duration unless it reappears', {
      waitMs,
      createsAt: new Date(this.clock.now().getTime() + waitMs).toISOString(),
      why: 'a lease never seen looks the same as one just deleted, whose holder may still be acting',
      highestTokenSeen: this.highest,
      restarted: absence !== null,
    });
  }

  /** The record is absent and a lease duration has not passed since that was first seen (see noteAbsent). */
  absenceWaitPending(): boolean {
    const absence = this.absence;
    return absence !== null && absence.absentUntilMono > this.clock.monotonic();
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
    if (seen.version === this.own.version || this.own.sent.some((w) => sameRecord(rec, w))) return true;
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
    return this.freeOnSight(seen) ? this.change.atMono : this.expiresAtMono(seen.record);
  }

  expired(rec: LeaseRecord): boolean {
    return this.expiresAtMono(rec) <= this.clock.monotonic();
  }

  /** The record was last seen absent: since when nobody but the sitting leader may create it. */
  private get absence(): Absence | null {
    return this.last && 'absentUntilMono' in this.last ? this.last : null;
  }

  /** An unchanged record expires a lease duration after we observed it (client-go's rule). */
  private expiresAtMono(rec: LeaseRecord): number {
    return this.change.atMono + rec.leaseDurationSeconds * 1000;
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
