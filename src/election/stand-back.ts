import { realClock, type Clock, type Timer } from '../clock.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';

/**
 * Standing aside for a while, through the elector's eligibility (the way an unhealthy app
 * does): a leader steps down the graceful way, and the candidate campaigns again only once the
 * while is over. Two users: `leasehold run --give-up-after` (its command failed too often while
 * leading, so another candidate may try it), and the elector's own end-of-term gate (a term whose
 * work was not seen to stop: no new term before that term's lease could have expired).
 */
export class StandBack implements Eligibility {
  /** Standing aside: why and since when, and the timer that ends it (none once closed); null while eligible. */
  private standing: { readonly aside: StandAside; readonly timer: Timer | null } | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly clock: Clock = realClock) {}

  eligible(): boolean {
    return this.standing === null;
  }

  standAside(): StandAside | null {
    return this.standing?.aside ?? null;
  }

  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }

  /** Not eligible for `ms` from now, for `reason`; a later call starts the while again. */
  standBack(reason: string, ms: number): void {
    this.standing?.timer?.cancel();
    const aside = { reason, since: this.clock.now() };
    const timer = this.clock.setTimer(() => {
      this.standing = null;
      this.changed();
    }, ms);
    this.standing = { aside, timer };
    this.changed();
  }

  /** Ends a pending timer (a stopped runner): it stays standing aside. */
  close(): void {
    this.standing?.timer?.cancel();
    if (this.standing) this.standing = { aside: this.standing.aside, timer: null };
  }

  private changed(): void {
    for (const fn of [...this.listeners]) fn();
  }
}
