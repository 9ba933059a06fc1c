import { InvalidConfigError } from '../errors.js';
import { MAX_TIMER_MS, durationRangeError, formatDuration as ms } from '../config/duration.js';

/** client-go's JitterFactor: a standby waits retryPeriod × (1 + rand × 1.2) between attempts. */
export const JITTER_FACTOR = 1.2;

export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;

/**
 * Contention window: when the lease becomes free (released, or expired as a standby sees it),
 * each standby waits a random delay in [0, window] before it tries, and gives up its try when it
 * sees another take the lease first. The delay's distribution grows exponentially over the
 * window (Sift's idea: Jamieson, Balakrishnan, Tay, "Sift: a MAC protocol for event-driven
 * wireless sensor networks", 2006): with few standbys the first try comes late in the window,
 * with many the earliest tries are still few, because the probability of the early instants is
 * small. With the default 32 ms and 100 standbys, about 3 try within the first 5 ms after the
 * first try; with 1 standby the median delay is 28 ms (src/election/contention.test.ts). The
 * window is as wide as it can be while a lone standby's takeover (the delay, then a read and a
 * write) stays within the 50 ms goal after the expiry: a wider one pushed that takeover's p95
 * past the goal (docs/benchmarks.md, "Crash failover after the expiry", measures it).
 */
export const DEFAULT_CONTENTION_WINDOW_MS = 32;
/**
 * A release is reached through a window this many times longer. A release arrives at every
 * standby as one event, and handling it is a burst of work on whatever the standbys share (on
 * one machine, its cores): the winner's write then takes longer to become visible to the others.
 * At an expiry each standby wakes on its own timer, with no such burst before. With one window
 * for both, many standbys made tens of conflicting writes per release and only a few per
 * expiry; the longer window spreads the turns past the burst (docs/benchmarks.md, "One lease,
 * 100 standbys", counts the conflicts per handoff).
 */
export const RELEASE_WINDOW_FACTOR = 5;
/** The window holds this many e-foldings of the delay's density: its steepness. */
const CONTENTION_EFOLDINGS = 5;

/**
 * The delay for a uniform draw u in [0, 1]: the inverse of the truncated exponential
 * distribution F(t) = (e^(k·t/W) − 1) / (e^k − 1) on [0, W]. u = 0 gives 0, u = 1 gives W.
 */
export function contentionDelayMs(u: number, windowMs: number): number {
  if (windowMs <= 0) return 0;
  const k = CONTENTION_EFOLDINGS;
  const clamped = Math.min(1, Math.max(0, u));
  return (windowMs / k) * Math.log1p(clamped * Math.expm1(k));
}

/**
 * How a message names an option: 'flag' as the CLI's flags do (`leaseDuration`, durations as
 * `15s`), 'option' as the library's options are spelled (`leaseDurationMs`, plain milliseconds).
 */
export type OptionNames = 'flag' | 'option';

function nameOf(key: string, names: OptionNames): string {
  return names === 'option' ? key : key.replace(/Ms$/, '');
}

function showMs(v: number, names: OptionNames): string {
  return names === 'option' ? String(v) : ms(v);
}

/** A value as the caller gave it: a number as is, anything else quoted (`"10"`), so the two never look alike. */
export function quoted(v: unknown): string {
  return typeof v === 'number' ? String(v) : (JSON.stringify(v) ?? String(v));
}

/** A contention window is a finite, non-negative number of milliseconds, at most the lease duration. */
export function validateContentionWindow(windowMs: number, leaseDurationMs: number, names: OptionNames = 'flag'): void {
  if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs < 0 || windowMs > leaseDurationMs) {
    throw new InvalidConfigError(
      `${nameOf('contentionWindowMs', names)} must be between 0 and ${nameOf('leaseDurationMs', names)} (${showMs(leaseDurationMs, names)}): it delays the standbys' first try after the lease becomes free, got ${quoted(windowMs)}`,
    );
  }
}

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
 * jittered retry inside its deadline. `names`: how the messages name the options.
 */
