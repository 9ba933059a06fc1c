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
import { BackendUnavailableError, ConflictError, NotFoundError, describeError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import type { LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from '../backends/lease-store.js';
import {
  JITTER_FACTOR,
  validateIdentity,
  validateLeaseName,
  validateTimings,
  type Timings,
} from './elector-config.js';

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
  /** The holder seen in the record changed ('' = released). */
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
  releaseOnStop?: boolean;
  /** Bound on one backend call. Default renewDeadline / 2. */
  requestTimeoutMs?: number;
  /**
   * A standby relying on a connected watch still reads the lease this often, in case the watch
   * silently stopped delivering. Default max(30 × retryPeriod, leaseDuration): 60 s.
   */
  safetyRereadMs?: number;
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

export class LeaderElector {
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly listener: ElectorListener;
  private readonly log: Logger;
  readonly lease: string;
  readonly identity: string;
  readonly timings: Readonly<Timings>;
  private readonly releaseOnStop: boolean;
  private readonly requestTimeoutMs: number;

  private observed: VersionedRecord | null = null;
  private observedAtMono = 0;
  private highestToken = 0;
  /** The record vanished (deleted) while another candidate held it: wait out its lease until then. */
  private vanishedUntilMono: number | null = null;

  private leading = false;
  /** Bumped on every step-down, so a request that started in an older term cannot revive it. */
  private termSeq = 0;
  private term: LeadershipTerm | null = null;
  private lastRenewMono: number | null = null;
  private lastAttemptMono: number | null = null;
  private deadlineTimer: Timer | null = null;

  private loop: Promise<void> | null = null;
  private readonly abort = new AbortController();
  /** Ends the current wait between attempts early (a watch saw the record change). */
  private wake: AbortController | null = null;
  private unwatch: (() => void) | null = null;
  /** When the loop should next make progress (end of its wait or of its attempt); for liveness. */
  private loopDueMono: number | null = null;
  /** A wake-up event arrived while no wait was in progress (an attempt was in flight). */
  private wakePending = false;
  /** The store's watch is connected: every change will be reported. */
  private watchHealthy = false;
  private readonly safetyRereadMs: number;

  constructor(opts: ElectorOptions) {
    validateTimings(opts);
    validateLeaseName(opts.lease);
    validateIdentity(opts.identity);
    this.store = opts.store;
    this.lease = opts.lease;
    this.identity = opts.identity;
    this.timings = { leaseDurationMs: opts.leaseDurationMs, renewDeadlineMs: opts.renewDeadlineMs, retryPeriodMs: opts.retryPeriodMs };
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.listener = opts.listener ?? {};
    this.log = opts.log ?? silentLogger;
    this.releaseOnStop = opts.releaseOnStop ?? true;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? opts.renewDeadlineMs / 2;
    this.safetyRereadMs = opts.safetyRereadMs ?? Math.max(30 * opts.retryPeriodMs, opts.leaseDurationMs);
  }

  isLeader(): boolean {
    return this.leading;
  }

  snapshot(): ElectorSnapshot {
    const rec = this.observed?.record ?? null;
    return {
      lease: this.lease,
      identity: this.identity,
      isLeader: this.leading,
      holder: rec ? rec.holderIdentity : null,
      fencingToken: this.leading ? (this.term?.token ?? null) : null,
      observedToken: rec?.leaseTransitions ?? null,
      acquiredAt: this.leading ? (this.term?.acquiredAt ?? null) : (rec?.acquireTime ?? null),
      renewedAt: this.leading ? (this.term?.renewedAt ?? null) : (rec?.renewTime ?? null),
      validUntil: this.leading ? (this.term?.validUntil ?? null) : null,
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
    // A standby that can watch the store acts as soon as the record is released, and while
    // its watch is connected it waits for events instead of polling (see waitingOnWatch).
    // The watch is only a hint: every decision is still a read and a compare-and-swap.
    this.unwatch =
      this.store.watch?.(
        this.lease,
        (e) => this.onWatchEvent(e),
        (healthy) => {
          this.watchHealthy = healthy;
          if (!healthy) this.wake?.abort(); // back to polling at once
        },
      ) ?? null;
    this.loop = this.runLoop();
  }

  private async runLoop(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      if (this.dueForAttempt()) {
        // Each attempt is at most three requests, each bounded by requestTimeout.
        this.loopDueMono = this.clock.monotonic() + 3 * this.requestTimeoutMs;
        await this.tryAcquireOrRenew();
      }
      if (signal.aborted) break;
      if (this.wakePending) {
        // An event arrived while that attempt was in flight (its read may predate the
        // release the event reported): look again now instead of sleeping through it.
        this.wakePending = false;
        continue;
      }
      this.wake = new AbortController();
      const wait = this.nextWait();
      this.loopDueMono = this.clock.monotonic() + wait;
      await sleep(this.clock, wait, AbortSignal.any([signal, this.wake.signal]));
      this.wake = null;
    }
  }

  /**
   * A watch event. Standbys observe the record it carries exactly as if they had read it
   * (expiry is judged from that moment), and try at once when the lease is released or gone.
   * The leader ignores events: it renews from its own cache and learns of others through
   * its compare-and-swap.
   */
  private onWatchEvent(e: WatchEvent): void {
    if (e.deleted) this.highestToken = Math.max(this.highestToken, e.deleted.leaseTransitions);
    if (this.leading) return;
    if (e.record === null) this.noteAbsent();
    if (e.record) {
      this.observe(e.record);
      if (e.record.record.holderIdentity !== '') return;
    }
    if (this.wake) this.wake.abort();
    else this.wakePending = true;
  }

  /**
   * True while a standby can rely on its watch: the watch is connected and the lease, as last
   * observed, is held by another and not expired. Then it sends no requests at all until the
   * lease could expire, an event says it was released, or the safety re-read is due.
   */
  private waitingOnWatch(): boolean {
    if (this.leading || !this.watchHealthy || !this.observed) return false;
    const rec = this.observed.record;
    return rec.holderIdentity !== '' && rec.holderIdentity !== this.identity && !this.expired(rec);
  }

  private dueForAttempt(): boolean {
    if (!this.waitingOnWatch()) return true;
    return this.lastAttemptMono === null || this.clock.monotonic() - this.lastAttemptMono >= this.safetyRereadMs;
  }

  private nextWait(): number {
    const retry = this.timings.retryPeriodMs;
    if (this.leading) return retry;
    const jittered = retry * (1 + this.random() * JITTER_FACTOR);
    if (!this.waitingOnWatch()) return jittered;
    const now = this.clock.monotonic();
    const untilExpiry = this.expiresAtMono(this.observed!.record) - now;
    const untilSafety = (this.lastAttemptMono ?? now) + this.safetyRereadMs - now;
    // Standbys wake at the expiry with a little jitter, so they do not all race at the same
    // instant (a lost race costs only a 409).
    return Math.max(0, Math.min(untilExpiry + this.random() * 0.5 * retry, untilSafety));
  }

  /**
   * Ends the loop (waiting for a request in flight), steps down, and releases the lease if
   * configured to. The step-down is announced before the release is attempted, so the app
   * stops acting as leader before anyone else can start.
   */
  async stop(): Promise<void> {
    this.abort.abort();
    this.unwatch?.();
    this.unwatch = null;
    await this.loop;
    this.loop = null;
    const wasLeading = this.leading;
    if (wasLeading) this.stepDown('shutting down');
    if (wasLeading && this.releaseOnStop) await this.release();
  }

  /**
   * One attempt, as client-go's tryAcquireOrRenew: true when this candidate leads afterwards.
   * Never throws: a failed backend call is a failed attempt.
   */
  async tryAcquireOrRenew(): Promise<boolean> {
    try {
      return await this.attempt();
    } catch (err) {
      this.attemptFailed(err);
      return false;
    } finally {
      this.lastAttemptMono = this.clock.monotonic();
    }
  }

  private async attempt(): Promise<boolean> {
    const startWall = this.clock.now();
    const startMono = this.clock.monotonic();
    const seq = this.termSeq;
    const wasLeading = this.leading;

    // Fast path (client-go ≥1.29): the leader renews from its cached record, one request.
    if (wasLeading && this.observed && this.term) {
      const renewal = this.renewalRecord(this.observed.record, startWall);
      try {
        const version = await this.call('update', this.store.update(this.lease, renewal, this.observed.version));
        return this.succeeded({ record: renewal, version }, true, seq, startWall, startMono);
      } catch (err) {
        this.listener.onSlowPath?.();
        this.log.debug('optimistic renewal failed; reading the lease', { error: describeError(err) });
      }
    }

    // A standby whose watch showed the lease released or expired tries straight from what the
    // watch delivered: one request instead of two. A stale view only costs a 409, then a read.
    if (!wasLeading && this.watchHealthy && this.observed && this.takeable(this.observed.record)) {
      const seen = this.observed;
      const record = this.newTermRecord(seen.record, startWall);
      try {
        const version = await this.call('update', this.store.update(this.lease, record, seen.version));
        return this.succeeded({ record, version }, false, this.termSeq, startWall, startMono);
      } catch (err) {
        if (!(err instanceof ConflictError || err instanceof NotFoundError)) throw err;
      }
    }

    const current = await this.call('get', this.store.get(this.lease));
    if (current === null) {
      // A deletion is a change of the record: if another candidate held it, that holder may
      // still act as leader until its own deadline, so wait out its lease as for an expiry.
      // (Its holder, at its next renewal, recreates it at once with a new token.)
      if (wasLeading) this.observed = null;
      else this.noteAbsent();
      if (this.vanishedUntilMono !== null && this.vanishedUntilMono > this.clock.monotonic()) return false;
      this.vanishedUntilMono = null;
      // Absent: create it. After a deletion the token continues from the highest one seen.
      const record: LeaseRecord = {
        holderIdentity: this.identity,
        leaseDurationSeconds: this.timings.leaseDurationMs / 1000,
        acquireTime: startWall,
        renewTime: startWall,
        leaseTransitions: this.highestToken + 1,
      };
      if (wasLeading) this.stepDown('the lease record disappeared');
      let version: string;
      try {
        version = await this.call('create', this.store.create(this.lease, record));
      } catch (err) {
        // Someone else created it first: read it now, so its token is known to us even if
        // it is deleted again before our next attempt.
        if (err instanceof ConflictError) {
          const winner = await this.safeGet();
          if (winner) this.observe(winner);
        }
        throw err;
      }
      return this.succeeded({ record, version }, false, this.termSeq, startWall, startMono);
    }

    this.observe(current);
    const rec = current.record;
    const heldByOther = rec.holderIdentity !== '' && rec.holderIdentity !== this.identity;
    if (heldByOther && !this.expired(rec)) {
      if (this.leading) this.stepDown(`the lease is held by ${rec.holderIdentity}`);
      return false;
    }

    // A renewal keeps the term only if we lead and nobody else wrote since our last success.
    const isRenewal = wasLeading && this.leading && rec.holderIdentity === this.identity;
    const record = isRenewal ? this.renewalRecord(rec, startWall) : this.newTermRecord(rec, startWall);
    if (!isRenewal && this.leading) this.stepDown('the lease changed hands');
    const version = await this.call('update', this.store.update(this.lease, record, current.version));
    return this.succeeded({ record, version }, isRenewal, isRenewal ? seq : this.termSeq, startWall, startMono);
  }

  /** The record is gone: if another candidate held it, remember when, to wait out its lease. */
  private noteAbsent(): void {
    const last = this.observed?.record;
    if (last && last.holderIdentity !== '' && last.holderIdentity !== this.identity) {
      this.vanishedUntilMono = this.clock.monotonic() + last.leaseDurationSeconds * 1000;
    }
    this.observed = null;
  }

  /** May a non-leader take this record now? Released, left by us, or expired as observed. */
  private takeable(rec: LeaseRecord): boolean {
    return rec.holderIdentity === '' || rec.holderIdentity === this.identity || this.expired(rec);
  }

  /** The record of a new term: this candidate, now, the next token after any seen. */
  private newTermRecord(rec: LeaseRecord, now: Date): LeaseRecord {
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.timings.leaseDurationMs / 1000,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: Math.max(rec.leaseTransitions, this.highestToken) + 1,
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

  /** Has the record gone unchanged, as seen by us, for its own leaseDurationSeconds? */
  /** An unchanged record expires a lease duration after we observed it (client-go's rule). */
  private expiresAtMono(rec: LeaseRecord): number {
    return this.observedAtMono + rec.leaseDurationSeconds * 1000;
  }

  private expired(rec: LeaseRecord): boolean {
    return this.expiresAtMono(rec) <= this.clock.monotonic();
  }

  private observe(got: VersionedRecord): void {
    this.vanishedUntilMono = null;
    const previous = this.observed;
    if (previous && previous.version === got.version) return;
    this.observed = got;
    this.observedAtMono = this.clock.monotonic();
    this.highestToken = Math.max(this.highestToken, got.record.leaseTransitions);
    if (!previous || previous.record.holderIdentity !== got.record.holderIdentity) {
      this.announceHolder(got.record);
    }
  }

  private announceHolder(rec: LeaseRecord): void {
    if (rec.holderIdentity !== this.identity) {
      this.log.info(rec.holderIdentity === '' ? 'lease released' : 'new leader observed', {
        holder: rec.holderIdentity,
        token: rec.leaseTransitions,
      });
    }
    this.listener.onNewLeader?.(rec.holderIdentity, rec);
  }

  private succeeded(got: VersionedRecord, isRenewal: boolean, seq: number, startWall: Date, startMono: number): boolean {
    if (seq !== this.termSeq) {
      // We stepped down (renew deadline) while this request was in flight. Its write may have
      // landed, but the app was already told to stop: the next attempt opens a new term.
      this.observeOwnWrite(got);
      return false;
    }
    this.observeOwnWrite(got);
    const token = got.record.leaseTransitions;
    const validUntil = new Date(startWall.getTime() + this.timings.renewDeadlineMs);
    this.lastRenewMono = startMono;
    this.armDeadline(startMono);
    if (isRenewal && this.term) {
      this.term = { ...this.term, renewedAt: startWall, validUntil };
      this.log.debug('renewed', { token: this.term.token, validUntil: validUntil.toISOString() });
      this.listener.onRenewed?.(this.term);
      return true;
    }
    this.leading = true;
    this.term = { token, acquiredAt: got.record.acquireTime ?? startWall, renewedAt: startWall, validUntil };
    this.log.info('became leader', { token, validUntil: validUntil.toISOString() });
    this.listener.onStartedLeading?.(this.term);
    return true;
  }

  private observeOwnWrite(got: VersionedRecord): void {
    const holderChanged = this.observed?.record.holderIdentity !== got.record.holderIdentity;
    this.observed = got;
    this.observedAtMono = this.clock.monotonic();
    this.highestToken = Math.max(this.highestToken, got.record.leaseTransitions);
    if (holderChanged) this.listener.onNewLeader?.(got.record.holderIdentity, got.record);
  }

  /** Steps down at startMono + renewDeadline unless a later renewal re-arms it first. */
  private armDeadline(startMono: number): void {
    this.deadlineTimer?.cancel();
    const due = startMono + this.timings.renewDeadlineMs - this.clock.monotonic();
    this.deadlineTimer = this.clock.setTimer(() => {
      if (this.leading && this.lastRenewMono === startMono) {
        this.stepDown(`no successful renewal within renewDeadline (${this.timings.renewDeadlineMs} ms)`);
      }
    }, due);
  }

  private stepDown(reason: string): void {
    if (!this.leading) return;
    this.leading = false;
    this.termSeq++;
    this.deadlineTimer?.cancel();
    this.deadlineTimer = null;
    this.log.warn('stopped leading', { token: this.term?.token ?? null, reason });
    this.term = null;
    this.listener.onStoppedLeading?.(reason);
  }

  private attemptFailed(err: unknown): void {
    const reason = err instanceof ConflictError ? 'lost a write race (conflict)' : describeError(err);
    if (this.leading) {
      this.log.warn('renewal failed', { reason });
      this.listener.onRenewFailed?.(reason);
    } else {
      const level = err instanceof ConflictError || err instanceof NotFoundError ? 'debug' : 'warn';
      this.log[level]('acquire attempt failed', { reason });
    }
  }

  /**
   * Gives the lease up as client-go does: holder '', leaseDurationSeconds 1, times = now, the
   * token unchanged (the next acquirer bumps it). Retries on conflict while we are still the
   * holder; never overwrites someone else's record.
   */
  async release(): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = attempt === 0 && this.observed ? this.observed : await this.safeGet();
      if (!current || current.record.holderIdentity !== this.identity) return false;
      const now = this.clock.now();
      const released: LeaseRecord = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: current.record.leaseTransitions,
      };
      try {
        const version = await this.call('update', this.store.update(this.lease, released, current.version));
        this.observeOwnWrite({ record: released, version });
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
      return await this.call('get', this.store.get(this.lease));
    } catch {
      return null;
    }
  }

  /** Bounds one backend call so a hung request cannot hold the loop past its deadlines. */
  private call<T>(op: string, p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.clock.setTimer(
        () => reject(new BackendUnavailableError(`${this.store.backend} ${op} timed out after ${this.requestTimeoutMs} ms`)),
        this.requestTimeoutMs,
      );
      p.then(
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
