/**
 * The bench's own view of a lease: every change it is told of, stamped on arrival, with the
 * record's own times. A crash failover is judged on the records: the new holder's acquireTime
 * against the crashed holder's last renewTime + the lease duration, both written by the
 * candidates on this machine's clock. That is the true expiry, whatever the delays of the
 * bench's view (which a loaded machine stretches), and the same rule for leasehold and client-go.
 */
import type { WatchEvent } from '../../src/backends/lease-store.js';

/** Subscribes to a lease's changes; returns the unsubscribe (a store's watch, bound to one lease). */
export type Subscribe = (onEvent: (e: WatchEvent) => void) => () => void;

export interface Sighting {
  /** performance.now() when the change arrived. */
  at: number;
  holder: string;
  /** The record's renewTime and acquireTime, ms since the epoch (NaN when absent). */
  renewMs: number;
  acquireMs: number;
}

export class LeaseTimeline {
  readonly sightings: Sighting[] = [];
  private readonly stop: () => void;

  constructor(subscribe: Subscribe) {
    this.stop = subscribe((e) => {
      if (!e.record) return;
      const r = e.record.record;
      this.sightings.push({
        at: performance.now(),
        holder: r.holderIdentity,
        renewMs: r.renewTime?.getTime() ?? NaN,
        acquireMs: r.acquireTime?.getTime() ?? NaN,
      });
    });
  }

  /** The first holder other than `not` seen at or after `since` (performance.now()). */
  firstOtherHolder(not: string, since: number): Sighting | undefined {
    return this.sightings.find((s) => s.at >= since && s.holder !== '' && s.holder !== not);
  }

  /**
   * ms from the true expiry of `oldHolder`'s lease (its last renewTime seen before `newHolder`
   * first appears, + the lease duration) to `newHolder`'s acquireTime. Negative would mean a
   * takeover before the expiry. Undefined when either record is missing.
   */
  afterExpiry(oldHolder: string, newHolder: string, leaseMs: number, since = 0): number | undefined {
    const seen = this.sightings.filter((s) => s.at >= since);
    const taken = seen.find((s) => s.holder === newHolder);
    if (!taken) return undefined;
    const last = seen.filter((s) => s.at < taken.at && s.holder === oldHolder).at(-1);
    return last ? Math.round(taken.acquireMs - (last.renewMs + leaseMs)) : undefined;
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
