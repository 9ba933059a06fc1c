/**
 * Whether the app lets the candidate campaign (its Eligibility, src/health/), asked at every
 * decision, and the log lines when that changes. It can only hold the candidate back, never
 * make it lead: without an eligibility it always campaigns, and one that throws counts as no.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';

export class EligibilityGate {
  /** Whether the last change left the candidate standing aside (for the logs); null before the first. */
  private wasAside: boolean | null = null;

  constructor(
    private readonly eligibility: Eligibility | null,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Whether the app lets this candidate campaign: always without an eligibility; never when it throws. */
  campaigning(): boolean {
    if (!this.eligibility) return true;
    try {
      return this.eligibility.eligible() === true;
    } catch {
      return false;
    }
  }

  /** Why this candidate does not campaign, and since when; null when it does. */
  standingAside(): StandAside | null {
    if (this.campaigning()) return null;
    try {
      return this.eligibility?.standAside() ?? { reason: 'the app is not eligible', since: this.clock.now() };
    } catch {
      return { reason: 'the app is not eligible', since: this.clock.now() };
    }
  }

  /** Calls `changed` on every change of the app's eligibility, once it is logged; returns the unsubscribe. */
  subscribe(changed: () => void): (() => void) | undefined {
    return this.eligibility?.subscribe(() => {
      this.logChange();
      changed();
    });
  }

  /**
   * One warn line when the candidate starts standing aside (the first verdict included), one
   * info line when it campaigns; a change of reason in between (unhealthy, then held down) is
   * only a debug line.
   */
  private logChange(): void {
    const aside = this.standingAside();
    const was = this.wasAside;
    this.wasAside = aside !== null;
    if (aside && was !== true) this.log.warn('standing aside', { reason: aside.reason, since: aside.since.toISOString() });
    else if (aside) this.log.debug('still standing aside', { reason: aside.reason, since: aside.since.toISOString() });
    else if (!aside && was !== false) this.log.info('the app is eligible: campaigning');
  }
}
