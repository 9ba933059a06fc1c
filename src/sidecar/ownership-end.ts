/**
 * The sidecar's part of an end-of-term gate, the same for the leader sidecar's term and for each
 * shard a shard sidecar loses, in the one order the invariants ask: the end written where the app
 * reads it (the status files), then every stream handed it, then the app's word that the work
 * stopped (`--drain-timeout`), awaited at most its bound. Each sidecar keeps only what is its own:
 * when a failed write still lets it release, how its streams are drained, what the app owes.
 */
import type { Clock } from '../clock.js';
import type { LogFields, Logger } from '../log.js';

/**
 * How long a release waits for the streams to take the end; a stream that has not by then is
 * closed. Short: a reader that does not read must not hold up the handoff.
 */
export const STREAM_DRAIN_MS = 500;

/** The app's report still owed for an ownership that ended. */
export interface OwedReport {
  /** The work, as the log names it: "its leader work", "the shard's work". */
  work: string;
  /** What the log lines carry besides: the token, and the shard. */
  fields: LogFields;
  /** The bound, as the log line says it. */
  boundMs: number;
  /**
   * True once the app said the work stopped; false when the bound passed first (the leader's
   * own `boundMs`; for a shard, the member's one bound for every shard its pass gave up).
   */
  wait(): Promise<boolean>;
}

export interface OwnershipEnd {
  /** Writes the end where the app reads it; false when it could not and a file may still say it is held (nothing may be released then). */
  written(): boolean;
  /** Hands every open stream what was written, bounded (STREAM_DRAIN_MS). */
  tellStreams(): Promise<void>;
  /** Asked once the streams have it: the report the app still owes, or null when there is none to wait for. */
  owed(): OwedReport | null;
}

/** True when the ownership may be released: written, told, and the app's report (if owed) came within its bound. */
export async function endOwnership(end: OwnershipEnd, clock: Clock, log: Logger): Promise<boolean> {
  if (!end.written()) return false;
  await end.tellStreams();
  const owed = end.owed();
  if (owed === null) return true;
  const started = clock.monotonic();
  log.info(`draining: waiting for the app to say ${owed.work} stopped`, { ...owed.fields, boundMs: owed.boundMs });
  const stopped = await owed.wait();
  if (stopped) logReleasing(log, owed.work, { ...owed.fields, waitedMs: Math.round(clock.monotonic() - started) });
  return stopped;
}

/** The line every release made on the app's word is logged with. */
export function logReleasing(log: Logger, work: string, fields: LogFields): void {
  log.info(`the app stopped ${work}: releasing`, fields);
}

/** Streams as both sidecars keep them (LeaderStreams, EventStreams): how many are open, and a bounded drain. */
export interface DrainableStreams {
  readonly size: number;
  drain(timeoutMs: number): Promise<{ streams: number; closed: number }>;
}

/** Hands every open stream what was published (at most STREAM_DRAIN_MS), logged as `told`; nothing when none is open. */
export async function tellOpenStreams(streams: DrainableStreams, clock: Clock, log: Logger, told: string): Promise<void> {
  if (streams.size === 0) return;
  const started = clock.monotonic();
  const { streams: count, closed } = await streams.drain(STREAM_DRAIN_MS);
  log.info(told, { streams: count, closed, ms: Math.round(clock.monotonic() - started) });
}
