/**
 * Whether the status directory takes writes, as one more eligibility source of the elector (or
 * the shard member): a holder whose app cannot read that it holds cannot work, and would keep
 * every other candidate from working too. A failed write makes the candidate stand aside (a
 * leader steps down through the end-of-term gate, a member gives its shards up through theirs);
 * while it stands aside the sidecar tries the write again every retry period, and the first that
 * succeeds lets it campaign again. Like the app's health, it can only hold a candidate back.
 */
import type { Clock, Timer } from '../clock.js';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';
import type { SidecarMetrics } from './metrics.js';

export interface StatusWritableOptions {
  /** The status directory, for the reason and the log. */
  dir: string;
  clock: Clock;
  log: Logger;
  /** How often a write is tried again while the directory takes none (the retry period). */
  retryMs: number;
  /** Writes the current state again; it reports back through failed() or succeeded(). */
  retry: () => void;
  /** Told of every failed write (a counter) and of every change of writability (a gauge). */
  metrics?: { failed: () => void; writable: (writable: boolean) => void };
}

export class StatusWritable implements Eligibility {
  /** Why the last write failed, and since when; null while the last write succeeded. */
  private failure: StandAside | null = null;
  private timer: Timer | null = null;
  private closed = false;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly opts: StatusWritableOptions) {
    opts.metrics?.writable(true);
  }

  eligible(): boolean {
    return this.failure === null;
  }

  standAside(): StandAside | null {
    return this.failure;
  }

  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }

  /**
   * A write failed: from now on not eligible (one error line, with the directory and the
   * errno, on the change only; a failed retry is a debug line), and a retry is due.
   */
  failed(err: unknown): void {
    this.opts.metrics?.failed();
    const error = describeError(err);
    const code = (err as NodeJS.ErrnoException | null)?.code ?? null;
    this.scheduleRetry();
    if (this.failure !== null) {
      this.opts.log.debug('the status directory still cannot be written', { dir: this.opts.dir, code, error });
      return;
    }
    this.failure = { reason: `the status directory ${this.opts.dir} cannot be written: ${error}`, since: this.opts.clock.now() };
    this.opts.log.error(
      'cannot write status files: standing aside, taking or keeping no term the app cannot read, until a write succeeds (tried every retry period)',
      {
        dir: this.opts.dir,
        code,
        error,
      },
    );
    this.opts.metrics?.writable(false);
    this.changed();
  }

  /** A write succeeded. Returns whether that ended a failure (the caller then writes the new state). */
  succeeded(): boolean {
    if (this.failure === null) return false;
    this.timer?.cancel();
    this.timer = null;
    this.failure = null;
    this.opts.log.info('the status directory takes writes again: campaigning', { dir: this.opts.dir });
    this.opts.metrics?.writable(true);
    this.changed();
    return true;
  }

  /** No more retries (the sidecar stops). */
  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
  }

  private scheduleRetry(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = this.opts.clock.setTimer(() => {
      this.timer = null;
      if (!this.closed) this.opts.retry();
    }, this.opts.retryMs);
  }

  private changed(): void {
    for (const fn of [...this.listeners]) fn();
  }
}

/**
 * The StatusWritable of a sidecar (lease or shard) that writes `statusDir`, its failures and its
 * writability on the sidecar's series labelled `name`; null without a status directory.
 */
export function statusWritableFor(
  statusDir: string | undefined,
  name: string,
  metrics: SidecarMetrics,
  opts: Pick<StatusWritableOptions, 'clock' | 'log' | 'retryMs' | 'retry'>,
): StatusWritable | null {
  if (statusDir === undefined) return null;
  metrics.statusWriteFailures.inc({ name }, 0);
  return new StatusWritable({
    ...opts,
    dir: statusDir,
    metrics: { failed: () => metrics.statusWriteFailures.inc({ name }), writable: (ok) => metrics.statusWritable.set({ name }, ok ? 1 : 0) },
  });
}
