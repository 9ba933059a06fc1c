/**
 * The one election algorithm: client-go's tools/leaderelection, plus fencing.
 *
 * What it guarantees, given a store with honest compare-and-swap and clocks whose *rates*
 * agree across candidates:
 * - at most one candidate's record write makes it leader for a given term (token);
 * - the fencing token (the record's leaseTransitions) grows by one on every acquisition that is
 *   not a renewal by the sitting leader, and is never reused while any candidate remembers it;
 * - a leader that cannot renew steps down at `renewDeadline` after its last successful renewal
 *   request *started*, before any other candidate may judge the lease expired (`leaseDuration`).
 *
 * What it does NOT guarantee: that two processes never *believe* they lead at the same instant.
 * A leader paused (GC, SIGSTOP, a VM freeze) past its lease wakes up still believing; nothing in
 * the leader can prevent that. Only the protected resource can, by checking the fencing token
 * (src/fencing/). Used without a token check, the lease is an efficiency device, not a
 * correctness one.
 *
 * Expiry is judged as client-go judges it: on this process's monotonic clock, from the moment
 * this candidate last *observed the record change*, for the record's own leaseDurationSeconds.
 * The record's renewTime is never compared with the local clock.
 */
import { realClock, type Clock, type Timer } from '../clock.js';
import { ConflictError, InvalidRecordError, StoreReopenedError, describeError } from '../errors.js';
import { boundedCall } from './bounded-call.js';
import { EligibilityGate } from './eligibility-gate.js';
import { StandBack } from './stand-back.js';
import { allEligible } from '../health/all-eligible.js';
import { listenerCalls, type Notify } from './listener-calls.js';
import { LeaseRelease } from './release.js';
import { freshRecord, newTermRecord, renewalRecord, type Writer } from './term-records.js';
import { guardedLogger, silentLogger, type Logger } from '../log.js';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from '../backends/lease-store.js';
import { SuccessorClaimant, claimTimings } from './successor.js';
import type { Timings } from '../config/election-options.js';
import { AttemptSchedule } from './attempt-schedule.js';
import { RecordView } from './record-view.js';
import type { CandidateContext, CandidateOptions, CandidateSnapshot, LeadershipTerm } from './candidate-options.js';

export type { CandidateListener, CandidateOptions, CandidateSnapshot, LeadershipTerm } from './candidate-options.js';

/** The current term, while this candidate leads: one object, replaced on every new term. */
interface Term extends LeadershipTerm {
  /** Monotonic start of the last successful acquire/renew request. */
  renewedAtMono: number;
  /** Steps down at renewedAtMono + renewDeadline unless a renewal re-arms it first. */
  deadline: Timer;
}

/** When a write request started, on both clocks: a term counts from here (see succeeded). */
interface Stamp {
  wall: Date;
  mono: number;
}

/**
 * The internal engine, not exported by the package: apps use LeaderElection
 * (leader-election.ts), which wraps it with callbacks and a drain. Named for what it is, one
 * candidate's loop, so that it is never taken for LeaderElection. One candidate: client-go's
 * two phases, acquire (a standby tries at its turn until it leads) and renew (the leader renews
 * every retryPeriod until it steps down), over one attempt that reads and compare-and-swaps the
 * record. What it believes about the record is its RecordView; when it acts next is its
 * AttemptSchedule.
 */
export class CandidateLoop {
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  /** Calls the listener; whatever it throws goes no further (listener-calls.ts). */
  private readonly notify: Notify;
  private readonly log: Logger;
  readonly lease: string;
  readonly identity: string;
  readonly timings: Readonly<Timings>;
  /** Giving the lease up after a step-down: the drain, the gate, the release (release.ts). */
  private readonly releaser: LeaseRelease;
  /** Who writes the records: this candidate, its lease duration, the store's bound on tokens. */
  private readonly writer: Writer;
  private readonly requestTimeoutMs: number;
  /** What this candidate believes about the record. */
  private readonly view: RecordView;
  /** When this candidate acts next. */
  private readonly schedule: AttemptSchedule;
  /** This standby's successor claim; null when it makes none (successorClaims false, or a store that keeps none). */
  private readonly claim: SuccessorClaimant | null;
  /** Whether the app lets this candidate campaign. */
  private readonly gate: EligibilityGate;
  /** Stands this candidate aside after a term whose work was not seen to stop (endOfTerm). */
  private readonly holdOff: StandBack;
  private readonly releaseOnCancel: boolean;

