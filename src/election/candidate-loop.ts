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
import { realClock, type Clock } from '../clock.js';
import { ConflictError, InvalidRecordError, describeError } from '../errors.js';
import { EligibilityCheck } from '../holder/eligibility-check.js';
import { allEligible } from '../health/all-eligible.js';
import { listenerCalls, type Notify } from './listener-calls.js';
import { EndOfTerm } from './end-of-term.js';
import { freshRecord, newTermRecord, renewalRecord, type Writer } from './term-records.js';
import { guardedLogger, silentLogger, type Logger } from '../log.js';
import type { LeaseRecord } from '../backends/lease-store.js';
import { SuccessorClaimant, claimTimings } from './successor.js';
import type { Timings } from '../config/election-options.js';
import { AttemptSchedule } from './attempt-schedule.js';
import { RecordAccess } from './record-access.js';
import { RecordView } from './record-view.js';
import type { CandidateOptions, CandidateSnapshot, Standing } from './candidate-options.js';
import { Terms, type Stamp, type Term } from './terms.js';

export type { CandidateListener, CandidateOptions, CandidateSnapshot, LeadershipTerm } from './candidate-options.js';

/**
 * The internal engine, not exported by the package: apps use LeaderElection
 * (leader-election.ts), which wraps it with callbacks and a drain. Named for what it is, one
 * candidate's loop, so that it is never taken for LeaderElection. One candidate: client-go's
 * two phases, acquire (a standby tries at its turn until it leads) and renew (the leader renews
 * every retryPeriod until it steps down), over one attempt that reads and compare-and-swaps the
 * record. What it believes about the record is its RecordView, reached through its RecordAccess;
 * when it acts next is its AttemptSchedule; its terms are its Terms, each ended through its EndOfTerm.
 */
export class CandidateLoop implements Standing {
  private readonly clock: Clock;
  /** Calls the listener; whatever it throws goes no further (listener-calls.ts). */
  private readonly notify: Notify;
  private readonly log: Logger;
  readonly lease: string;
  readonly identity: string;
  readonly timings: Readonly<Timings>;
  /** The one gate at the end of every term: the drain, the release gate, the release or the stand-aside (end-of-term.ts). */
  private readonly endOfTerm: EndOfTerm;
  /** Who writes the records: this candidate, its lease duration, the store's bound on tokens. */
  private readonly writer: Writer;
  private readonly requestTimeoutMs: number;
  /** What this candidate believes about the record. */
  private readonly view: RecordView;
  /** Its bounded store calls, each answer taken into the view and announced. */
  private readonly access: RecordAccess;
  /** When this candidate acts next. */
  private readonly schedule: AttemptSchedule;
  /** This standby's successor claim; null when it makes none (successorClaims false, or a store that keeps none). */
  private readonly claim: SuccessorClaimant | null;
  /** Whether the app lets this candidate campaign (and no stand-aside after a term: EndOfTerm.holdOff). */
  private readonly eligibility: EligibilityCheck;

  /** Its terms: the current one, or the last that ended, and its phase. */
  private readonly terms: Terms;
  /**
   * The campaign: null before start(); its loop and the end of its watch while it runs;
   * `stopping` from stop() on, kept once the loop has ended (a stopped candidate does not recreate
   * a vanished record, not even in an attempt made by hand).
   */
  private campaign: { readonly loop: Promise<void> | null; readonly unwatch: (() => void) | null; readonly stopping: boolean } | null = null;

