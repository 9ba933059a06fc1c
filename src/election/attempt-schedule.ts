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
import type { ClaimTimings } from './successor.js';

export interface ScheduleOptions {
  timings: Readonly<Timings>;
  clock: Clock;
  random: () => number;
  /** How often a standby relying on a connected watch still reads the lease. */
  safetyRereadMs: number;
  contentionWindowMs: number;
  /** What the candidate believes about the record. */
  view: RecordView;
  /** Whether the candidate leads now. */
  leading: () => boolean;
  /** The successor claim's timings (successor.ts). */
  claims: ClaimTimings;
  /** Whether the store keeps successor claims now; when not, nobody claims and the window alone rules. */
  claimsKept: () => boolean;
  /** Whether the candidate campaigns (its app is eligible); while not, it claims nothing and has no turn. Default always. */
  campaigning?: () => boolean;
}

export class AttemptSchedule {
  private readonly timings: Readonly<Timings>;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly safetyRereadMs: number;
  private readonly contentionWindowMs: number;
  private readonly view: RecordView;
  private readonly leading: () => boolean;
  private readonly claims: ClaimTimings;
  private readonly claimsKept: () => boolean;
  private readonly campaigning: () => boolean;

  /** This standby's delay for the moment the lease last became free (drawn once per moment). */
  private slot: { freeAtMono: number; delayMs: number } | null = null;
  /** When the last attempt started, and how many records had been observed by then. */
  private lastAttemptStart: { mono: number; seq: number } | null = null;
  private lastAttemptMono: number | null = null;
  /** Ends the current wait between attempts early (a watch event, or stop()). */
  private wake: AbortController | null = null;
  /** A wake-up event arrived while no wait was in progress (an attempt was in flight). */
  private wakePending = false;
  /** A record-less watch event arrived: the next loop turn reads, whatever it was waiting for. */
  private hintPending = false;
  /** The store's watch is connected: every change will be reported. */
  private watchHealthy = false;
  /** When the loop should next make progress (end of its wait or of its attempt); for liveness. */
  private dueMono: number | null = null;
  /** This standby's delay for the moment it found no live successor claim (drawn once per moment). */
  private volunteer: { needAtMono: number; delayMs: number } | null = null;
  /** When this standby last wrote (or tried to write) its claim: a failed write waits a retry period. */
  private lastClaimMono: number | null = null;

  constructor(opts: ScheduleOptions) {
    this.timings = opts.timings;
    this.clock = opts.clock;
    this.random = opts.random;
    this.safetyRereadMs = opts.safetyRereadMs;
    this.contentionWindowMs = opts.contentionWindowMs;
    this.view = opts.view;
    this.leading = opts.leading;
    this.claims = opts.claims;
    this.claimsKept = opts.claimsKept;
    this.campaigning = opts.campaigning ?? (() => true);
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
    this.lastAttemptStart = { mono: this.clock.monotonic(), seq: this.view.seq };
  }

  attemptEnded(): void {
    this.lastAttemptMono = this.clock.monotonic();
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
    if (this.wake) this.wake.abort();
    else this.wakePending = true;
  }

  /** Ends the current wait, if any (stop()). */
  interrupt(): void {
    this.wake?.abort();
  }