  /** Non-null exactly while this candidate leads. */
  private term: Term | null = null;
  /** A term that ended and has not been through the end-of-term gate yet (endOfTerm). */
  private ended: Term | null = null;
  private loop: Promise<void> | null = null;
  private stopped = false;
  private unwatch: (() => void) | null = null;
  /** Monotonic start of the last successful acquire/renew, kept after a step-down; for liveness. */
  private lastRenewMono: number | null = null;
  /**
   * The last write of a new term got no answer (a timeout, a dropped connection): it may have
   * landed, a term of this candidate's that nobody was told of. stop() then reads the record
   * and releases it if it is ours, rather than leave the others to wait out a lease nobody leads.
   */
  private takeoverUnanswered = false;

  /** `opts` carries a resolved ElectionConfig (resolveElectionConfig): nothing here checks it again. */
  constructor(opts: CandidateOptions) {
    this.store = opts.store;
    this.lease = opts.lease;
    this.identity = opts.identity;
    this.timings = { leaseDurationMs: opts.leaseDurationMs, renewDeadlineMs: opts.renewDeadlineMs, retryPeriodMs: opts.retryPeriodMs };
    this.clock = opts.clock ?? realClock;
    // A logger that throws must not skip a step of the election (the sidecar's and the library's).
    this.log = opts.log ? guardedLogger(opts.log) : silentLogger;
    this.notify = listenerCalls(opts.listener ?? {}, this.log);
    this.writer = { identity: this.identity, leaseDurationMs: opts.leaseDurationMs, store: this.store };
    this.requestTimeoutMs = opts.requestTimeoutMs ?? opts.renewDeadlineMs / 2;
    this.holdOff = new StandBack(this.clock);
    this.gate = new EligibilityGate(allEligible(opts.eligibility ? [opts.eligibility, this.holdOff] : [this.holdOff]) ?? null, this.clock, this.log);
    this.releaseOnCancel = opts.releaseOnCancel ?? true;
    const contentionWindowMs = opts.contentionWindowMs;
    this.view = new RecordView(this.identity, this.timings, this.clock, this.log);
    const context: CandidateContext = {
      identity: this.identity,
      lease: this.lease,
      store: this.store,
      clock: this.clock,
      log: this.log,
      view: this.view,
      requestTimeoutMs: this.requestTimeoutMs,
      call: (op, send) => this.call(op, send),
      observe: (got, own) => this.observe(got, own),
    };
    this.releaser = new LeaseRelease({
      ...context,
      drain: opts.drain ?? null,
      drainTimeoutMs: opts.drainTimeoutMs ?? opts.renewDeadlineMs,
      releaseGate: opts.releaseGate ?? (() => true),
      keepAcquireTime: opts.releaseKeepsAcquireTime ?? false,
      leaseDurationMs: opts.leaseDurationMs,
    });
    const safetyRereadMs = opts.safetyRereadMs ?? Math.max(60 * opts.retryPeriodMs, opts.leaseDurationMs);
    const random = opts.random ?? Math.random;
    const leading = () => this.term !== null;
    const campaigning = () => this.gate.campaigning();
    const store = this.store;
    this.claim =
      (opts.successorClaims ?? true) && store.successorClaims
        ? new SuccessorClaimant({
            ...context,
            random,
            timings: this.timings,
            claim: claimTimings(safetyRereadMs, contentionWindowMs, opts.leaseDurationMs),
            support: store.successorClaims,
            leading,
            campaigning,
          })
        : null;
    this.schedule = new AttemptSchedule({
      timings: this.timings,
      clock: this.clock,
      random,
      safetyRereadMs,
      contentionWindowMs,
      view: this.view,
      leading,
      claim: this.claim,
      campaigning,
    });
  }

  isLeader(): boolean {
    return this.term !== null;
  }

  snapshot(): CandidateSnapshot {
    const rec = this.view.observed?.record ?? null;
    const t = this.term;
    return {
      lease: this.lease,
      identity: this.identity,
      isLeader: t !== null,
      holder: rec ? rec.holderIdentity : null,
      fencingToken: t?.token ?? null,
      observedToken: rec?.leaseTransitions ?? null,
      highestToken: this.view.highestToken,
      acquiredAt: t ? t.acquiredAt : (rec?.acquireTime ?? null),
      renewedAt: t ? t.renewedAt : (rec?.renewTime ?? null),
      validUntil: t?.validUntil ?? null,
      lastRenewMonotonic: this.lastRenewMono,
      loopDueMonotonic: this.schedule.loopDueMono,
      running: this.loop !== null,
      standingAside: this.gate.standingAside(),
    };
  }