  /** `opts` carries a resolved ElectionConfig (resolveElectionConfig): nothing here checks it again. */
  constructor(opts: CandidateOptions) {
    const store = opts.store;
    this.lease = opts.lease;
    this.identity = opts.identity;
    this.timings = { leaseDurationMs: opts.leaseDurationMs, renewDeadlineMs: opts.renewDeadlineMs, retryPeriodMs: opts.retryPeriodMs };
    this.clock = opts.clock ?? realClock;
    // A logger that throws must not skip a step of the election (the sidecar's and the library's).
    this.log = opts.log ? guardedLogger(opts.log) : silentLogger;
    this.notify = listenerCalls(opts.listener ?? {}, this.log);
    this.writer = { identity: this.identity, leaseDurationMs: opts.leaseDurationMs, store };
    this.requestTimeoutMs = opts.requestTimeoutMs ?? opts.renewDeadlineMs / 2;
    this.view = new RecordView(this.identity, this.timings, this.requestTimeoutMs, this.clock, this.log);
    const { clock, log, view, identity, lease, timings, requestTimeoutMs } = this;
    const access = (this.access = new RecordAccess({
      identity,
      lease,
      store,
      clock,
      log,
      notify: this.notify,
      view,
      requestTimeoutMs,
      retryPeriodMs: timings.retryPeriodMs,
    }));
    const safetyRereadMs = opts.safetyRereadMs ?? Math.max(60 * opts.retryPeriodMs, opts.leaseDurationMs);
    const random = opts.random ?? Math.random;
    const { contentionWindowMs, leaseDurationMs } = opts;
    const claim = claimTimings(safetyRereadMs, contentionWindowMs, leaseDurationMs);
    const support = (opts.successorClaims ?? true) ? store.successorClaims : undefined;
    this.claim = support ? new SuccessorClaimant({ identity, lease, clock, log, random, timings, claim, support, view, access, candidate: this }) : null;
    this.schedule = new AttemptSchedule({ timings, clock, random, safetyRereadMs, contentionWindowMs, view, candidate: this, claim: this.claim });
    const schedule = this.schedule;
    this.terms = new Terms({ clock, log, notify: this.notify, renewDeadlineMs: opts.renewDeadlineMs, schedule });
    this.endOfTerm = new EndOfTerm({
      clock,
      log,
      terms: this.terms,
      schedule,
      requestTimeoutMs,
      view,
      access,
      releaseOnCancel: opts.releaseOnCancel ?? true,
      retryPeriodMs: opts.retryPeriodMs,
      drain: opts.drain ?? null,
      drainTimeoutMs: opts.drainTimeoutMs ?? opts.renewDeadlineMs,
      releaseGate: opts.releaseGate ?? (() => true),
      keepAcquireTime: opts.releaseKeepsAcquireTime ?? false,
      leaseDurationMs,
    });
    const holdOff = this.endOfTerm.holdOff;
    this.eligibility = new EligibilityCheck(allEligible(opts.eligibility ? [opts.eligibility, holdOff] : [holdOff]) ?? null, clock, log);
  }

  isLeader(): boolean {
    return this.terms.leading !== null;
  }

  /** Whether the app lets this candidate campaign now. */
  campaigning(): boolean {
    return this.eligibility.campaigning();
  }

