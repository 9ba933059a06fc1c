import { abortReason, throwIfAborted } from '../abort.js';
import type { CallOptions } from '../backends/lease-store.js';

/**
 * What both in-memory stores (MemoryLeaseStore, MemoryGroupStore) do at the start of each call:
 * record it, so tests can pin the traffic, and fail or hang it when a test said so.
 */
export class InjectedFaults<Op extends string> {
  /** Every call, in order. */
  readonly calls: Op[] = [];
  private readonly queued: { op: Op | '*'; error?: Error; hang?: boolean }[] = [];
  private hangingCalls = 0;

  /** The next call of `op` ('*' = any) rejects with `error`. */
  failNext(op: Op | '*', error: Error): void {
    this.queued.push({ op, error });
  }

  /** The next call of `op` never settles until its signal aborts, as a request to a dead server. */
  hangNext(op: Op | '*'): void {
    this.queued.push({ op, hang: true });
  }

  /** Calls that hang until their signal aborts (as a destroyed request would). */
  get hanging(): number {
    return this.hangingCalls;
  }

  /** A call of `op`: recorded, refused when already aborted, then failed or hung as the first matching fault says. */
  async call(op: Op, opts: CallOptions | undefined): Promise<void> {
    this.calls.push(op);
    throwIfAborted(opts);
    const i = this.queued.findIndex((f) => f.op === op || f.op === '*');
    if (i < 0) return;
    const [f] = this.queued.splice(i, 1);
    if (f?.hang) {
      const signal = opts?.signal;
      this.hangingCalls++;
      try {
        await new Promise<never>((_, reject) => signal?.addEventListener('abort', () => reject(abortReason(signal)), { once: true }));
      } finally {
        this.hangingCalls--;
      }
    }
    if (f?.error) throw f.error;
  }
}
