import type { Eligibility, HealthSnapshot, StandAside } from './eligibility.js';
import type { HealthCounter } from './health-counter.js';

/**
 * What AppHealth (a probe) and ManualHealth (the caller's signal) answer alike: the election's
 * questions, from the results their HealthCounter counted. They differ only in where the
 * results come from.
 */
export abstract class CountedHealth implements Eligibility {
  protected constructor(protected readonly counter: HealthCounter) {}

  eligible(): boolean {
    return this.counter.eligible();
  }

  standAside(): StandAside | null {
    return this.counter.standAside();
  }

  snapshot(): HealthSnapshot {
    return this.counter.snapshot();
  }

  subscribe(onChange: () => void): () => void {
    return this.counter.subscribe(onChange);
  }
}
