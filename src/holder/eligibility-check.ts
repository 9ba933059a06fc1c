/**
 * Whether the app lets the candidate campaign (its Eligibility, src/health/), asked at every
 * decision, and the log lines when that changes. It can only hold the candidate back, never
 * make it lead: without an eligibility it always campaigns, and one that throws counts as no.
 * The lease's candidate and a shard member (src/shards/shard-member.ts) both ask it.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';

export class EligibilityCheck {
  /** Whether the last change left the candidate standing aside (for the logs); null before the first. */
  private wasAside: boolean | null;

  /**
   * `says.eligible`: the info line when the app is eligible again (what the caller goes back to
   * doing). `says.firstEligible`: whether a first verdict of "eligible" is said too (a shard
   * member says only a change from standing aside).
   */
  constructor(
    private readonly eligibility: Eligibility | null,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly says: { eligible: string; firstEligible: boolean } = { eligible: 'the app is eligible: campaigning', firstEligible: true },
  ) {
    this.wasAside = says.firstEligible ? null : false;
  }

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
    else if (!aside && was !== false) this.log.info(this.says.eligible);
  }
}
