/**
 * Time, injected. The elector reads two clocks:
 * - `now()`: wall time, written into lease records and the status files (other processes read it);
 * - `monotonic()`: milliseconds that never go backwards, used for every local judgement of
 *   expiry or deadlines, so an NTP step cannot make a lease look fresh or stale.
 * Tests pass a FakeClock (src/testing/fake-clock.ts) and never sleep.
 */
import { MAX_TIMER_MS } from './config/duration.js';

export interface Timer {
  cancel(): void;
}

export interface Clock {
  now(): Date;
  monotonic(): number;
  setTimer(fn: () => void, ms: number): Timer;
}

export const realClock: Clock = {
  now: () => new Date(),
  monotonic: () => performance.now(),
  setTimer(fn, ms) {
    // Node fires a timer longer than 2^31 − 1 ms at once (with a warning): clamp it, so a huge
    // leaseDurationSeconds written by another candidate only means a long wait, never a busy loop.
    const handle = setTimeout(fn, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    return { cancel: () => clearTimeout(handle) };
  },
};

/** Resolves after `ms` on the given clock, or early (without error) when `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      timer.cancel();
      resolve();
    };
    const timer = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
