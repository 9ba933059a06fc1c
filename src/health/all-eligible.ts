import type { Eligibility, StandAside } from './eligibility.js';

/**
 * Several eligibility sources as one (the sidecar's app health and `run --give-up-after`'s stand
 * back): eligible only when every source is, and the first source's reason while one is not.
 */
export function allEligible(sources: readonly Eligibility[]): Eligibility | undefined {
  if (sources.length <= 1) return sources[0];
  return {
    eligible: () => sources.every((s) => s.eligible()),
    standAside: (): StandAside | null => {
      for (const s of sources) {
        const aside = s.standAside();
        if (aside) return aside;
      }
      return null;
    },
    subscribe: (onChange) => {
      const offs = sources.map((s) => s.subscribe(onChange));
      return () => {
        for (const off of offs) off();
      };
    },
  };
}
