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
import { sleep, realClock, type Clock, type Timer } from '../clock.js';
import { BackendUnavailableError, ConflictError, InvalidRecordError, describeError } from '../errors.js';
import { guardedLogger, silentLogger, type Logger } from '../log.js';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from '../backends/lease-store.js';
import { DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR, contentionDelayMs } from './elector-config.js';
import {
  JITTER_FACTOR,
  validateContentionWindow,
  validateIdentity,
  validateKubernetesLeaseDuration,
  validateLeaseName,
  validateTimings,
  type Timings,
} from '../config/election-options.js';

export interface LeadershipTerm {
  token: number;
  acquiredAt: Date;
  /** Wall time at which the last successful acquire/renew request started. */
  renewedAt: Date;
  /** renewedAt + renewDeadline: after this the leader has stepped down or is frozen. */
  validUntil: Date;
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
 * The internal engine: one candidate's campaign against a store (attempts, renewals, step-down,
 * release), used by the sidecar, `leasehold run` and the library. Not exported by the package:
 * apps use LeaderElection (leader-election.ts), which wraps it with callbacks and a drain.
 */
export class LeaderElector {
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly listener: ElectorListener;
  private readonly log: Logger;
  readonly lease: string;
  readonly identity: string;
  readonly timings: Readonly<Timings>;
  private readonly releaseOnCancel: boolean;
  private readonly releaseKeepsAcquireTime: boolean;
  private readonly requestTimeoutMs: number;
  private readonly safetyRereadMs: number;
  private readonly contentionWindowMs: number;

  // What this candidate knows of the record.
  private observed: VersionedRecord | null = null;
  private observedAtMono = 0;
  /** The highest token ever seen, in any record or deletion: a new term always goes past it. */
  private highestToken = 0;
  /**
   * The record was last seen absent: nobody but the sitting leader may create it before this
   * (a deleted record's holder, or a leader on a replaced store, may still be acting).
   */
  private absentUntilMono: number | null = null;
  /** When this candidate last learnt the record's state (a read, an event, its own write). */
  private lastViewMono: number | null = null;
  /** A change was hinted (an event without a record) during an absence: it may not have been continuous. */
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

  /** Non-null exactly while this candidate leads. */
  private term: Term | null = null;
  /** This standby's delay for the moment the lease last became free (drawn once per moment). */
  private slot: { freeAtMono: number; delayMs: number } | null = null;
  /** Counts the records observed (new versions): orders an attempt against an observation made at the same instant. */
  private observedSeq = 0;
  /** When the last attempt started, and how many records had been observed by then. */
  private lastAttemptStart: { mono: number; seq: number } | null = null;