  /**
   * Starts the campaign loop: standbys retry every retryPeriod × (1 + rand × 1.2); the leader
   * renews every retryPeriod. Returns at once; stop() ends it.
   */
  start(): void {
    if (this.loop) return;
    this.stopped = false;
    // A standby that can watch the store acts as soon as the record is released, and while
    // its watch is connected it waits for events instead of polling (see AttemptSchedule).
    // The watch is only a hint: every decision is still a read and a compare-and-swap.
    // A polling store polls quickly only for the named successor, whose takeover waits on it.
    const endQuick = this.claim?.pollQuicklyWhileNamed();
    const unwatch = this.store.watch?.(
      this.lease,
      (e) => this.onWatchEvent(e),
      (healthy) => this.schedule.setWatchHealth(healthy),
    );
    this.unwatch = () => {
      unwatch?.();
      endQuick?.();
    };
    this.loop = this.runLoop();
  }

  /** client-go's Run: acquire, then renew until the term ends, and again, until stop(). */
  private async runLoop(): Promise<void> {
    // A change of the app's eligibility is acted on at once, not at the next turn.
    const unsubscribe = this.gate.subscribe(() => this.schedule.wakeUp());
    try {
      await this.campaign();
    } finally {
      unsubscribe?.();
    }
  }

  private async campaign(): Promise<void> {
    while (!this.stopped) {
      // Acquire: a standby tries at its turn (see AttemptSchedule) until it leads.
      while (!this.stopped && this.term === null) await this.turn();
      // Renew: the leader renews every retryPeriod until it steps down (at renewDeadline
      // without a successful renewal, on finding another holder, or on stop()).
      while (!this.stopped && this.term !== null) await this.turn();
    }
  }

  /** One turn of the loop: an attempt if one is due, then the wait until the next. */
  private async turn(): Promise<void> {
    // A term that ended goes through the gate before anything else: no claim, no attempt, no new
    // term while its work may still run.
    if (this.ended) {
      await this.endOfTerm(false);
      return;
    }
    // A claim first: a polling standby is due for an attempt at every turn, so after it the claim
    // would never come. The claim's write (or the read after a lost race) is an observation too.
    if (!this.gate.campaigning()) {
      await this.standAside();
    } else if (this.claim?.due()) {
      this.schedule.attempting(2 * this.requestTimeoutMs);
      await this.claim.write();
    } else if (this.schedule.dueForAttempt()) {
      // Each attempt is at most three requests, each bounded by requestTimeout.
      this.schedule.attempting(3 * this.requestTimeoutMs);
      await this.tryAcquireOrRenew(true);
    }
    if (this.stopped) return;
    // An event arrived while that attempt was in flight (its read may predate the release the
    // event reported): look again now instead of sleeping through it.
    if (this.schedule.takeWakePending()) return;
    await this.schedule.wait();
  }

  /**
   * A watch event. Standbys observe the record it carries exactly as if they had read it
   * (expiry is judged from that moment), and try when the lease is released (at their turn in
   * the contention window) or gone.
   * The leader ignores events: it renews from its own cache and learns of others through
   * its compare-and-swap.
   */
  private onWatchEvent(e: WatchEvent): void {
    if (e.deleted) this.view.noteDeleted(e.deleted.leaseTransitions);
    if (this.term) return;
    // A hint without a record says only "it changed": read it, even while waiting on the watch
    // (otherwise a release would be noticed only at the expiry of the record last seen).
    if (e.record === undefined) {
      this.view.interruptAbsence();
      this.schedule.hint();
    }
    if (e.record === null) this.view.noteAbsent();
    if (e.record) {
      const claimBefore = this.claim?.sinceMono;
      this.observe(e.record);
      // A held lease needs no turn now, unless its successor claim changed: the wait until a
      // claim is due (to volunteer, or to stand back) is judged again.
      // (Our own takeover's event, which ends our claim, is not news.)
      if (e.record.record.holderIdentity !== '' && (this.claim?.sinceMono === claimBefore || this.view.isOwn(e.record))) return;
    }
    this.schedule.wakeUp();
  }

