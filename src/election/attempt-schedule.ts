/**
 * When one candidate acts next: the leader every retryPeriod; a standby every jittered
 * retryPeriod (client-go's JitterUntil), or, while its watch is connected and the lease is held,
 * only at the lease's observed expiry, on a watch event, or at the safety re-read; and when the
 * lease becomes free, at its own turn in the contention window.
 *
 * It reads what the candidate believes (RecordView) and whether it leads; it never calls the
 * store. The elector's loop asks it whether an attempt is due and how long to wait.
 */
import { sleep, type Clock } from '../clock.js';
import { JITTER_FACTOR, type Timings } from '../config/election-options.js';
import { RELEASE_WINDOW_FACTOR, contentionDelayMs } from './elector-config.js';
import type { RecordView } from './record-view.js';
import type { Standing } from './candidate-options.js';

export interface ScheduleOptions {
  timings: Readonly<Timings>;
  clock: Clock;
  random: () => number;
  /** How often a standby relying on a connected watch still reads the lease. */
  safetyRereadMs: number;
  contentionWindowMs: number;
  /** What the candidate believes about the record. */
  view: RecordView;
  /** Whether the candidate leads now, and whether it campaigns (its app is eligible): while not, it has no turn. */
  candidate: Standing;
  /** This standby's successor claim (successor.ts); null when it makes none: the window alone rules. */
  claim: ClaimTiming | null;
}

/** What the schedule asks of the successor claim (SuccessorClaimant). */
export interface ClaimTiming {
  /** Monotonic ms at which the next claim write is due, or null. */
  nextWriteMono(): number | null;
  /** This standby's wait at a free lease, given the turn it drew in the contention window. */
  turnMs(drawnMs: number): number;
}

export class AttemptSchedule {
  private readonly timings: Readonly<Timings>;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly safetyRereadMs: number;
  private readonly contentionWindowMs: number;
  private readonly view: RecordView;
  private readonly candidate: Standing;
  private readonly claim: ClaimTiming | null;

  /** This standby's delay for the moment the lease last became free (drawn once per moment). */
  private slot: { freeAtMono: number; delayMs: number } | null = null;
  /**
   * The last attempt: when it started (and the record's last change seen by then: RecordView.lastChange),
   * and when the loop last finished an attempt, a read while standing aside, or an end-of-term gate.
   */
  private last: { start: { mono: number; change: object } | null; endMono: number | null } = { start: null, endMono: null };
  /**
   * The wake-up: the controller that ends the current wait early (a watch event, or stop()), or,
   * between waits (an attempt in flight), 'pending' when a wake-up came meanwhile.
   */
  private wake: AbortController | 'pending' | null = null;
  /** A record-less watch event arrived: the next loop turn reads, whatever it was waiting for. */
  private hintPending = false;
  /** The store's watch is connected: every change will be reported. */
  private watchHealthy = false;
  /** When the loop should next make progress (end of its wait or of its attempt); for liveness. */
  private dueMono: number | null = null;

  constructor(opts: ScheduleOptions) {
    this.timings = opts.timings;
    this.clock = opts.clock;
    this.random = opts.random;
    this.safetyRereadMs = opts.safetyRereadMs;
    this.contentionWindowMs = opts.contentionWindowMs;
    this.view = opts.view;
    this.candidate = opts.candidate;
    this.claim = opts.claim;
  }

  /** Monotonic ms by which the loop should next make progress; null before its first turn. */
  get loopDueMono(): number | null {
    return this.dueMono;
  }

  /** An attempt begins now and may take up to `boundMs`. */
  attempting(boundMs: number): void {
    this.dueMono = this.clock.monotonic() + boundMs;
  }

  attemptStarted(): void {
    this.last = { ...this.last, start: { mono: this.clock.monotonic(), change: this.view.lastChange } };
  }

  attemptEnded(): void {
    this.last = { ...this.last, endMono: this.clock.monotonic() };
  }

  /** The watch connected or dropped; on a drop the standby goes back to polling at once. */
  setWatchHealth(healthy: boolean): void {
    this.watchHealthy = healthy;
    if (!healthy) this.wakeUp();
  }

  /** A watch event without a record: the next turn reads, whatever it was waiting for. */
  hint(): void {
    this.hintPending = true;
  }

  /** Ends the current wait now, or the next one before it starts if an attempt is in flight. */
  wakeUp(): void {
    if (this.wake instanceof AbortController) this.wake.abort();
    else this.wake = 'pending';
  }

