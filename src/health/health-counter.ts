import type { Clock, Timer } from '../clock.js';
import type { Eligibility, HealthSnapshot, HealthState, StandAside } from './eligibility.js';
import type { ProbeResult } from './probe-result.js';

export interface CounterSettings {
  /** Consecutive failures that make the app unhealthy (the kubelet's failureThreshold). */
  failureThreshold: number;
  /** Consecutive successes that make it healthy (the kubelet's successThreshold). */
  successThreshold: number;
  /** After the app was unhealthy, it must be healthy this long without a failed result before it is eligible. */
  holdDownMs: number;
  /** Consecutive notSent results after which the health is unknown again (not eligible). */
  notSentThreshold: number;
}

/**
 * The kubelet's counting, plus a hold-down, over results given one at a time (by a probe's
 * monitor or by the caller):
 * - the state starts unknown (never eligible: a new candidate must not win before its app is
 *   up); successThreshold successes in a row make it healthy, failureThreshold failures in a
 *   row unhealthy; a result of the other kind resets the count;
 * - a notSent result (the sidecar could not probe) changes neither count; notSentThreshold of
 *   them in a row make the state unknown, since nothing then vouches for the app;
 * - eligible = healthy, except after a loss of health (the state was unhealthy, or left
 *   healthy): then only once it has been healthy for holdDownMs with no failed result, so an
 *   app that flaps cannot make the lease flap. The first healthy verdict needs no hold-down.
 */
export class HealthCounter implements Eligibility {
  private state: HealthState = 'unknown';
  private sinceWall: Date;
  private reason: string | null = null;
  private successes = 0;
  private failures = 0;
  private notSents = 0;
  /** True from a loss of health until the hold-down has been served. */
  private heldDown = false;
  /** While healthy and held down: monotonic start of the run of successes the hold-down counts. */
  private runStartMono: number | null = null;
  /**
   * When that run ends the hold-down, by the wall clock, fixed when the run starts: worked out
   * again at each call, the wall and monotonic clocks' drift would move it by a millisecond now
   * and then, and the reason that quotes it would look changed when nothing had.
   */
  private runEndsWall: Date | null = null;
  private holdDownTimer: Timer | null = null;
  private ineligibleSince: Date;
  private wasEligible = false;
  /** What the listeners last heard: the state, the eligibility and the reason for standing aside. */
  private lastKey: string;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly settings: CounterSettings,
    private readonly clock: Clock,
  ) {
    this.sinceWall = clock.now();
    this.ineligibleSince = this.sinceWall;
    this.lastKey = this.key();
  }

  record(result: ProbeResult): void {
    if (result.outcome === 'notSent') {
      this.notSents++;
      if (this.notSents >= this.settings.notSentThreshold && this.state !== 'unknown') {
        this.enter('unknown', `the app could not be probed ${this.notSents} times in a row: ${result.reason}`);
      }
      return this.changed();
    }
    this.notSents = 0;
    if (result.outcome === 'healthy') {
      this.failures = 0;
      this.successes++;
      if (this.state !== 'healthy' && this.successes >= this.settings.successThreshold) this.enter('healthy', null);
      else if (this.state === 'healthy' && this.heldDown && this.runStartMono === null) this.startRun();
    } else {
      this.successes = 0;
      this.failures++;
      // A failed result breaks the run of health the hold-down waits for, even below the threshold.
      this.stopRun();
      if (this.state !== 'healthy') this.reason = result.reason;
      if (this.state !== 'unhealthy' && this.failures >= this.settings.failureThreshold) this.enter('unhealthy', result.reason);
    }
    this.changed();
  }

  eligible(): boolean {
    return this.state === 'healthy' && !this.heldDown;
  }

  standAside(): StandAside | null {
    if (this.eligible()) return null;
    return { reason: this.describe(), since: this.ineligibleSince };
  }

  snapshot(): HealthSnapshot {
    const eligibleAt = this.state === 'healthy' && this.heldDown && this.runStartMono !== null ? this.runEndsWall : null;
    return { state: this.state, since: this.sinceWall, reason: this.reason, eligible: this.eligible(), eligibleAt };
  }

  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => void this.listeners.delete(onChange);
  }

  /**
   * Cancels the hold-down timer, which would otherwise keep a stopped process alive until it
   * ends; a hold-down under way starts over at the next success.
   */
  cancelTimers(): void {
    this.stopRun();
  }

  /** Cancels the hold-down timer; nothing is heard after. */
  close(): void {
    this.stopRun();
    this.listeners.clear();
  }

  private describe(): string {
    if (this.state === 'unhealthy') return `app unhealthy: ${this.reason ?? 'failed its check'}`;
    if (this.state === 'unknown') return `app health unknown: ${this.reason ?? 'no verdict yet'}`;
    const at = this.snapshot().eligibleAt;
    return at
      ? `app healthy again, held down until ${at.toISOString()} (${this.settings.holdDownMs} ms of health after a failure)`
      : 'app healthy again, held down: a check failed during the hold-down';
  }

  private enter(state: HealthState, reason: string | null): void {
    // Any loss of health is served with a hold-down on the way back.
    if (state === 'unhealthy' || this.state === 'healthy') this.heldDown = true;
    this.state = state;
    this.reason = reason;
    this.sinceWall = this.clock.now();
    if (state === 'healthy') {
      if (this.heldDown) this.startRun();
    } else {
      this.stopRun();
    }
  }

  private startRun(): void {
    this.stopRun();
    if (this.settings.holdDownMs === 0) {
      this.heldDown = false;
      return;
    }
    const start = this.clock.monotonic();
    this.runStartMono = start;
    this.runEndsWall = new Date(this.clock.now().getTime() + this.settings.holdDownMs);
    this.holdDownTimer = this.clock.setTimer(() => {
      if (this.runStartMono !== start || this.state !== 'healthy') return;
      this.heldDown = false;
      this.runStartMono = null;
      this.runEndsWall = null;
      this.holdDownTimer = null;
      this.changed();
    }, this.settings.holdDownMs);
  }

  private stopRun(): void {
    this.holdDownTimer?.cancel();
    this.holdDownTimer = null;
    this.runStartMono = null;
    this.runEndsWall = null;
  }

  /**
   * The state, the eligibility, and while not eligible the reason given for it: a new reason
   * (connection refused, then status 503; a hold-down started over) is news for whoever shows
   * it (the status files, /leader and its streams), though the eligibility stays the same.
   */
  private key(): string {
    const eligible = this.eligible();
    return `${this.state}/${eligible}/${eligible ? '' : this.describe()}`;
  }

  /** Tells the listeners when the state, the eligibility or the reason changed; notes when eligibility was lost. */
  private changed(): void {
    const now = this.eligible();
    const key = this.key();
    if (key === this.lastKey) return;
    this.lastKey = key;
    if (this.wasEligible && !now) this.ineligibleSince = this.clock.now();
    this.wasEligible = now;
    for (const fn of [...this.listeners]) {
      try {
        fn();
      } catch {
        // A listener's failure is its own: the count goes on.
      }
    }
  }
}