  /**
   * Ends the loop (waiting for a request in flight, or for the gate of a term that ended), steps
   * down, and sends the term through the end-of-term gate: its work drains, "not leader" reaches
   * every reader (releaseGate), then the release (releaseOnCancel). When either does not
   * happen in time, the lease is left to expire.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.schedule.interrupt();
    this.unwatch?.();
    this.unwatch = null;
    await this.loop;
    this.loop = null;
    const leading = this.term !== null;
    const mayHold = !leading && this.ended === null && this.takeoverUnanswered;
    this.stepDown('shutting down');
    try {
      // The term given up now, or one lost just before the stop whose gate the loop had not run.
      if (this.ended) await this.endOfTerm(leading);
      if (leading) return;
      // A takeover that landed unanswered began a term nobody was told of: no work to drain. Released
      // from a read, as the view predates the write that may have landed.
      if (mayHold && this.releaseOnCancel && (await this.releaser.allowed())) await this.releaser.send(true);
      await this.claim?.withdraw();
    } finally {
      this.holdOff.close();
    }
  }

  /**
   * The one gate at the end of a term, whatever ended it: stop(), a step-down for the app, the
   * renew deadline, a lost or vanished record, a store error. The step-down has been announced
   * (the listener heard it first); then the term's work drains (`drain`, at most drainTimeoutMs);
   * then "not leader" must have reached every reader (`releaseGate`); then, for a term given up
   * (`giveUp`: stop() or the app's eligibility) and with releaseOnCancel, the release (only of a
   * record this candidate wrote). A term lost (its renewals unanswered, another holder, its record
   * gone) is not released: the store did not answer, or the record is not ours. Nothing else
   * happens meanwhile: the loop runs this before any claim or attempt, so no other term begins
   * while the work may run.
   *
   * When the work was not seen to stop in time, or the readers could not be told, the lease is
   * not released: it expires, and this candidate stands aside until it could have expired for the
   * others (the term's last successful renewal plus the lease duration). That is the one moment
   * after which a next term may begin while this term's work may still run: the moment a paused
   * leader's term ends too, which only the fencing token covers. The same choice on every path.
   */
  private async endOfTerm(giveUp: boolean): Promise<void> {
    const ended = this.ended;
    if (!ended) return;
    // For liveness: the drain, the gate and a release of a few requests.
    this.schedule.attempting(this.releaser.drainBoundMs + 10 * this.requestTimeoutMs);
    try {
      const stopped = await this.releaser.drained();
      if (stopped && (await this.releaser.allowed())) {
        if (giveUp && this.releaseOnCancel) await this.releaser.send();
        return;
      }
      const leftMs = ended.renewedAtMono + this.timings.leaseDurationMs - this.clock.monotonic();
      const fields = { token: ended.token, drainTimeoutMs: this.releaser.drainBoundMs, standAsideMs: Math.max(0, Math.round(leftMs)) };
      // An error: the library logs errors only by default, and this one says a term may overlap the next.
      if (!stopped) this.log.error('the work did not finish within drainTimeoutMs: the lease is left to expire, not released', fields);
      // The release gate's owner said why (the sidecar: the status files could not be written).
      else this.log.debug('the release gate said no: the lease is left to expire, not released', fields);
      if (leftMs > 0) this.holdOff.standBack(`the work of token ${ended.token} was not seen to stop: waiting until its lease could have expired`, leftMs);
    } finally {
      this.ended = null;
      this.schedule.attemptEnded();
    }
  }

  /**
   * A turn while the app is not eligible. A leader steps down the graceful way, as stop() does
   * (the step-down is announced first, then the release), and stays a standby; a standby
   * withdraws its successor claim, and only reads the record at its usual rhythm (its view,
   * holder and expiry, stays current for when the app is eligible again). It never writes a term.
   */
  private async standAside(): Promise<void> {
    if (this.term) {
      this.stepDown(this.gate.standingAside()?.reason ?? 'the app is not eligible');
      await this.endOfTerm(true);
      return;
    }
    if (this.claim?.mayHoldClaim()) await this.claim.withdraw();
    if (!this.schedule.dueForAttempt()) return;
    this.schedule.attempting(this.requestTimeoutMs);
    try {
      const current = await this.call('get', (o) => this.store.get(this.lease, o));
      if (current) this.observe(current);
      else this.view.noteAbsent();
    } catch (err) {
      this.log.debug('reading the lease while standing aside failed', { reason: describeError(err) });
    } finally {
      this.schedule.attemptEnded();
    }
  }