  snapshot(): CandidateSnapshot {
    const rec = this.view.observed?.record ?? null;
    const t = this.terms.leading;
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
      // Kept after a step-down: the start of the last successful acquire/renew.
      lastRenewMonotonic: this.terms.lastRenewMono,
      loopDueMonotonic: this.schedule.loopDueMono,
      running: this.campaign?.loop != null,
      standingAside: this.eligibility.standingAside(),
    };
  }

  private get stopped(): boolean {
    return this.campaign?.stopping ?? false;
  }

  /**
   * Starts the campaign loop: standbys retry every retryPeriod × (1 + rand × 1.2); the leader
   * renews every retryPeriod. Returns at once; stop() ends it.
   */
  start(): void {
    if (this.campaign?.loop) return;
    this.campaign = { loop: null, unwatch: null, stopping: false };
    // A standby that can watch the store acts as soon as the record is released, and while
    // its watch is connected it waits for events instead of polling (see AttemptSchedule).
    // A polling store polls quickly only for the named successor, whose takeover waits on it.
    const endQuick = this.claim?.pollQuicklyWhileNamed();
    const unwatch = this.access.watch(this, this.schedule, this.claim !== null);
    const end = () => {
      unwatch?.();
      endQuick?.();
    };
    this.campaign = { loop: null, unwatch: end, stopping: false };
    const loop = this.runLoop();
    this.campaign = { ...this.campaign, loop };
  }

  /** client-go's Run: acquire, then renew until the term ends, and again, until stop(). */
  private async runLoop(): Promise<void> {
    // A change of the app's eligibility is acted on at once, not at the next turn.
    const unsubscribe = this.eligibility.subscribe(() => this.schedule.wakeUp());
    try {
      await this.turns();
    } finally {
      unsubscribe?.();
    }
  }

  private async turns(): Promise<void> {
    while (!this.stopped) {
      // Acquire: a standby tries at its turn (see AttemptSchedule) until it leads.
      while (!this.stopped && this.terms.leading === null) await this.turn();
      // Renew: the leader renews every retryPeriod until it steps down (at renewDeadline
      // without a successful renewal, on finding another holder, or on stop()).
      while (!this.stopped && this.terms.leading !== null) await this.turn();
    }
  }

  /** One turn of the loop: an attempt if one is due, then the wait until the next. */
  private async turn(): Promise<void> {
    // A term that ended goes through the gate before anything else: no claim, no attempt, no new
    // term while its work may still run.
    if (this.terms.ended) {
      await this.endOfTerm.gate();
      return;
    }
    // A claim first: a polling standby is due for an attempt at every turn, so after it the claim
    // would never come. The claim's write (or the read after a lost race) is an observation too.
    if (!this.eligibility.campaigning()) {
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
   * Ends the loop (waiting for a request in flight, or for the gate of a term that ended), steps
   * down, and sends the term through the end-of-term gate: its work drains, "not leader" reaches
   * every reader (releaseGate), then the release (releaseOnCancel). When either does not
   * happen in time, the lease is left to expire.
   */
  async stop(): Promise<void> {
    const running = this.campaign;
    this.campaign = { loop: running?.loop ?? null, unwatch: null, stopping: true };
    this.endOfTerm.stopRetrying();
    this.schedule.interrupt();
    running?.unwatch?.();
    await running?.loop;
    this.campaign = { loop: null, unwatch: null, stopping: true };
    const leading = this.terms.leading !== null;
    const mayHold = !leading && this.terms.ended === null && this.view.mayHaveLanded('takeover');
    this.terms.stepDown('shutting down', 'given up');
    try {
      // The term given up now, or one lost just before the stop whose gate the loop had not run.
      if (this.terms.ended) await this.endOfTerm.gate();
      if (leading) return;
      // A takeover that landed unanswered began a term nobody was told of: no work to drain.
      if (mayHold) await this.endOfTerm.releaseUnannounced();
      await this.claim?.withdraw();
    } finally {
      this.endOfTerm.close();
    }
  }

  /**
   * A turn while the app is not eligible. A leader steps down the graceful way, as stop() does
   * (the step-down is announced first, then the release), and stays a standby; a standby
   * withdraws its successor claim, and only reads the record at its usual rhythm (its view,
   * holder and expiry, stays current for when the app is eligible again). It never writes a term.
   */
  private async standAside(): Promise<void> {
    if (this.terms.leading) {
      this.terms.stepDown(this.eligibility.standingAside()?.reason ?? 'the app is not eligible', 'given up');
      await this.endOfTerm.gate();
      return;
    }
    if (this.claim?.mayHoldClaim()) await this.claim.withdraw();
    if (!this.schedule.dueForAttempt()) return;
    this.schedule.attempting(this.requestTimeoutMs);
    try {
      const current = await this.access.get();
      if (current) this.access.observe(current);
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
    if (this.terms.ended) await this.endOfTerm.gate();
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
    const term = this.terms.leading;

    // 1. Fast path.
    const cached = this.view.observed;
    if (term && cached) {
      try {
        return await this.write('update', term, (now) => renewalRecord(this.writer, cached.record, now, this.terms.leading?.acquiredAt), cached.version);
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
    if (!term && seen && seen.record.holderIdentity === '' && this.claim?.named() && this.view.recentlyConfirmed(seen.version)) {
      try {
        return await this.write('update', null, (now) => newTermRecord(this.writer, seen.record, now, this.view.highestToken), seen.version);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    const readAtMono = this.clock.monotonic();
    const current = await this.access.get();

    // 3. Absent. Leadership is judged now, not at the start of the attempt: a candidate that
    // stepped down while its read was in flight is no longer the sitting leader.
    if (current === null) {
      if (this.terms.sitting()) {
        // It held the record, so nobody else can hold it: the term ends, its work drains through
        // the gate, and the record is created at once as a new term (others wait a lease duration),
        // unless the gate took longer than a request timeout (a drain, a pause): then the record
        // may have been created and deleted again meanwhile by another, whose term may still run,
        // and the absence is waited out as anyone's is.
        this.terms.stepDown('the lease record disappeared', 'record gone');
        await this.endOfTerm.gate();
        if (this.stopped || !this.eligibility.campaigning()) return false;
        if (this.clock.monotonic() - readAtMono > this.requestTimeoutMs) {
          this.view.noteAbsent();
          return false;
        }
      } else {
        this.terms.stepDown(`no successful renewal within renewDeadline (${this.timings.renewDeadlineMs} ms)`, 'lost');
        this.view.noteAbsent();
        if (this.view.absenceWaitPending()) return false;
      }
      try {
        return await this.write('create', null, (now) => freshRecord(this.writer, now, this.view.highestToken + 1));
      } catch (err) {
        // Someone else created it first: read it now, so its token is known to us even if
        // it is deleted again before our next attempt.
        if (err instanceof ConflictError) {
          const winner = await this.access.tryGet();
          if (winner) this.access.observe(winner);
        }
        throw err;
      }
    }

    // 4. Held by another.
    this.access.observe(current);
    const own = this.view.isOwn(current);
    if (!own && current.record.holderIdentity !== '' && !this.view.expired(current.record)) {
      this.terms.stepDown(
        `the lease is held by ${current.record.holderIdentity}${current.record.holderIdentity === this.identity ? ' (another process with this identity)' : ''}`,
        'lost',
      );
      return false;
    }

    // 5. Renew, or open a new term.
    const leading = this.terms.leading;
    if (own && leading) {
      return this.write('update', leading, (now) => renewalRecord(this.writer, current.record, now, this.terms.leading?.acquiredAt), current.version);
    }
    // A standby whose read found the lease free before its turn for that moment waits for the
    // turn, as if an event had shown it: a hint without a record woke it (PostgreSQL's
    // notification, SQLite's poll), or its read crossed the expiry. The schedule wakes it then.
    if (atTurn && !this.terms.leading && this.schedule.turnPending()) return false;
    this.terms.stepDown('the lease changed hands', 'lost');
    return this.write('update', null, (now) => newTermRecord(this.writer, current.record, now, this.view.highestToken), current.version);
  }

  /**
   * One write: builds the record at the moment the request starts, sends it, and on success
   * renews `renewing` or opens a new term (null). Both count from the request's start.
   */
  private async write(op: 'create' | 'update', renewing: Term | null, build: (now: Date) => LeaseRecord, expectedVersion?: string): Promise<boolean> {
    // The app may have become ineligible while this attempt read, or the term may have ended (its
    // renew deadline) while it was in flight: a new term is sent only past the end-of-term gate.
    if (renewing === null && (!this.eligibility.campaigning() || this.terms.ended !== null)) return false;
    // A takeover counts on the version it names being the record as it is now. A pause between
    // the read and this moment can make that view old; it is read again at the next turn.
    if (op === 'update' && renewing === null && !this.view.recentlyConfirmed(expectedVersion!)) {
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
      version = await (op === 'create' ? this.access.create(record) : this.access.update(record, expectedVersion!));
    } catch (err) {
      // A new term's write unanswered may have landed: a term of ours nobody was told of, which
      // stop() reads and releases. A conflict or a refused record is an answer: nothing landed.
      if (renewing === null) this.view.noteAnswer('takeover', err instanceof ConflictError || err instanceof InvalidRecordError);
      throw err;
    }
    if (renewing === null) this.view.noteAnswer('takeover', true);
    const got = { record, version };
    this.access.observe(got, true);
    return this.terms.landed(got, renewing, start, freedAtMono);
  }

  private attemptFailed(err: unknown): void {
    const reason = err instanceof ConflictError ? 'lost a write race (conflict)' : describeError(err);
    if (this.terms.leading) {
      this.log.warn('renewal failed', { reason });
      this.notify('onRenewFailed', reason);
    } else {
      const level = err instanceof ConflictError ? 'debug' : 'warn';
      this.log[level]('acquire attempt failed', { reason });
    }
  }
}
