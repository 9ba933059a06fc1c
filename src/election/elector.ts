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
import { BackendUnavailableError, ConflictError, InvalidRecordError, StoreReopenedError, describeError } from '../errors.js';
import { guardedLogger, silentLogger, type Logger } from '../log.js';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from '../backends/lease-store.js';
import { DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR } from './elector-config.js';
import { CLAIM_LIFETIME_REFRESHES, VOLUNTEER_WINDOW_MS, SuccessorClaimant, claimForNewTerm } from './successor.js';
import {
  validateContentionWindow,
  validateIdentity,
  validateKubernetesLeaseDuration,
  validateLeaseName,
  validateTimings,
  type Timings,
} from '../config/election-options.js';
import { AttemptSchedule } from './attempt-schedule.js';
import { RecordView, sameRecord } from './record-view.js';
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

export interface ElectorListener {
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

export interface ElectorOptions extends Timings {
  store: LeaseStore;
  lease: string;
  /** Must be unique among candidates; two processes with one identity both believe they lead. */
  identity: string;
  /** Default: the real clock. */
  clock?: Clock;
  /** Default Math.random; injected so tests pin the jitter. */
  random?: () => number;
  /** Release the lease when stop() is called while leading. Default true. */
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
   * When the lease becomes free (released, or expired as this standby sees it), a standby tries
   * after a random delay in [0, window], and not at all if it sees another take the lease
   * first: with many standbys only a few try (see contentionDelayMs). Default 32 ms.
   */
  contentionWindowMs?: number;
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
   * standby. It can only make the candidate stand back or step down earlier, never lead.
   * Default: none, always eligible.
   */
  eligibility?: Eligibility;
  /**
   * After a step-down (stop(), or for the app's health), the release waits for this (the app's
   * work to drain), and is skipped, leaving the lease to expire, when it resolves false. Given,
   * it decides the release whatever releaseOnCancel says. The caller bounds it: the elector
   * does not renew while it waits. Default: release at once, with releaseOnCancel.
   */
  drainBeforeRelease?: () => Promise<boolean>;
  listener?: ElectorListener;
  log?: Logger;
}

export interface ElectorSnapshot {
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
 * (leader-election.ts), which wraps it with callbacks and a drain. One candidate: client-go's
 * two phases, acquire (a standby tries at its turn until it leads) and renew (the leader renews
 * every retryPeriod until it steps down), over one attempt that reads and compare-and-swaps the
 * record. What it believes about the record is its RecordView; when it acts next is its
 * AttemptSchedule.
 */
export class LeaderElector {
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly listener: ElectorListener;
  private readonly log: Logger;
  readonly lease: string;
  readonly identity: string;
  readonly timings: Readonly<Timings>;
  private readonly releaseOnCancel: boolean;
  private readonly releaseGate: () => boolean | Promise<boolean>;
  private readonly releaseKeepsAcquireTime: boolean;
  private readonly requestTimeoutMs: number;
  /** What this candidate believes about the record. */
  private readonly view: RecordView;
  /** When this candidate acts next. */
  private readonly schedule: AttemptSchedule;
  /** This standby's successor claim; null when it makes none (successorClaims false, or a store that keeps none). */
  private readonly claim: SuccessorClaimant | null;
  private readonly eligibility: Eligibility | null;
  private readonly drainBeforeRelease: (() => Promise<boolean>) | null;
  /** Whether the last eligibility change left this candidate standing aside (for the logs); null before the first. */
  private wasAside: boolean | null = null;

  /** Non-null exactly while this candidate leads. */
  private term: Term | null = null;
  private loop: Promise<void> | null = null;
  private stopped = false;
  private unwatch: (() => void) | null = null;
  /** Monotonic start of the last successful acquire/renew, kept after a step-down; for liveness. */
  private lastRenewMono: number | null = null;