  /**
   * One attempt, as client-go's tryAcquireOrRenew: true when this candidate leads afterwards.
   * Never throws: a failed backend call is a failed attempt. `atTurn` (the loop's attempts): a
   * standby that finds the lease free before its turn for that moment does not write yet.
   */
  async tryAcquireOrRenew(atTurn = false): Promise<boolean> {
    // A term that ended goes through its gate first (the loop does this at its turn; a caller
    // driving attempts by hand gets the same order).
    if (this.ended) await this.endOfTerm(false);
    this.schedule.attemptStarted();
    try {
      return await this.attempt(atTurn);
    } catch (err) {
      this.attemptFailed(err);
      return false;
    } finally {
      this.schedule.attemptEnded();
    }
  }

  /**
   * The algorithm, over one observed record:
   *   1. The leader renews from its cached record: one request (client-go's fast path).
   *   2. Read the record (the named successor, at a release it has seen, writes at once). A standby reads even when its watch showed the lease free: writing
   *      straight from the event saved a request, but with many standbys the new holder's event
   *      reaches them all only after a while (each must wake and parse it), and every standby
   *      whose turn came first sent a write that conflicted (nearly all of them with many
   *      standbys; docs/benchmarks.md, "One lease, 100 standbys", counts the conflicts).
   *      The API server answers a read with the latest write, so a turn that comes after the
   *      winner's write sees it and sends nothing.
   *   3. Absent: the sitting leader recreates it at once as a new term; anyone else first
   *      waits a lease duration from the moment it found it absent, because the holder of a
   *      deleted record (or a leader on a replaced store) may still be acting.
   *   4. Held by another (or under our identity by a write that is not ours) and not expired:
   *      wait; a leader that finds this has lost the lease and steps down.
   *   5. Ours and leading: renew, keeping the token. Otherwise (released, expired, or ours from
   *      an ended term): a new term with the next token after any seen.
   */
  private async attempt(atTurn: boolean): Promise<boolean> {
    const term = this.term;

    // 1. Fast path.
    const cached = this.view.observed;
    if (term && cached) {
      try {
        return await this.write('update', term, (now) => renewalRecord(this.writer, cached.record, now, this.term?.acquiredAt), cached.version);
      } catch (err) {
        this.notify('onSlowPath');
        this.log.debug('optimistic renewal failed; reading the lease', { error: describeError(err) });
      }
    }

    // 2. Read; but the named successor writes straight from a release it has seen: it is the
    // one standby meant to go now, so the herd the read protects against is not there. Only from
    // a view at most one request timeout old: an older version (a retry after its first write
    // went unanswered, a pause) may have been issued again to a re-created record since.
    const seen = this.view.observed;
    if (!term && seen && seen.record.holderIdentity === '' && this.claim?.named() && this.fresh(seen)) {
      try {
        return await this.write('update', null, (now) => newTermRecord(this.writer, seen.record, now, this.view.highestToken), seen.version);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    const current = await this.call('get', (o) => this.store.get(this.lease, o));

    // 3. Absent. Leadership is judged now, not at the start of the attempt: a candidate that
    // stepped down while its read was in flight is no longer the sitting leader.
    if (current === null) {
      if (this.sittingLeader()) {
        // It held the record, so nobody else can hold it: the term ends, its work drains through
        // the gate, and the record is created at once as a new term (others wait a lease duration).
        this.stepDown('the lease record disappeared');
        await this.endOfTerm(false);
        if (this.stopped || !this.gate.campaigning()) return false;
      } else {
        this.stepDown(`no successful renewal within renewDeadline (${this.timings.renewDeadlineMs} ms)`);
        this.view.noteAbsent();
        if (this.view.absenceWaitPending()) return false;
      }
      try {
        return await this.write('create', null, (now) => freshRecord(this.writer, now, this.view.highestToken + 1));
      } catch (err) {
        // Someone else created it first: read it now, so its token is known to us even if
        // it is deleted again before our next attempt.
        if (err instanceof ConflictError) {
          const winner = await this.safeGet();
          if (winner) this.observe(winner);
        }
        throw err;
      }
    }

    // 4. Held by another.
    this.observe(current);
    const own = this.view.isOwn(current);
    if (!own && current.record.holderIdentity !== '' && !this.view.expired(current.record)) {
      this.stepDown(
        `the lease is held by ${current.record.holderIdentity}${current.record.holderIdentity === this.identity ? ' (another process with this identity)' : ''}`,
      );
      return false;
    }

    // 5. Renew, or open a new term.
    if (own && this.term) {
      return this.write('update', this.term, (now) => renewalRecord(this.writer, current.record, now, this.term?.acquiredAt), current.version);
    }
    // A standby whose read found the lease free before its turn for that moment waits for the
    // turn, as if an event had shown it: a hint without a record woke it (PostgreSQL's
    // notification, SQLite's poll), or its read crossed the expiry. The schedule wakes it then.
    if (atTurn && !this.term && this.schedule.turnPending()) return false;
    this.stepDown('the lease changed hands');
    return this.write('update', null, (now) => newTermRecord(this.writer, current.record, now, this.view.highestToken), current.version);
  }

  /**
   * One write: builds the record at the moment the request starts, sends it, and on success
   * renews `renewing` or opens a new term (null). Both count from the request's start.
   */
  private async write(op: 'create' | 'update', renewing: Term | null, build: (now: Date) => LeaseRecord, expectedVersion?: string): Promise<boolean> {
    // The app may have become ineligible while this attempt read, or the term may have ended (its
    // renew deadline) while it was in flight: a new term is sent only past the end-of-term gate.
    if (renewing === null && (!this.gate.campaigning() || this.ended !== null)) return false;
    // A takeover counts on the version it names being the record as it is now. A pause between
    // the read and this moment can make that view old; it is read again at the next turn.
    if (op === 'update' && renewing === null && !this.view.confirmedWithin(expectedVersion!, this.requestTimeoutMs)) {
      this.log.debug('not taking over from a view older than one request timeout; reading again', { requestTimeoutMs: this.requestTimeoutMs });
      return false;
    }
    const start: Stamp = { wall: this.clock.now(), mono: this.clock.monotonic() };
    // Taken before the request: our own write's watch event can arrive before its answer.
    const seen = this.view.observed;
    const freedAtMono = renewing || !seen ? null : this.view.freeAtMono(seen);
    const record = build(start.wall);
    this.view.noteWrite(record);
    let version: string;
    try {
      version = await this.call(op, (o) =>
        op === 'create' ? this.store.create(this.lease, record, o) : this.store.update(this.lease, record, expectedVersion!, o),
      );
    } catch (err) {
      // A conflict or a refused record is an answer: nothing landed. Anything else may have.
      if (renewing === null) this.takeoverUnanswered = !(err instanceof ConflictError || err instanceof InvalidRecordError);
      throw err;
    }
    if (renewing === null) this.takeoverUnanswered = false;
    return this.succeeded({ record, version }, renewing, start, freedAtMono);
  }

  /** The record `seen` is the one last seen, confirmed at most one request timeout ago (RecordView.confirmedWithin). */
  private fresh(seen: VersionedRecord): boolean {
    return this.view.confirmedWithin(seen.version, this.requestTimeoutMs);
  }

  /**
   * Leading, and still inside renewDeadline by the clock, not only by the deadline timer: after
   * a pause the answer to a read can be handled before the overdue timer has run.
   */
  private sittingLeader(): boolean {
    return this.term !== null && this.clock.monotonic() < this.term.renewedAtMono + this.timings.renewDeadlineMs;
  }

  /**
   * Takes in a record read, watched or written (own), and announces a different leader: a new
   * holder, or the same holder in a new term.
   */
  private observe(got: VersionedRecord, own = false): void {
    this.claim?.seen(this.view.observed, got);
    if (!this.view.observe(got, own)) return;
    if (!own && got.record.holderIdentity !== this.identity) {
      this.log.info(got.record.holderIdentity === '' ? 'lease released' : 'new leader observed', {
        holder: got.record.holderIdentity,
        token: got.record.leaseTransitions,
      });
    }
    this.notify('onNewLeader', got.record.holderIdentity, got.record);
  }

  /**
   * A write landed. It renews `renewing` only if that term is still the current one (we may
   * have stepped down at the deadline while it was in flight: a late success never revives a
   * term), and it counts from the start of the request: others can have seen the write only
   * after that instant, so renewDeadline from there is still before any of them may take over.
   */
  private succeeded(got: VersionedRecord, renewing: Term | null, start: Stamp, freedAtMono: number | null = null): boolean {
    this.observe(got, true);
    if (renewing !== null && renewing !== this.term) return false;
    const validUntil = new Date(start.wall.getTime() + this.timings.renewDeadlineMs);
    if (start.mono + this.timings.renewDeadlineMs <= this.clock.monotonic()) {
      // The answer came after the deadline it would have set: never announce a term already past.
      this.stepDown(`the renewal was answered after renewDeadline (${this.timings.renewDeadlineMs} ms)`);
      return false;
    }
    this.lastRenewMono = start.mono;
    if (renewing) {
      renewing.deadline.cancel();
      Object.assign(renewing, { renewedAt: start.wall, validUntil, renewedAtMono: start.mono, deadline: this.armDeadline(start.mono) });
      this.log.debug('renewed', { token: renewing.token, validUntil: validUntil.toISOString() });
      this.notify('onRenewed', this.publicTerm(renewing));
      return true;
    }
    const token = got.record.leaseTransitions;
    this.term = {
      token,
      acquiredAt: got.record.acquireTime ?? start.wall,
      renewedAt: start.wall,
      validUntil,
      renewedAtMono: start.mono,
      deadline: this.armDeadline(start.mono),
    };
    // How long after the lease freed (as this candidate saw it) the takeover landed: the figure
    // the contention window trades against conflicts. Absent when it was created from nothing.
    const sinceFreeMs = freedAtMono === null ? undefined : Math.round(this.clock.monotonic() - freedAtMono);
    this.log.info('became leader', { token, validUntil: validUntil.toISOString(), sinceFreeMs });
    this.notify('onStartedLeading', sinceFreeMs === undefined ? this.publicTerm(this.term) : { ...this.publicTerm(this.term), sinceFreeMs });
    return true;
  }

  private publicTerm(t: Term): LeadershipTerm {
    return { token: t.token, acquiredAt: t.acquiredAt, renewedAt: t.renewedAt, validUntil: t.validUntil };
  }

  /** Steps down at startMono + renewDeadline unless a later renewal re-arms it first. */
  private armDeadline(startMono: number): Timer {
    const due = startMono + this.timings.renewDeadlineMs - this.clock.monotonic();
    return this.clock.setTimer(() => {
      if (this.term?.renewedAtMono === startMono) {
        this.stepDown(`no successful renewal within renewDeadline (${this.timings.renewDeadlineMs} ms)`);
      }
    }, due);
  }

  /**
   * Ends the current term, if any; the listener hears it before anything else happens. The term
   * then waits for the end-of-term gate (endOfTerm), which the loop runs at once.
   */
  private stepDown(reason: string): void {
    const t = this.term;
    if (!t) return;
    this.term = null;
    this.ended = t;
    t.deadline.cancel();
    this.log.warn('stopped leading', { token: t.token, reason });
    this.notify('onStoppedLeading', reason);
    this.schedule.wakeUp();
  }

  private attemptFailed(err: unknown): void {
    const reason = err instanceof ConflictError ? 'lost a write race (conflict)' : describeError(err);
    if (this.term) {
      this.log.warn('renewal failed', { reason });
      this.notify('onRenewFailed', reason);
    } else {
      const level = err instanceof ConflictError ? 'debug' : 'warn';
      this.log[level]('acquire attempt failed', { reason });
    }
  }

  /**
   * Gives the lease up now (release.ts), without the gate's drain: for tests and tools that hold
   * no work. The term ends first, so nobody is told to lead while another may already hold the
   * released lease.
   */
  release(): Promise<boolean> {
    this.stepDown('releasing the lease');
    this.ended = null;
    return this.releaser.send();
  }

  private async safeGet(): Promise<VersionedRecord | null> {
    try {
      return await this.call('get', (o) => this.store.get(this.lease, o));
    } catch {
      return null;
    }
  }

  /** One backend call, bounded by requestTimeout (bounded-call.ts); a reopened store interrupts an absence. */
  private call<T>(op: string, send: (opts: CallOptions) => Promise<T>): Promise<T> {
    return boundedCall(this.clock, this.requestTimeoutMs, `${this.store.backend} ${op}`, send, (e) => {
      if (e instanceof StoreReopenedError) this.view.interruptAbsence();
    });
  }
}
