import { InvalidConfigError } from '../errors.js';
import { MAX_TIMER_MS, formatDuration as ms } from '../config/duration.js';

/** client-go's JitterFactor: a standby waits retryPeriod × (1 + rand × 1.2) between attempts. */
export const JITTER_FACTOR = 1.2;

export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;

/** DNS-1123 subdomain: what a Lease's metadata.name accepts; the SQLite store uses the same rule. */
const LEASE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export interface Timings {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/**
 * Refuses timings that cannot be safe, naming the broken rule as client-go does:
 * leaseDuration > renewDeadline > JitterFactor × retryPeriod > 0. The leader must give up
 * (renewDeadline) before anyone else may take over (leaseDuration), and must get more than one
 * jittered retry inside its deadline.
 */
export function validateTimings(t: Timings): void {
  for (const key of ['leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs'] as const) {
    if (!Number.isFinite(t[key])) throw new InvalidConfigError(`${flagName(key)} must be a finite duration, got ${t[key]}`);
    if (t[key] > MAX_TIMER_MS)
      throw new InvalidConfigError(`${flagName(key)} must be at most ${MAX_TIMER_MS} ms (2^31 − 1, the longest a timer can wait), got ${t[key]}`);
  }
  if (t.retryPeriodMs <= 0) throw new InvalidConfigError(`retryPeriod must be greater than zero (got ${ms(t.retryPeriodMs)})`);
  if (t.leaseDurationMs <= t.renewDeadlineMs) {
    throw new InvalidConfigError(
      `leaseDuration must be greater than renewDeadline (got leaseDuration ${ms(t.leaseDurationMs)}, renewDeadline ${ms(t.renewDeadlineMs)})`,
    );
  }
  if (t.renewDeadlineMs <= JITTER_FACTOR * t.retryPeriodMs) {
    throw new InvalidConfigError(
      `renewDeadline must be greater than retryPeriod*JitterFactor (got renewDeadline ${ms(t.renewDeadlineMs)}, retryPeriod ${ms(t.retryPeriodMs)} × ${JITTER_FACTOR} = ${ms(JITTER_FACTOR * t.retryPeriodMs)})`,
    );
  }
}

export function validateLeaseName(name: string): void {
  if (name.length === 0 || name.length > 253 || !LEASE_NAME.test(name)) {
    throw new InvalidConfigError(
      `lease name ${JSON.stringify(name)} is invalid: it must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)`,
    );
  }
}

/** Control characters (C0, DEL, C1) and the Unicode line separators: an identity is written into files and logs. */
const CONTROL = /[\p{Cc}\u2028\u2029]/u;

export function validateIdentity(identity: string): void {
  if (identity.trim() === '' || identity.length > 253 || CONTROL.test(identity)) {
    throw new InvalidConfigError(
      `identity ${JSON.stringify(identity)} is invalid: it must be non-empty, at most 253 characters, with no control characters (newlines, tabs, escapes)`,
    );
  }
}

function flagName(key: string): string {
  return key.replace(/Ms$/, '');
}