  constructor(opts: ElectorOptions) {
    validateTimings(opts);
    validateLeaseName(opts.lease);
    validateIdentity(opts.identity);
    // A Lease would otherwise hold a rounded duration: others would wait for a different lease.
    if (opts.store.backend === 'kubernetes') validateKubernetesLeaseDuration(opts.leaseDurationMs);
    this.store = opts.store;
    this.lease = opts.lease;
    this.identity = opts.identity;
    this.timings = { leaseDurationMs: opts.leaseDurationMs, renewDeadlineMs: opts.renewDeadlineMs, retryPeriodMs: opts.retryPeriodMs };
    this.clock = opts.clock ?? realClock;
    this.listener = opts.listener ?? {};
    // A logger that throws must not skip a step of the election (the sidecar's and the library's).
    this.log = opts.log ? guardedLogger(opts.log) : silentLogger;
    this.releaseOnCancel = opts.releaseOnCancel ?? true;
    this.releaseGate = opts.releaseGate ?? (() => true);
    this.releaseKeepsAcquireTime = opts.releaseKeepsAcquireTime ?? false;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? opts.renewDeadlineMs / 2;
    this.eligibility = opts.eligibility ?? null;
    this.drainBeforeRelease = opts.drainBeforeRelease ?? null;
    const contentionWindowMs = opts.contentionWindowMs ?? Math.min(DEFAULT_CONTENTION_WINDOW_MS, opts.leaseDurationMs);
    validateContentionWindow(contentionWindowMs, opts.leaseDurationMs);
    this.view = new RecordView(this.identity, this.timings, this.clock, this.log);
    const safetyRereadMs = opts.safetyRereadMs ?? Math.max(60 * opts.retryPeriodMs, opts.leaseDurationMs);
    const random = opts.random ?? Math.random;
    const leading = () => this.term !== null;
    const campaigning = () => this.campaigning();
    const store = this.store;
    this.claim =
      (opts.successorClaims ?? true) && store.successorClaims
        ? new SuccessorClaimant({
            identity: this.identity,
            lease: this.lease,
            store,
            clock: this.clock,
            random,
            log: this.log,
            timings: this.timings,
            claim: {
              // As often as a standby re-reads: the claimant's one write per safety period, beside its re-read.
              refreshMs: safetyRereadMs,
              lifetimeMs: CLAIM_LIFETIME_REFRESHES * safetyRereadMs,
              volunteerWindowMs: Math.min(VOLUNTEER_WINDOW_MS, opts.leaseDurationMs / 2),
              graceMs: Math.min(RELEASE_WINDOW_FACTOR * contentionWindowMs, opts.leaseDurationMs),
            },
            support: store.successorClaims,
            view: this.view,
            requestTimeoutMs: this.requestTimeoutMs,
            call: (op, send) => this.call(op, send),
            observe: (got) => this.observe(got),
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

  snapshot(): ElectorSnapshot {
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
      standingAside: this.standingAside(),
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
    const unsubscribe = this.eligibility?.subscribe(() => this.eligibilityChanged());
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
    // A claim first: a polling standby is due for an attempt at every turn, so after it the claim
    // would never come. The claim's write (or the read after a lost race) is an observation too.
    if (!this.campaigning()) {
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
   * Ends the loop (waiting for a request in flight), steps down, and releases the lease if
   * configured to. The step-down is announced before the release is attempted, so the app
   * stops acting as leader before anyone else can start; the release waits for the drain
   * (drainBeforeRelease), then releaseGate, and is not sent when either says no.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.schedule.interrupt();
    this.unwatch?.();
    this.unwatch = null;
    await this.loop;
    this.loop = null;
    const wasLeading = this.term !== null;
    this.stepDown('shutting down');
    if (wasLeading && (await this.drained()) && (await this.releaseAllowed())) await this.release();
    else if (!wasLeading) await this.claim?.withdraw();
  }

  /**
   * After a step-down, before the release gate: whether to release, once the app's work has
   * drained (drainBeforeRelease), else as releaseOnCancel says. A drain that throws or rejects
   * leaves the lease to expire: the work may still run.
   */
  private async drained(): Promise<boolean> {
    const drain = this.drainBeforeRelease;
    if (!drain) return this.releaseOnCancel;
    return (
      (await Promise.resolve()
        .then(drain)
        .catch(() => false)) === true
    );
  }

  private async releaseAllowed(): Promise<boolean> {
    try {
      return await this.releaseGate();
    } catch (err) {
      this.log.error('releaseGate failed: the lease is left to expire, not released', { error: describeError(err) });
      return false;
    }
  }

  /** Whether the app lets this candidate campaign: always without an eligibility; never when it throws. */
  private campaigning(): boolean {
    if (!this.eligibility) return true;
    try {
      return this.eligibility.eligible() === true;
    } catch {
      return false;
    }
  }

  private standingAside(): StandAside | null {
    if (this.campaigning()) return null;
    try {
      return this.eligibility?.standAside() ?? { reason: 'the app is not eligible', since: this.clock.now() };
    } catch {
      return { reason: 'the app is not eligible', since: this.clock.now() };
    }
  }

  /**
   * One warn line when the candidate starts standing aside (the first verdict included), one
   * info line when it campaigns; a change of reason in between (unhealthy, then held down) is
   * only a debug line.
   */
  private eligibilityChanged(): void {
    const aside = this.standingAside();
    const was = this.wasAside;
    this.wasAside = aside !== null;
    if (aside && was !== true) this.log.warn('standing aside', { reason: aside.reason, since: aside.since.toISOString() });
    else if (aside) this.log.debug('still standing aside', { reason: aside.reason, since: aside.since.toISOString() });
    else if (!aside && was !== false) this.log.info('the app is eligible: campaigning');
    this.schedule.wakeUp();
  }

  /**
   * A turn while the app is not eligible. A leader steps down the graceful way, as stop() does
   * (the step-down is announced first, then the release), and stays a standby; a standby
   * withdraws its successor claim, and only reads the record at its usual rhythm (its view,
   * holder and expiry, stays current for when the app is eligible again). It never writes a term.
   */
  private async standAside(): Promise<void> {
    if (this.term) {
      this.stepDown(this.standingAside()?.reason ?? 'the app is not eligible');
      // As on stop(): the work drains, and the release waits until "not leader" is where the app reads it.
      if ((await this.drained()) && (await this.releaseAllowed())) await this.release();
      return;
    }
    if (this.view.observed?.record.successor?.identity === this.identity) await this.claim?.withdraw();
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
        return await this.write('update', term, (now) => this.renewalRecord(cached.record, now), cached.version);
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
        return await this.write('update', null, (now) => this.newTermRecord(seen.record, now), seen.version);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
    const current = await this.call('get', (o) => this.store.get(this.lease, o));

    // 3. Absent. Leadership is judged now, not at the start of the attempt: a candidate that
    // stepped down while its read was in flight is no longer the sitting leader.
    if (current === null) {
      if (this.sittingLeader()) {
        this.stepDown('the lease record disappeared');
      } else {
        this.stepDown(`no successful renewal within renewDeadline (${this.timings.renewDeadlineMs} ms)`);
        this.view.noteAbsent();
        if (this.view.absenceWaitPending()) return false;
      }
      try {
        return await this.write('create', null, (now) => this.freshRecord(now));
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
      return this.write('update', this.term, (now) => this.renewalRecord(current.record, now), current.version);
    }
    // A standby whose read found the lease free before its turn for that moment waits for the
    // turn, as if an event had shown it: a hint without a record woke it (PostgreSQL's
    // notification, SQLite's poll), or its read crossed the expiry. The schedule wakes it then.
    if (atTurn && !this.term && this.schedule.turnPending()) return false;
    this.stepDown('the lease changed hands');
    return this.write('update', null, (now) => this.newTermRecord(current.record, now), current.version);
  }

  /**
   * One write: builds the record at the moment the request starts, sends it, and on success
   * renews `renewing` or opens a new term (null). Both count from the request's start.
   */
  private async write(op: 'create' | 'update', renewing: Term | null, build: (now: Date) => LeaseRecord, expectedVersion?: string): Promise<boolean> {
    // The app may have become ineligible while this attempt read: a new term is not sent then.
    if (renewing === null && !this.campaigning()) return false;
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
    const version = await this.call(op, (o) =>
      op === 'create' ? this.store.create(this.lease, record, o) : this.store.update(this.lease, record, expectedVersion!, o),
    );
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

  /** The record of a new term: this candidate, now, the next token after any seen. */
  private newTermRecord(rec: LeaseRecord, now: Date): LeaseRecord {
    return { ...this.freshRecord(now, Math.max(rec.leaseTransitions, this.view.highestToken) + 1), successor: claimForNewTerm(rec, this.identity) };
  }

  /** A record created from nothing continues from the highest token ever seen (after a deletion). */
  private freshRecord(now: Date, token = this.view.highestToken + 1): LeaseRecord {
    const max = Math.min(this.store.maxToken ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    if (token > max) {
      throw new InvalidRecordError(
        `the fencing token would pass ${max}, the largest the ${this.store.backend} store can hold${max === Number.MAX_SAFE_INTEGER ? ' (2^53 − 1, past which tokens can no longer be told apart)' : ''}`,
      );
    }
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.timings.leaseDurationMs / 1000,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: token,
    };
  }

  private renewalRecord(rec: LeaseRecord, now: Date): LeaseRecord {
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.timings.leaseDurationMs / 1000,
      acquireTime: rec.acquireTime ?? this.term?.acquiredAt ?? now,
      renewTime: now,
      leaseTransitions: rec.leaseTransitions,
      successor: rec.successor ?? null,
    };
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

  /**
   * Calls one listener method. A listener is the app's code (or the sidecar's): whatever it
   * throws, or a promise it returns rejects with, is logged and goes no further, so it can never
   * abort the write that made this candidate leader, end a term, or crash the process.
   */
  private notify<K extends keyof ElectorListener>(name: K, ...args: Parameters<NonNullable<ElectorListener[K]>>): void {
    const report = (err: unknown) => this.log.error('listener callback failed', { callback: name, error: describeError(err) });
    try {
      const fn = this.listener[name] as ((...a: typeof args) => unknown) | undefined;
      const result = fn?.apply(this.listener, args);
      if (isThenable(result)) result.then(undefined, report);
    } catch (err) {
      report(err);
    }
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

  /** Ends the current term, if any; the listener hears it before anything else happens. */
  private stepDown(reason: string): void {
    const t = this.term;
    if (!t) return;
    this.term = null;
    t.deadline.cancel();
    this.log.warn('stopped leading', { token: t.token, reason });
    this.notify('onStoppedLeading', reason);
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
   * Gives the lease up as client-go does: holder '', leaseDurationSeconds 1, times = now, the
   * token unchanged (the next acquirer bumps it); with releaseKeepsAcquireTime, acquireTime
   * stays the term's. The term ends first, so nobody is told to
   * lead while another may already hold the released lease. Only a record this candidate
   * wrote is released: never another holder's, nor one written under our identity by another
   * process. A conflict or an unanswered request is retried after a fresh read.
   */
  async release(): Promise<boolean> {
    this.stepDown('releasing the lease');
    let sent: LeaseRecord | null = null;
    for (let attempt = 0; attempt < 5; attempt++) {
      const seen = this.view.observed;
      // Our record, last seen: released from that view only while it is recent (see fresh()),
      // else from a read. Another's record last seen: nothing of ours to release.
      if (attempt === 0 && seen && !this.view.isOwn(seen)) return false;
      const current = attempt === 0 && seen && this.fresh(seen) ? seen : await this.safeGet();
      if (current && sent && sameRecord(current.record, sent)) return true; // an unanswered release landed
      if (!current || !this.view.isOwn(current)) return false;
      const now = this.clock.now();
      const released: LeaseRecord = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: this.releaseKeepsAcquireTime ? current.record.acquireTime : now,
        renewTime: now,
        leaseTransitions: current.record.leaseTransitions,
        // The named successor is the one to take it now.
        successor: current.record.successor ?? null,
      };
      sent = released;
      try {
        const version = await this.call('update', (o) => this.store.update(this.lease, released, current.version, o));
        this.observe({ record: released, version }, true);
        this.log.info('released lease', { token: released.leaseTransitions });
        return true;
      } catch (err) {
        // The store refuses the released record itself (a constraint of the table): no retry
        // passes, and the others wait out the lease as after a crash. Said once, as an error.
        if (err instanceof InvalidRecordError) {
          this.log.error('the store refused the release: the lease is left to expire', {
            reason: describeError(err),
            leaseDurationMs: this.timings.leaseDurationMs,
          });
          return false;
        }
        if (!(err instanceof ConflictError)) {
          this.log.warn('release failed', { reason: describeError(err) });
          if (!(err instanceof BackendUnavailableError)) return false;
        }
      }
    }
    return false;
  }

  private async safeGet(): Promise<VersionedRecord | null> {
    try {
      return await this.call('get', (o) => this.store.get(this.lease, o));
    } catch {
      return null;
    }
  }

  /**
   * Bounds one backend call so a hung request cannot hold the loop past its deadlines. At the
   * bound the call's signal aborts, so the store cancels the request (a Kubernetes request is
   * destroyed) rather than abandoning it; the call rejects then even if a store ignores it.
   */
  private call<T>(op: string, send: (opts: CallOptions) => Promise<T>): Promise<T> {
    const cancel = new AbortController();
    const noteReopened = (e: unknown) => {
      if (e instanceof StoreReopenedError) this.view.interruptAbsence();
    };
    return new Promise<T>((resolve, reject) => {
      const timer = this.clock.setTimer(() => {
        const err = new BackendUnavailableError(`${this.store.backend} ${op} timed out after ${this.requestTimeoutMs} ms`);
        cancel.abort(err);
        reject(err);
      }, this.requestTimeoutMs);
      send({ signal: cancel.signal }).then(
        (v) => {
          timer.cancel();
          resolve(v);
        },
        (e: unknown) => {
          timer.cancel();
          noteReopened(e);
          reject(e);
        },
      );
    });
  }
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as PromiseLike<unknown> | null)?.then === 'function';
}
