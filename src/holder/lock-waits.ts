/**
 * Whether a holder's next write may wait on a lock another client holds (CallOptions.waitForLock),
 * for a lease's candidate and a shard member alike: not within a retryPeriod after a write of its
 * own that was allowed to wait went unanswered. On SQLite such a wait is up to the busy timeout
 * (once spent synchronously, the whole process stalled; the store now waits on its own timers,
 * the event loop free); a write sent right after one the lock refused would most likely wait it
 * out again, back to back: a shard member losing its session (its last heartbeat, then two takes
 * of a member slot) once waited three busy timeouts in a row, a lease's step-down (its last
 * renewal, then the release) two. Paced so, a holder waits on a lock at most once per busy
 * timeout plus a retryPeriod, as its renewals do; a write that may not wait answers at once,
 * unanswered, and is tried again at its own pace. PostgreSQL and Kubernetes ignore the option.
 */
import type { Clock } from '../clock.js';
import { BackendUnavailableError } from '../errors.js';

export class LockWaits {
  /** When a write allowed to wait last came back unanswered (monotonic); null: none yet. */
  private refusedAtMono: number | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly retryPeriodMs: number,
  ) {}

  /** Whether a write sent now may wait on another's lock: not within a retryPeriod of one that waited unanswered. */
  mayWait(): boolean {
    return this.refusedAtMono === null || this.clock.monotonic() - this.refusedAtMono >= this.retryPeriodMs;
  }

  /**
   * Runs write `send`, telling it whether it may wait on another's lock: only if its caller
   * allows it (`waitForLock`) and mayWait. One that waited and went unanswered
   * (BackendUnavailableError) starts the pause; a conflict was an answer. A write that did not
   * wait spent no busy timeout and does not move the pause on: else a lock held for long would
   * keep every later write (a heartbeat too) from waiting even once.
   */
  async send<T>(waitForLock: boolean, send: (waits: boolean) => Promise<T>): Promise<T> {
    const waits = waitForLock && this.mayWait();
    try {
      return await send(waits);
    } catch (err) {
      if (waits && err instanceof BackendUnavailableError) this.refusedAtMono = this.clock.monotonic();
      throw err;
    }
  }
}
