/**
 * The end of a term, after its step-down: the one end-of-term gate, whatever ended the term
 * (stop(), a step-down for the app, the renew deadline, a lost or vanished record, a store
 * error), and the release. First the term's work drains (`drain`, at most drainTimeoutMs), then
 * the release gate says whether "not leader" has reached every reader. Either saying no leaves
 * the lease to expire, and the candidate stands aside until it could have expired: a release
 * while the work still runs, or while a reader still sees "leader", would let the next leader
 * start beside it. Then the release itself, for a term given up or lost alike (the rule shard
 * members follow too: end-of-term-rule.ts): only a record this candidate wrote is released, never
 * another holder's, nor one written under its identity by another process.
 */
import { BackendUnavailableError, ConflictError, InvalidRecordError, describeError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { LeaseRecord, VersionedRecord } from '../backends/lease-store.js';
import type { RecordAccess } from './record-access.js';
import { sameRecord, type RecordView } from './record-view.js';
import { StandBack } from './stand-back.js';
import { couldHaveExpiredAtMono, drainedWithin, releaseUntil, releaseWaitsForLock, type ReleaseAttempt } from '../holder/end-of-term-rule.js';
import { releasedRecord } from './term-records.js';
import type { AttemptSchedule } from './attempt-schedule.js';
import type { Terms } from './terms.js';

export interface EndOfTermOptions {
  clock: Clock;
  log: Logger;
  /** The candidate's terms: the one that ended, marked over once through the gate. */
  terms: Terms;
  /** The loop's schedule: the gate's bound, for liveness. */
  schedule: Pick<AttemptSchedule, 'attempting' | 'attemptEnded'>;
  /** Bound on one backend call: a release is a few. */
  requestTimeoutMs: number;
  /** What the candidate believes about the record: whether the record last seen is its own. */
  view: RecordView;
  /** The candidate's bounded store calls, each answer taken into its view. */
  access: RecordAccess;
  /** Release a term that ended (given up or lost) once the gate allows it; false: never release. */
  releaseOnCancel: boolean;
  /** How often a release the store did not answer is sent again (until the term could have expired). */
  retryPeriodMs: number;
  drain: (() => Promise<boolean | void>) | null;
  /** The drain's bound; 0: not waited for. */
  drainTimeoutMs: number;
  releaseGate: () => boolean | Promise<boolean>;
  /** The released record keeps the term's acquireTime (term-records.ts). */
  keepAcquireTime: boolean;
  leaseDurationMs: number;
}

export class EndOfTerm {
  /** Stands the candidate aside after a term whose work was not seen to stop (an Eligibility of its gate). */
  readonly holdOff: StandBack;
  /** Aborted when the candidate stops: a release the store does not answer is not retried any more. */
  private readonly stopping = new AbortController();

  constructor(private readonly o: EndOfTermOptions) {
    this.holdOff = new StandBack(o.clock);
  }

  /**
   * The gate for the term that ended, if any: its step-down has been announced (the listener heard
   * it first); then its work drains; then "not leader" must have reached every reader
   * (`releaseGate`); then the term is released with releaseOnCancel, given up (stop(), the app's
   * eligibility) or lost (its renewals unanswered, another holder, its record gone) alike: a
   * compare-and-swap from the version this candidate last wrote, which lands only while the
   * record is still its own (a record another holder took, or one gone, is left alone). A store
   * that does not answer is asked again every retryPeriod until the term could have expired: a
   * term lost to a store outage is released as soon as the store is back, so the others need not
   * wait out the rest of its lease. The loop runs this before any claim or attempt, and no new
   * term is written while it is pending, so no other term begins while the work may run.
   *
   * When the work was not seen to stop in time, or the readers could not be told, the lease is
   * not released: it expires, and this candidate stands aside until it could have expired for the
   * others (the term's last successful renewal plus the lease duration). That is the one moment
   * after which a next term may begin while this term's work may still run: the moment a paused
   * leader's term ends too, which only the fencing token covers. The same choice on every path.
   */
  async gate(): Promise<void> {
    const o = this.o;
    const ended = o.terms.ended;
    if (!ended) return;
    const expiresAtMono = couldHaveExpiredAtMono(ended.renewedAtMono, o.leaseDurationMs);
    // For liveness: the drain, the gate, and a release of a few requests, retried at most until
    // the term could have expired.
    const drainBoundMs = o.drain ? o.drainTimeoutMs : 0;
    o.schedule.attempting(Math.max(drainBoundMs, expiresAtMono - o.clock.monotonic()) + o.retryPeriodMs + 10 * o.requestTimeoutMs);
    try {
      const stopped = await drainedWithin(o.clock, o.drainTimeoutMs, o.drain);
      if (stopped && (await this.allowed())) {
        const end = ended.end === 'given up' ? 'given up' : 'lost';
        if (
          o.releaseOnCancel &&
          ended.end !== 'record gone' &&
          (await releaseUntil(o.clock, expiresAtMono, o.retryPeriodMs, (round) => this.send(releaseWaitsForLock(end, round)), this.stopping.signal)) ===
            'unanswered'
        ) {
          const fields = { token: ended.token, end: ended.end };
          // Which ended the retries: a stop (an exiting candidate does not wait on a store that
          // does not answer; the lease may have most of its time left), or the lease's end.
          if (this.stopping.signal.aborted)
            o.log.warn('the store did not answer the release and the candidate is stopping, so it is not retried: the lease expires', {
              ...fields,
              expiresInMs: Math.max(0, Math.round(expiresAtMono - o.clock.monotonic())),
            });
          else o.log.warn('the store did not answer the release before the lease could have expired: it expires', fields);
        }
        return;
      }
      const leftMs = expiresAtMono - o.clock.monotonic();
      const fields = { token: ended.token, drainTimeoutMs: drainBoundMs, standAsideMs: Math.max(0, Math.round(leftMs)) };
      // An error: the library logs errors only by default, and this one says a term may overlap the next.
      if (!stopped) o.log.error('the work did not finish within drainTimeoutMs: the lease is left to expire, not released', fields);
      // The release gate's owner said why (the sidecar: the status files could not be written).
      else o.log.debug('the release gate said no: the lease is left to expire, not released', fields);
      if (leftMs > 0) this.holdOff.standBack(`the work of token ${ended.token} was not seen to stop: waiting until its lease could have expired`, leftMs);
    } finally {
      o.terms.over();
      o.schedule.attemptEnded();
    }
  }

  /**
   * A takeover whose answer was lost may have begun a term nobody was told of (no work to drain):
   * with releaseOnCancel and the gate's leave, it is released from a read, as the view may
   * predate the write that may have landed.
   */
  async releaseUnannounced(): Promise<void> {
    if (this.o.releaseOnCancel && (await this.allowed())) await this.send(releaseWaitsForLock('given up', 0), true);
  }

  /** The candidate is stopping: a release the store does not answer is not retried until the term could have expired. */
  stopRetrying(): void {
    this.stopping.abort();
  }

  /** Ends a pending stand-aside timer (the candidate stopped). */
  close(): void {
    this.holdOff.close();
  }

  /** The release gate's answer; one that throws is a no. */
  private async allowed(): Promise<boolean> {
    try {
      return await this.o.releaseGate();
    } catch (err) {
      this.o.log.error('releaseGate failed: the lease is left to expire, not released', { error: describeError(err) });
      return false;
    }
  }

  /**
   * Writes the released record (term-records.ts) over our own, the term already ended. A
   * conflict is retried after a fresh read; a read or a write the store does not answer ends the
   * attempt as 'unanswered' at once (the gate may try again a retryPeriod later), so one attempt
   * waits on another's lock at most once, as a renewal does. `waits`: whether its write may wait
   * on another's lock (releaseWaitsForLock; and RecordAccess's pause after a write that waited
   * unanswered, lock-waits.ts). `fromRead`: the view may predate a write of ours that landed
   * unanswered, so the first attempt reads too.
   */
  private async send(waits: boolean, fromRead = false): Promise<ReleaseAttempt> {
    const o = this.o;
    let sent: LeaseRecord | null = null;
    for (let attempt = 0; attempt < 5; attempt++) {
      const seen = fromRead && attempt === 0 ? null : o.view.observed;
      // Our record, last seen: released from that view only while it is recent, else from a
      // read. Another's record last seen: nothing of ours to release.
      if (attempt === 0 && seen && !o.view.isOwn(seen)) return 'final';
      let current: VersionedRecord | null;
      try {
        current = attempt === 0 && seen && o.view.recentlyConfirmed(seen.version) ? seen : await o.access.get();
      } catch {
        return 'unanswered';
      }
      if (current && sent && sameRecord(current.record, sent)) return 'released'; // an unanswered release landed
      if (!current || !o.view.isOwn(current)) return 'final';
      const released = releasedRecord(current.record, o.clock.now(), o.keepAcquireTime);
      sent = released;
      try {
        const version = await o.access.update(released, current.version, waits);
        o.access.observe({ record: released, version }, true);
        o.log.info('released lease', { token: released.leaseTransitions });
        return 'released';
      } catch (err) {
        // The store refuses the released record itself (a constraint of the table): no retry
        // passes, and the others wait out the lease as after a crash. Said once, as an error.
        if (err instanceof InvalidRecordError) {
          o.log.error('the store refused the release: the lease is left to expire', { reason: describeError(err), leaseDurationMs: o.leaseDurationMs });
          return 'final';
        }
        if (!(err instanceof ConflictError)) {
          o.log.warn('release failed', { reason: describeError(err) });
          // Unanswered: this round ends here, whether or not the write waited on a lock. Asked
          // again at once the store (a lock still held) would most likely not answer either, and
          // on SQLite each write allowed to wait may spend the busy timeout: at most one such
          // wait per round, as a renewal. The next round comes a retryPeriod later.
          return err instanceof BackendUnavailableError ? 'unanswered' : 'final';
        }
      }
    }
    return 'unanswered';
  }
}
