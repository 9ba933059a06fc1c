/**
 * The leaderless gaps in a Lease's history (the bench's watch of it, bench/lib/lease-timeline.ts),
 * on the records' own times, written by the candidates: from a release (holder '', its
 * renewTime) to the next holder's acquireTime; or, when a holder is replaced without a release,
 * from the old holder's expiry (its last renewTime + the lease duration). Repeated sightings of
 * one term (a watch reconnecting replays the current record) are not handoffs.
 */
import type { Sighting } from './lease-timeline.js';

export interface Handoff {
  from: string;
  to: string;
  gapMs: number;
  /** Whether the lease was released (else it expired). */
  released: boolean;
  /** The new term's acquireTime, ms since the epoch. */
  acquireMs: number;
}

export function leaderlessGaps(sightings: readonly Sighting[], leaseMs: number): Handoff[] {
  const out: Handoff[] = [];
  let holder: string | undefined;
  let acquired = NaN;
  let lastRenew = NaN;
  let previous = '';
  let freeSince: number | undefined;
  for (const s of sightings) {
    if (s.holder === '') {
      if (holder) {
        previous = holder;
        freeSince = Number.isNaN(s.renewMs) ? s.acquireMs : s.renewMs;
      }
      holder = '';
    } else if (s.holder !== holder || s.acquireMs !== acquired) {
      if (holder === '' && freeSince !== undefined)
        out.push({ from: previous, to: s.holder, gapMs: Math.round(s.acquireMs - freeSince), released: true, acquireMs: s.acquireMs });
      else if (holder)
        out.push({ from: holder, to: s.holder, gapMs: Math.round(s.acquireMs - (lastRenew + leaseMs)), released: false, acquireMs: s.acquireMs });
      holder = s.holder;
      acquired = s.acquireMs;
      lastRenew = s.renewMs;
      freeSince = undefined;
    } else {
      lastRenew = s.renewMs;
    }
  }
  return out;
}