  /** Ends the current wait, if any (stop()). */
  interrupt(): void {
    if (this.wake instanceof AbortController) this.wake.abort();
  }

  /** A wake-up arrived while an attempt was in flight; taking it clears it. */
  takeWakePending(): boolean {
    if (this.wake !== 'pending') return false;
    this.wake = null;
    return true;
  }

  /**
   * Sleeps until the next attempt is due (nextWait), or until a watch event or stop() wakes
   * the loop. One controller per wait: nothing long-lived gains a listener per iteration
   * (AbortSignal.any on a loop-long signal did, and leaked).
   */
  async wait(): Promise<void> {
    const wake = new AbortController();
    this.wake = wake;
    const wait = this.nextWait();
    this.dueMono = this.clock.monotonic() + wait;
    await sleep(this.clock, wait, wake.signal);
    this.wake = null;
  }

  /** The lease, as last observed, is free, and this standby's turn for that moment has not come. */
  turnPending(): boolean {
    const slot = this.contentionSlot();
    return slot !== null && this.clock.monotonic() < slot.endMono;
  }

  dueForAttempt(): boolean {
    if (this.hintPending) {
      this.hintPending = false;
      return true;
    }
    // The lease is free, but this standby's turn in the contention window has not come.
    const slot = this.contentionSlot();
    const now = this.clock.monotonic();
    if (slot && now >= slot.freeAtMono && now < slot.endMono) return false;
    if (!this.waitingOnWatch()) return true;
    return this.last.endMono === null || now - this.last.endMono >= this.safetyRereadMs;
  }

  nextWait(): number {
    const retry = this.timings.retryPeriodMs;
    if (this.candidate.isLeader()) return retry;
    const jittered = retry * (1 + this.random() * JITTER_FACTOR);
    // A standby wakes at its turn after the lease becomes free (its expiry as observed, or a
    // release), whether or not it also polls: the expiry is known from the last observation.
    const now = this.clock.monotonic();
    const slot = this.contentionSlot();
    const untilSlot = slot ? Math.max(0, slot.endMono - now) : Infinity;
    const claimDue = this.claim?.nextWriteMono() ?? null;
    const untilClaim = claimDue === null ? Infinity : claimDue - now;
    if (!this.waitingOnWatch()) return Math.max(0, Math.min(jittered, untilSlot, untilClaim));
    const untilSafety = (this.last.endMono ?? now) + this.safetyRereadMs - now;
    return Math.max(0, Math.min(untilSlot, untilSafety, untilClaim));
  }

  /**
   * True while a standby can rely on its watch: the watch is connected and the lease, as last
   * observed, is held by another and not expired. Then it sends no requests at all until the
   * lease could expire, an event says it was released, or the safety re-read is due.
   */
  private waitingOnWatch(): boolean {
    const seen = this.view.observed;
    if (this.candidate.isLeader() || !this.watchHealthy || !seen) return false;
    return seen.record.holderIdentity !== '' && !this.view.isOwn(seen) && !this.view.expired(seen.record);
  }

  /**
   * The moment the lease, as last observed, became (or will become) free for this standby, and
   * the end of its turn after that moment; null while leading, with no record seen, or once it
   * has tried since that moment (then it keeps its usual rhythm: a slot per free moment, not a
   * retry storm while the store is down).
   */
  private contentionSlot(): { freeAtMono: number; endMono: number } | null {
    const seen = this.view.observed;
    if (this.candidate.isLeader() || !seen || !this.candidate.campaigning()) return null;
    const freeOnSight = this.view.freeOnSight(seen);
    const freeAtMono = this.view.freeAtMono(seen);
    const start = this.last.start;
    // Released: tried since the record last changed. Expired: tried since the expiry.
    const triedSince = start !== null && (freeOnSight ? start.change === this.view.lastChange : start.mono >= freeAtMono);
    if (triedSince) return null;
    if (this.slot?.freeAtMono !== freeAtMono) {
      // A release's wider window stays within a lease duration, however wide the window asked.
      const window = freeOnSight ? Math.min(RELEASE_WINDOW_FACTOR * this.contentionWindowMs, this.timings.leaseDurationMs) : this.contentionWindowMs;
      const turn = contentionDelayMs(this.random(), window);
      this.slot = { freeAtMono, delayMs: this.claim ? this.claim.turnMs(turn) : turn };
    }
    return { freeAtMono, endMono: freeAtMono + this.slot.delayMs };
  }
}
