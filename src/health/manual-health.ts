import { realClock, type Clock } from '../clock.js';
import { CountedHealth } from './counted-health.js';
import { HealthCounter } from './health-counter.js';
import { resolveThresholds, type ThresholdOptions } from './health-settings.js';

/**
 * The app's health as the caller reports it (the library's health signal): each call to
 * healthy() or unhealthy(reason) is one result, counted as a probe's would be (thresholds,
 * hold-down). It starts unknown, so a candidate does not campaign until the app has said it
 * is healthy successThreshold times.
 */
export class ManualHealth extends CountedHealth {
  /** Validates the thresholds (InvalidConfigError naming the rule). `clock` is for tests. */
  constructor(options: ThresholdOptions = {}, clock: Clock = realClock) {
    super(new HealthCounter(resolveThresholds(options), clock));
  }

  healthy(): void {
    this.counter.record({ outcome: 'healthy' });
  }

  unhealthy(reason = 'the app reported itself unhealthy'): void {
    this.counter.record({ outcome: 'unhealthy', reason: String(reason) });
  }

  /** Ends a pending hold-down timer (a stopped election). */
  close(): void {
    this.counter.close();
  }
}