  // The loop.
  private loop: Promise<void> | null = null;
  private stopped = false;
  /** Ends the current wait between attempts early (a watch event, or stop()). */
  private wake: AbortController | null = null;
  /** A wake-up event arrived while no wait was in progress (an attempt was in flight). */
  private wakePending = false;
  private unwatch: (() => void) | null = null;
  /** A record-less watch event arrived: the next loop turn reads, whatever it was waiting for. */
  private hintPending = false;
  /** The store's watch is connected: every change will be reported. */
  private watchHealthy = false;
  private lastAttemptMono: number | null = null;
  /** When the loop should next make progress (end of its wait or of its attempt); for liveness. */
  private loopDueMono: number | null = null;
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
    this.random = opts.random ?? Math.random;
    this.listener = opts.listener ?? {};
    // A logger that throws must not skip a step of the election (the sidecar's and the library's).
    this.log = opts.log ? guardedLogger(opts.log) : silentLogger;
    this.releaseOnCancel = opts.releaseOnCancel ?? true;
    this.releaseKeepsAcquireTime = opts.releaseKeepsAcquireTime ?? false;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? opts.renewDeadlineMs / 2;
    this.safetyRereadMs = opts.safetyRereadMs ?? Math.max(60 * opts.retryPeriodMs, opts.leaseDurationMs);
    this.contentionWindowMs = opts.contentionWindowMs ?? Math.min(DEFAULT_CONTENTION_WINDOW_MS, opts.leaseDurationMs);
    validateContentionWindow(this.contentionWindowMs, opts.leaseDurationMs);
  }

  isLeader(): boolean {
    return this.term !== null;
  }

  snapshot(): ElectorSnapshot {
    const rec = this.observed?.record ?? null;
    const t = this.term;
    return {
      lease: this.lease,
      identity: this.identity,
      isLeader: t !== null,
      holder: rec ? rec.holderIdentity : null,
      fencingToken: t?.token ?? null,
      observedToken: rec?.leaseTransitions ?? null,
      highestToken: this.highestToken,
      acquiredAt: t ? t.acquiredAt : (rec?.acquireTime ?? null),
      renewedAt: t ? t.renewedAt : (rec?.renewTime ?? null),
      validUntil: t?.validUntil ?? null,
      lastRenewMonotonic: this.lastRenewMono,
      loopDueMonotonic: this.loopDueMono,
      running: this.loop !== null,
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
    // its watch is connected it waits for events instead of polling (see waitingOnWatch).
    // The watch is only a hint: every decision is still a read and a compare-and-swap.
    this.unwatch =
      this.store.watch?.(
        this.lease,
        (e) => this.onWatchEvent(e),
        (healthy) => {
          this.watchHealthy = healthy;
          if (!healthy) this.wakeUp(); // back to polling at once
        },
      ) ?? null;
    this.loop = this.runLoop();
  }

  private async runLoop(): Promise<void> {
    while (!this.stopped) {
      if (this.dueForAttempt()) {
        // Each attempt is at most three requests, each bounded by requestTimeout.
        this.loopDueMono = this.clock.monotonic() + 3 * this.requestTimeoutMs;
        await this.tryAcquireOrRenew();
      }
      if (this.stopped) break;
      if (this.wakePending) {
        // An event arrived while that attempt was in flight (its read may predate the
        // release the event reported): look again now instead of sleeping through it.
        this.wakePending = false;
        continue;
      }
      await this.waitBetweenAttempts();
    }
  }

  /**
   * Sleeps until the next attempt is due (nextWait), or until a watch event or stop() wakes
   * the loop. One controller per wait: nothing long-lived gains a listener per iteration
   * (AbortSignal.any on a loop-long signal did, and leaked).
   */
  private async waitBetweenAttempts(): Promise<void> {
    const wake = new AbortController();
    this.wake = wake;
    const wait = this.nextWait();
    this.loopDueMono = this.clock.monotonic() + wait;
    await sleep(this.clock, wait, wake.signal);
    this.wake = null;
  }

  private wakeUp(): void {
    if (this.wake) this.wake.abort();
    else this.wakePending = true;
  }

  /**
   * A watch event. Standbys observe the record it carries exactly as if they had read it
   * (expiry is judged from that moment), and try when the lease is released (at their turn in
   * the contention window) or gone.
   * The leader ignores events: it renews from its own cache and learns of others through
   * its compare-and-swap.
   */
  private onWatchEvent(e: WatchEvent): void {
    if (e.deleted) this.highestToken = Math.max(this.highestToken, e.deleted.leaseTransitions);
    if (this.term) return;
    if (e.record === undefined && this.absentUntilMono !== null) this.absenceInterrupted = true;
    // A hint without a record says only "it changed": read it, even while waiting on the watch
    // (otherwise a release would be noticed only at the expiry of the record last seen).
    if (e.record === undefined) this.hintPending = true;
    if (e.record === null) this.noteAbsent();
    if (e.record) {
      this.observe(e.record);
      if (e.record.record.holderIdentity !== '') return;
    }
    this.wakeUp();
  }

  /**
   * True while a standby can rely on its watch: the watch is connected and the lease, as last
   * observed, is held by another and not expired. Then it sends no requests at all until the
   * lease could expire, an event says it was released, or the safety re-read is due.
   */
  private waitingOnWatch(): boolean {
    if (this.term || !this.watchHealthy || !this.observed) return false;
    const seen = this.observed;
    return seen.record.holderIdentity !== '' && !this.isOwn(seen) && !this.expired(seen.record);
  }

  private dueForAttempt(): boolean {
    if (this.hintPending) {
      this.hintPending = false;
      return true;
    }
    // The lease is free, but this standby's turn in the contention window has not come.
    const slot = this.contentionSlot();
    const now = this.clock.monotonic();
    if (slot && now >= slot.freeAtMono && now < slot.endMono) return false;
    if (!this.waitingOnWatch()) return true;
    return this.lastAttemptMono === null || now - this.lastAttemptMono >= this.safetyRereadMs;
  }

  private nextWait(): number {
    const retry = this.timings.retryPeriodMs;
    if (this.term) return retry;
    const jittered = retry * (1 + this.random() * JITTER_FACTOR);
    // A standby wakes at its turn after the lease becomes free (its expiry as observed, or a
    // release), whether or not it also polls: the expiry is known from the last observation.
    const now = this.clock.monotonic();
    const slot = this.contentionSlot();
    const untilSlot = slot ? Math.max(0, slot.endMono - now) : Infinity;
    if (!this.waitingOnWatch()) return Math.min(jittered, untilSlot);
    const untilSafety = (this.lastAttemptMono ?? now) + this.safetyRereadMs - now;
    return Math.max(0, Math.min(untilSlot, untilSafety));
  }

  /**
   * The moment the lease, as last observed, became (or will become) free for this standby, and
   * the end of its turn after that moment; null while leading, with no record seen, or once it
   * has tried since that moment (then it keeps its usual rhythm: a slot per free moment, not a
   * retry storm while the store is down).
   */
  private contentionSlot(): { freeAtMono: number; endMono: number } | null {
    const seen = this.observed;
    if (this.term || !seen) return null;
    const freeOnSight = this.freeOnSight(seen);
    const freeAtMono = this.freeAtMono(seen);
    const last = this.lastAttemptStart;
    const triedSince = last !== null && (freeOnSight ? last.seq >= this.observedSeq : last.mono >= freeAtMono);
    if (triedSince) return null;
    if (this.slot?.freeAtMono !== freeAtMono) {
      // A release's wider window stays within a lease duration, however wide the window asked.
      const window = freeOnSight ? Math.min(RELEASE_WINDOW_FACTOR * this.contentionWindowMs, this.timings.leaseDurationMs) : this.contentionWindowMs;
      this.slot = { freeAtMono, delayMs: contentionDelayMs(this.random(), window) };
    }
    return { freeAtMono, endMono: freeAtMono + this.slot.delayMs };
  }

  /**
   * Ends the loop (waiting for a request in flight), steps down, and releases the lease if
   * configured to. The step-down is announced before the release is attempted, so the app
   * stops acting as leader before anyone else can start.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.abort();
    this.unwatch?.();
    this.unwatch = null;
    await this.loop;
    this.loop = null;
    const wasLeading = this.term !== null;
    this.stepDown('shutting down');
    if (wasLeading && this.releaseOnCancel) await this.release();
  }

  /**
   * One attempt, as client-go's tryAcquireOrRenew: true when this candidate leads afterwards.
   * Never throws: a failed backend call is a failed attempt.
   */
  async tryAcquireOrRenew(): Promise<boolean> {
    this.lastAttemptStart = { mono: this.clock.monotonic(), seq: this.observedSeq };
    try {
      return await this.attempt();
    } catch (err) {
      this.attemptFailed(err);
      return false;
    } finally {
      this.lastAttemptMono = this.clock.monotonic();
    }
  }

  /**
   * The algorithm, over one observed record:
   *   1. The leader renews from its cached record: one request (client-go's fast path).
   *   2. Read the record. A standby reads even when its watch showed the lease free: writing
   *      straight from the event saved a request, but with many standbys the new holder's event
   *      reaches them all only after a while (each must wake and parse it), and every standby
   *      whose turn came first sent a write that conflicted (99 of 100 on a 2-core machine, in
   *      `npm run bench -- --only scale` at commit a1e2773).
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
  private async attempt(): Promise<boolean> {
    const term = this.term;

    // 1. Fast path.
    if (term && this.observed) {
      try {
        return await this.write('update', term, (now) => this.renewalRecord(this.observed!.record, now), this.observed.version);
      } catch (err) {
        this.notify('onSlowPath');
        this.log.debug('optimistic renewal failed; reading the lease', { error: describeError(err) });
      }
    }

    // 2. Read.
    const current = await this.call('get', (o) => this.store.get(this.lease, o));

    // 3. Absent. Leadership is judged now, not at the start of the attempt: a candidate that
    // stepped down while its read was in flight is no longer the sitting leader.
    if (current === null) {
      if (this.sittingLeader()) {
        this.stepDown('the lease record disappeared');
      } else {
        this.stepDown(`no successful renewal within renewDeadline (${this.timings.renewDeadlineMs} ms)`);
        this.noteAbsent();
        if (this.absentUntilMono! > this.clock.monotonic()) return false;
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
    const own = this.isOwn(current);
    if (!own && current.record.holderIdentity !== '' && !this.expired(current.record)) {
      this.stepDown(
        `the lease is held by ${current.record.holderIdentity}${current.record.holderIdentity === this.identity ? ' (another process with this identity)' : ''}`,
      );
      return false;
    }

    // 5. Renew, or open a new term.
    if (own && this.term) {
      return this.write('update', this.term, (now) => this.renewalRecord(current.record, now), current.version);
    }
    this.stepDown('the lease changed hands');
    return this.write('update', null, (now) => this.newTermRecord(current.record, now), current.version);
  }

  /**
   * One write: builds the record at the moment the request starts, sends it, and on success
   * renews `renewing` or opens a new term (null). Both count from the request's start.
   */
  private async write(op: 'create' | 'update', renewing: Term | null, build: (now: Date) => LeaseRecord, expectedVersion?: string): Promise<boolean> {
    const start: Stamp = { wall: this.clock.now(), mono: this.clock.monotonic() };
    // Taken before the request: our own write's watch event can arrive before its answer.
    const freedAtMono = renewing || !this.observed ? null : this.freeAtMono(this.observed);
    const record = build(start.wall);
    this.recentWrites = [...this.recentWrites.slice(-7), record];
    const version = await this.call(op, (o) =>
      op === 'create' ? this.store.create(this.lease, record, o) : this.store.update(this.lease, record, expectedVersion!, o),
    );
    return this.succeeded({ record, version }, renewing, start, freedAtMono);
  }

  /**
   * Leading, and still inside renewDeadline by the clock, not only by the deadline timer: after
   * a pause the answer to a read can be handled before the overdue timer has run.
   */
  private sittingLeader(): boolean {
    return this.term !== null && this.clock.monotonic() < this.term.renewedAtMono + this.timings.renewDeadlineMs;
  }

  /**
   * The record is gone: nobody but the sitting leader creates it before a lease duration. The
   * wait continues across absences seen one poll apart; after a longer gap in this candidate's
   * view (hung requests, a pause) the record may have been recreated and deleted again unseen,
   * with its holder still acting, so the wait starts over.
   */
  private noteAbsent(): void {
    const now = this.clock.monotonic();
    const pollGap = this.timings.retryPeriodMs * (2 + JITTER_FACTOR); // one jittered wait plus a quick read
    const continuous = this.absentUntilMono !== null && !this.absenceInterrupted && this.lastViewMono !== null && now - this.lastViewMono <= pollGap;
    this.lastViewMono = now;
    this.absenceInterrupted = false;
    if (!continuous) {
      const last = this.observed?.record;
      const waitMs = Math.max(this.timings.leaseDurationMs, last ? last.leaseDurationSeconds * 1000 : 0);
      const restarted = this.absentUntilMono !== null;
      this.absentUntilMono = now + waitMs;
      this.log.info('lease absent: creating it after a lease duration unless it reappears', {
        waitMs,
        createsAt: new Date(this.clock.now().getTime() + waitMs).toISOString(),
        why: 'a lease never seen looks the same as one just deleted, whose holder may still be acting',
        highestTokenSeen: this.highestToken,
        restarted,
      });
    }
    this.observed = null;
  }

  /**
   * Did this candidate write this record? Its identity alone does not say: another process
   * may run with the same --identity (or be a leasehold started inside `leasehold run`'s
   * command). A record under our identity that we did not write is another holder's.
   */
  private isOwn(seen: VersionedRecord): boolean {
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
        rule: 'another process runs with the same --identity (or this one restarted): treated as another holder until it expires',
      });
    }
    return false;
  }

  /** The record of a new term: this candidate, now, the next token after any seen. */
  private newTermRecord(rec: LeaseRecord, now: Date): LeaseRecord {
    return this.freshRecord(now, Math.max(rec.leaseTransitions, this.highestToken) + 1);
  }

  /** A record created from nothing continues from the highest token ever seen (after a deletion). */
  private freshRecord(now: Date, token = this.highestToken + 1): LeaseRecord {
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
    };
  }

  /** Released, or ours from an ended term: free from the moment it was seen. */
  private freeOnSight(seen: VersionedRecord): boolean {
    return seen.record.holderIdentity === '' || this.isOwn(seen);
  }

  /** When the record last observed (`seen`) became free for this candidate: on sight, or at its expiry. */
  private freeAtMono(seen: VersionedRecord): number {
    return this.freeOnSight(seen) ? this.observedAtMono : this.expiresAtMono(seen.record);
  }

  /** An unchanged record expires a lease duration after we observed it (client-go's rule). */
  private expiresAtMono(rec: LeaseRecord): number {
    return this.observedAtMono + rec.leaseDurationSeconds * 1000;
  }

  private expired(rec: LeaseRecord): boolean {
    return this.expiresAtMono(rec) <= this.clock.monotonic();
  }

  /**
   * Takes in a record read or watched (own = we just wrote it). Only a change of the record's
   * content restarts the observed expiry: another writer touching only the object's metadata (a
   * label, an annotation) moves its version, and if that counted as a change, a neighbour
   * relabelling a dead leader's Lease more often than its duration would stop failover for good.
   * The new version is still kept: a compare-and-swap must name the object as it is now.
   */
  private observe(got: VersionedRecord, own = false): void {
    this.absentUntilMono = null;
    this.lastViewMono = this.clock.monotonic();
    const previous = this.observed;
    if (previous && previous.version === got.version) return;
    if (previous && !own && sameContent(previous.record, got.record)) {
      this.observed = { record: previous.record, version: got.version };
      return;
    }
    this.observed = got;
    this.observedSeq++;
    this.observedAtMono = this.clock.monotonic();
    this.highestToken = Math.max(this.highestToken, got.record.leaseTransitions);
    if (own) this.ownVersion = got.version;
    // A new holder, or the same holder in a new term (it lost the lease and took it again):
    // either way a different leader, whose token a follower must report.
    if (!previous || previous.record.holderIdentity !== got.record.holderIdentity || previous.record.leaseTransitions !== got.record.leaseTransitions) {
      if (!own && got.record.holderIdentity !== this.identity) {
        this.log.info(got.record.holderIdentity === '' ? 'lease released' : 'new leader observed', {
          holder: got.record.holderIdentity,
          token: got.record.leaseTransitions,
        });
      }
      this.notify('onNewLeader', got.record.holderIdentity, got.record);
    }
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
    this.notify('onStartedLeading', this.publicTerm(this.term));
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
      const current = attempt === 0 && this.observed ? this.observed : await this.safeGet();
      if (current && sent && sameRecord(current.record, sent)) return true; // an unanswered release landed
      if (!current || !this.isOwn(current)) return false;
      const now = this.clock.now();
      const released: LeaseRecord = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: this.releaseKeepsAcquireTime ? current.record.acquireTime : now,
        renewTime: now,
        leaseTransitions: current.record.leaseTransitions,
      };
      sent = released;
      try {
        const version = await this.call('update', (o) => this.store.update(this.lease, released, current.version, o));
        this.observe({ record: released, version }, true);
        this.log.info('released lease', { token: released.leaseTransitions });
        return true;
      } catch (err) {
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
          reject(e);
        },
      );
    });
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
function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseTransitions === b.leaseTransitions &&
    a.renewTime?.getTime() === b.renewTime?.getTime() &&
    a.acquireTime?.getTime() === b.acquireTime?.getTime()
  );
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as PromiseLike<unknown> | null)?.then === 'function';
}
