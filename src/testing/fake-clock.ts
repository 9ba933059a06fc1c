import type { Clock, Timer } from '../clock.js';

interface PendingTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A manual clock for unit tests. Time moves only through `advance`, which fires due timers in
 * order and lets the promise chains they start settle before moving on, so a test can step an
 * elector through minutes of leases without sleeping.
 */
export class FakeClock implements Clock {
  private mono = 0;
  private wall: number;
  private seq = 0;
  private timers: PendingTimer[] = [];

  constructor(start = new Date('2026-12-02T09:00:00.000Z')) {
    this.wall = start.getTime();
  }

  now(): Date {
    return new Date(this.wall);
  }

  monotonic(): number {
    return this.mono;
  }

  setTimer(fn: () => void, ms: number): Timer {
    const t: PendingTimer = { at: this.mono + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(t);
    return { cancel: () => void (t.cancelled = true) };
  }

  /** Steps the wall clock only, as an NTP correction would; monotonic time is unaffected. */
  jumpWall(ms: number): void {
    this.wall += ms;
  }

  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves both clocks forward by `ms`, firing each timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    await settle();
    for (;;) {
      const next = this.timers.filter((t) => !t.cancelled && t.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.wall += next.at - this.mono;
      this.mono = next.at;
      next.cancelled = true;
      next.fn();
      await settle();
    }
    this.wall += target - this.mono;
    this.mono = target;
    this.timers = this.timers.filter((t) => !t.cancelled);
    await settle();
  }
}

/** Lets pending promise callbacks run; no wall time passes in a meaningful sense. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
