/**
 * The bench's own view of a lease: every change it is told of, stamped on arrival. A crash
 * failover is judged against the expiry this view implies (the old holder's last change seen +
 * the lease duration), the same way for leasehold and client-go.
 */
import type { WatchEvent } from '../src/backends/lease-store.js';

/** Subscribes to a lease's changes; returns the unsubscribe (a store's watch, bound to one lease). */
export type Subscribe = (onEvent: (e: WatchEvent) => void) => () => void;

export interface Sighting {
  /** performance.now() when the change arrived. */
  at: number;
  holder: string;
}

export class LeaseTimeline {
  readonly sightings: Sighting[] = [];
  private readonly stop: () => void;

  constructor(subscribe: Subscribe) {
    this.stop = subscribe((e) => {
      if (e.record) this.sightings.push({ at: performance.now(), holder: e.record.record.holderIdentity });
    });
  }

  /** The first holder other than `not` seen at or after `since` (performance.now()). */
  firstOtherHolder(not: string, since: number): Sighting | undefined {
    return this.sightings.find((s) => s.at >= since && s.holder !== '' && s.holder !== not);
  }

  /**
   * ms from the expiry of `oldHolder`'s last change seen (before `newHolder` first appears)
   * to `newHolder`'s first appearance; undefined when either is missing.
   */
  afterExpiry(oldHolder: string, newHolder: string, leaseMs: number, since = 0): number | undefined {
    const seen = this.sightings.filter((s) => s.at >= since);
    const taken = seen.find((s) => s.holder === newHolder);
    if (!taken) return undefined;
    const last = seen.filter((s) => s.at < taken.at && s.holder === oldHolder).at(-1);
    return last ? Math.round(taken.at - (last.at + leaseMs)) : undefined;
  }

  close(): void {
    this.stop();
  }
}

/** The `sinceFreeMs` of the last "became leader" line in a sidecar's JSON log. */
export function selfReportedSinceFree(stderr: string): number | undefined {
  const line = stderr
    .split('\n')
    .filter((l) => l.includes('"became leader"'))
    .at(-1);
  if (!line) return undefined;
  const v = (JSON.parse(line) as { sinceFreeMs?: number }).sinceFreeMs;
  return typeof v === 'number' ? v : undefined;
}