export function validateTimings(t: Timings, names: OptionNames = 'flag'): void {
  const n = (key: keyof Timings) => nameOf(key, names);
  const show = (v: number) => showMs(v, names);
  for (const key of ['leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs'] as const) {
    if (typeof t[key] !== 'number') throw new InvalidConfigError(`${key} must be a number of milliseconds, got ${JSON.stringify(t[key])}`);
    if (!Number.isFinite(t[key])) throw new InvalidConfigError(`${n(key)} must be a finite duration, got ${t[key]}`);
    if (t[key] > MAX_TIMER_MS)
      throw new InvalidConfigError(`${n(key)} must be at most ${MAX_TIMER_MS} ms (2^31 − 1, the longest a timer can wait), got ${t[key]}`);
  }
  if (t.retryPeriodMs <= 0) throw new InvalidConfigError(`${n('retryPeriodMs')} must be greater than zero (got ${show(t.retryPeriodMs)})`);
  // The CLI's duration flags keep the same rule: timers are whole milliseconds.
  for (const key of ['leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs'] as const) {
    const why = durationRangeError(t[key]);
    if (why) throw new InvalidConfigError(`${n(key)} ${why}, got ${t[key]}`);
  }
  const [lease, renew, retry] = [n('leaseDurationMs'), n('renewDeadlineMs'), n('retryPeriodMs')];
  if (t.leaseDurationMs <= t.renewDeadlineMs) {
    throw new InvalidConfigError(`${lease} must be greater than ${renew} (got ${lease} ${show(t.leaseDurationMs)}, ${renew} ${show(t.renewDeadlineMs)})`);
  }
  if (t.renewDeadlineMs <= JITTER_FACTOR * t.retryPeriodMs) {
    throw new InvalidConfigError(
      `${renew} must be greater than ${retry}*JitterFactor (got ${renew} ${show(t.renewDeadlineMs)}, ${retry} ${show(t.retryPeriodMs)} × ${JITTER_FACTOR} = ${show(JITTER_FACTOR * t.retryPeriodMs)})`,
    );
  }
}

/** The Kubernetes backend stores leaseDurationSeconds as an integer; null when `leaseDurationMs` fits. */
export function kubernetesLeaseDurationError(leaseDurationMs: number): string | null {
  return leaseDurationMs % 1000 === 0 ? null : 'the kubernetes backend stores leaseDurationSeconds as an integer: use whole seconds';
}

export interface ElectionRules extends Timings {
  lease: string;
  identity: string;
  contentionWindowMs?: number | undefined;
  /** The store's backend when known: the Kubernetes backend adds its whole-seconds rule. */
  backend?: string | undefined;
}

/**
 * Every rule an election's options must keep, for the library (LeaderElection.start checks
 * them before it opens anything); the CLI applies the same rules flag by flag. Throws one
 * InvalidConfigError naming the option as the library spells it (leaseDurationMs) and the rule.
 */
export function validateElection(o: ElectionRules): void {
  validateLeaseName(o.lease);
  validateIdentity(o.identity);
  validateTimings(o, 'option');
  const kube = o.backend === 'kubernetes' ? kubernetesLeaseDurationError(o.leaseDurationMs) : null;
  if (kube) throw new InvalidConfigError(`leaseDurationMs ${o.leaseDurationMs} is invalid: ${kube}`);
  if (o.contentionWindowMs !== undefined) {
    const why = durationRangeError(o.contentionWindowMs, 0);
    if (typeof o.contentionWindowMs === 'number' && Number.isFinite(o.contentionWindowMs) && why) {
      throw new InvalidConfigError(`contentionWindowMs ${why}, got ${o.contentionWindowMs}`);
    }
    validateContentionWindow(o.contentionWindowMs, o.leaseDurationMs, 'option');
  }
}

export function validateLeaseName(name: string): void {
  if (typeof name !== 'string') throw new InvalidConfigError(`lease is required: a string naming the lease (a DNS-1123 subdomain), got ${describe(name)}`);
  if (name.length === 0 || name.length > 253 || !LEASE_NAME.test(name)) {
    throw new InvalidConfigError(
      `lease name ${JSON.stringify(name)} is invalid: it must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)`,
    );
  }
}

/** Control characters (C0, DEL, C1) and the Unicode line separators: an identity is written into files and logs. */
const CONTROL = /[\p{Cc}\u2028\u2029]/u;

export function validateIdentity(identity: string): void {
  if (typeof identity !== 'string') {
    throw new InvalidConfigError(`identity is required: a string unique among the candidates (a pod or host name), got ${describe(identity)}`);
  }
  if (identity.trim() === '' || identity.length > 253 || CONTROL.test(identity)) {
    throw new InvalidConfigError(
      `identity ${JSON.stringify(identity)} is invalid: it must be non-empty, at most 253 characters, with no control characters (newlines, tabs, escapes)`,
    );
  }
}

/** A value of the wrong type, for a message: `undefined`, `null`, `a number (5)`. */
function describe(v: unknown): string {
  if (v === undefined || v === null) return String(v);
  return `a ${typeof v} (${JSON.stringify(v) ?? typeof v})`;
}