  /** A wake-up arrived while an attempt was in flight; taking it clears it. */
  takeWakePending(): boolean {
    const pending = this.wakePending;
    this.wakePending = false;
    return pending;
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

  /** A claim write (successor.ts) is due: to volunteer, or to refresh this standby's own claim. */
  dueForClaim(): boolean {
    if (!this.claimDueNow()) return false;
    return this.lastClaimMono === null || this.clock.monotonic() - this.lastClaimMono >= this.timings.retryPeriodMs;
  }

  /** The record as last seen still asks for this standby's claim now (whatever its last try). */
  claimDueNow(): boolean {
    const due = this.claimDueMono();
    return due !== null && this.clock.monotonic() >= due;
  }

  claimAttempted(): void {
    this.lastClaimMono = this.clock.monotonic();
  }

  /** The lease, as last observed, is free, and this standby's turn for that moment has not come. */
  turnPending(): boolean {
    const slot = this.contentionSlot();
    return slot !== null && this.clock.monotonic() < slot.endMono;
  }

  /** Whether the store keeps claims and this standby holds the live one: it goes first when the lease is free. */
  namedSuccessor(): boolean {
    return !this.leading() && this.campaigning() && this.claimsKept() && this.view.claim(this.claims.lifetimeMs) === 'self';
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
    return this.lastAttemptMono === null || now - this.lastAttemptMono >= this.safetyRereadMs;
  }

  nextWait(): number {
    const retry = this.timings.retryPeriodMs;
    if (this.leading()) return retry;
    const jittered = retry * (1 + this.random() * JITTER_FACTOR);
    // A standby wakes at its turn after the lease becomes free (its expiry as observed, or a
    // release), whether or not it also polls: the expiry is known from the last observation.
    const now = this.clock.monotonic();
    const slot = this.contentionSlot();
    const untilSlot = slot ? Math.max(0, slot.endMono - now) : Infinity;
    const claimDue = this.claimDueMono();
    const untilClaim = claimDue === null ? Infinity : Math.max(claimDue, (this.lastClaimMono ?? -Infinity) + retry) - now;
    if (!this.waitingOnWatch()) return Math.max(0, Math.min(jittered, untilSlot, untilClaim));
    const untilSafety = (this.lastAttemptMono ?? now) + this.safetyRereadMs - now;
    return Math.max(0, Math.min(untilSlot, untilSafety, untilClaim));
  }

  /**
   * When this standby should next write its claim, or null: only while another holds the lease
   * and it has not expired (a free lease is taken, not claimed), and the store keeps claims. Its
   * own live claim is refreshed every refreshMs; with no live claim (none written, or one not
   * seen to change for its lifetime) it volunteers at its own moment in the volunteer window.
   */
  private claimDueMono(): number | null {
    if (this.leading() || !this.claimsKept() || !this.campaigning()) return null;
    const seen = this.view.observed;
    if (!seen || seen.record.holderIdentity === '' || this.view.freeOnSight(seen) || this.view.expired(seen.record)) return null;
    const since = this.view.claimSinceMono;
    const state = this.view.claim(this.claims.lifetimeMs);
    if (state === 'self') return since + this.claims.refreshMs;
    // Another's live claim is replaced once it has not changed for its lifetime.
    const needAtMono = seen.record.successor ? since + this.claims.lifetimeMs : since;
    if (this.volunteer?.needAtMono !== needAtMono) {
      this.volunteer = { needAtMono, delayMs: contentionDelayMs(this.random(), this.claims.volunteerWindowMs) };
    }
    return needAtMono + this.volunteer.delayMs;
  }

  /**
   * True while a standby can rely on its watch: the watch is connected and the lease, as last
   * observed, is held by another and not expired. Then it sends no requests at all until the
   * lease could expire, an event says it was released, or the safety re-read is due.
   */
  private waitingOnWatch(): boolean {
    const seen = this.view.observed;
    if (this.leading() || !this.watchHealthy || !seen) return false;
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
    if (this.leading() || !seen || !this.campaigning()) return null;
    const freeOnSight = this.view.freeOnSight(seen);
    const freeAtMono = this.view.freeAtMono(seen);
    const last = this.lastAttemptStart;
    const triedSince = last !== null && (freeOnSight ? last.seq >= this.view.seq : last.mono >= freeAtMono);
    if (triedSince) return null;
    if (this.slot?.freeAtMono !== freeAtMono) {
      // A release's wider window stays within a lease duration, however wide the window asked.
      const window = freeOnSight ? Math.min(RELEASE_WINDOW_FACTOR * this.contentionWindowMs, this.timings.leaseDurationMs) : this.contentionWindowMs;
      const turn = contentionDelayMs(this.random(), window);
      // The named successor goes at once; the others first give it the grace to be seen taking over.
      const claim = this.claimsKept() ? this.view.claim(this.claims.lifetimeMs) : 'none';
      this.slot = { freeAtMono, delayMs: claim === 'self' ? 0 : claim === 'other' ? this.claims.graceMs + turn : turn };
    }
    return { freeAtMono, endMono: freeAtMono + this.slot.delayMs };
  }
}
