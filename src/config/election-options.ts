/**
 * The rules an election's options keep, in one place for the library (LeaderElection) and the
 * CLI alike: timings, lease name, identity, contention window, and the Kubernetes backend's whole
 * seconds. resolveElectionConfig checks them all once and makes the ElectionConfig the elector
 * takes, which checks nothing again. Each refusal is an InvalidConfigError whose `field` names
 * the option (`leaseDuration`), so the CLI can name its flag without reading the message.
 */
import { InvalidConfigError } from '../errors.js';
import { MAX_TIMER_MS, durationRangeError, formatDuration as ms } from './duration.js';
import { hasControl } from '../util/escape-control.js';

/** client-go's JitterFactor: a standby waits retryPeriod × (1 + rand × 1.2) between attempts. */
export const JITTER_FACTOR = 1.2;

/**
 * leasehold's allowance for late timers and clocks that run at different rates: a timer fires
 * at most CLOCK_MARGIN_FIXED_MS late (an event loop held up by GC or a busy machine), and two
 * candidates' monotonic clocks run within CLOCK_MARGIN_PPM of each other (twice the 500 ppm an
 * NTP-disciplined kernel clock may slew). What ends a term at the renew deadline (the library's
 * and the sidecar's "not leader", `run`'s SIGKILL at the end of its grace period) keeps at least
 * clockMarginMs(leaseDuration) before the earliest moment another candidate could lead: the
 * lease's expiry (docs/guarantees.md, "Clocks and timers").
 */
export const CLOCK_MARGIN_FIXED_MS = 50;
export const CLOCK_MARGIN_PPM = 1_000;

export function clockMarginMs(leaseDurationMs: number): number {
  return CLOCK_MARGIN_FIXED_MS + Math.ceil((leaseDurationMs * CLOCK_MARGIN_PPM) / 1_000_000);
}

/** The SQLite store's busy timeout when nothing bounds it lower (storeTimeouts). */
export const SQLITE_BUSY_TIMEOUT_MS = 1_000;

/**
 * How long a candidate's store calls may take, from its timings: a request (renewDeadline / 2,
 * as client-go), and SQLite's busy timeout: how long a write waits on another process's lock.
 * The SQLite store waits on its own timers, the event loop free (its write()), so the renew
 * deadline's timer and `run`'s SIGKILL fire on time whatever a write waits for; the wait is still
 * kept within what lies between the renew deadline and the earliest moment another could lead,
 * less the clock margin, so a library caller's store settings that reinstate a synchronous wait
 * (or a renewal landing late) stay inside the lease (docs/guarantees.md).
 */
export function storeTimeouts(t: Timings): { requestTimeoutMs: number; busyTimeoutMs: number } {
  const room = t.leaseDurationMs - t.renewDeadlineMs - clockMarginMs(t.leaseDurationMs);
  return { requestTimeoutMs: t.renewDeadlineMs / 2, busyTimeoutMs: Math.max(0, Math.min(SQLITE_BUSY_TIMEOUT_MS, Math.floor(room))) };
}

/**
 * A library caller's store settings with the candidate's timeouts filled in where it gave none
 * (a key present but undefined counts as none, as `...spread` would not). A busy timeout of its
 * own above the bound is refused: it would let a renewal hold the event loop past the moment
 * another candidate could lead.
 */
export function withStoreTimeouts<S extends { requestTimeoutMs?: number | undefined; busyTimeoutMs?: number | undefined }>(settings: S, t: Timings): S {
  const bound = storeTimeouts(t);
  const busy = settings.busyTimeoutMs;
  if (busy !== undefined && !(Number.isFinite(busy) && busy >= 0 && busy <= bound.busyTimeoutMs)) {
    const rule = `must be from 0 to leaseDurationMs − renewDeadlineMs − the clock margin, at most ${SQLITE_BUSY_TIMEOUT_MS} (${bound.busyTimeoutMs} ms with these timings): a renewal waiting on a locked file holds the event loop that long (docs/guarantees.md)`;
    throw new InvalidConfigError(`store.busyTimeoutMs ${String(busy)} is invalid: it ${rule}`, { field: 'busyTimeoutMs', rule });
  }
  return { ...settings, requestTimeoutMs: settings.requestTimeoutMs ?? bound.requestTimeoutMs, busyTimeoutMs: busy ?? bound.busyTimeoutMs };
}

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

/** The options these rules are about, as an InvalidConfigError's `field` names them. */
export type ElectionField = 'lease' | 'identity' | 'leaseDuration' | 'renewDeadline' | 'retryPeriod' | 'contentionWindow';

/**
 * How a message names an option: 'duration' as durations are written (`leaseDuration 15s`),
 * 'option' as the library's options are spelled (`leaseDurationMs 15000`, plain milliseconds).
 */
export type OptionNames = 'duration' | 'option';

function nameOf(key: string, names: OptionNames): string {
  return names === 'option' ? key : key.replace(/Ms$/, '');
}

function fieldOf(key: string): ElectionField {
  return key.replace(/Ms$/, '') as ElectionField;
}

function showMs(v: number, names: OptionNames): string {
  return names === 'option' ? String(v) : ms(v);
}

/** A value as the caller gave it: a number as is, anything else quoted (`"10"`), so the two never look alike. */
export function quoted(v: unknown): string {
  return typeof v === 'number' ? String(v) : (JSON.stringify(v) ?? String(v));
}

export interface Timings {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/**
 * The longest drain that leaves the release before the renew deadline: the deadline counts from
 * the last renewal, which at a stop started up to one retry period before, and the release gets
 * one request timeout (renewDeadline / 2, the sidecar's) of its own. Negative when none fits.
 * The sidecar's `--drain-timeout` and the library's `drainTimeoutMs` are held to it alike.
 */
export function maxDrainMs(t: Timings): number {
  return Math.floor(t.renewDeadlineMs / 2) - t.retryPeriodMs;
}

/**
 * The library's `drainTimeoutMs`, for LeaderElection and ShardGroup alike: a whole number of
 * milliseconds a timer can wait, and at most maxDrainMs (the sidecar's `--drain-timeout` rule): a
 * drain that outlasts it ends after the term could have expired, so the next owner may start
 * beside the work. `mustStill`: what must still happen before the renew deadline (the message's).
 */
export function checkDrainTimeout(drain: number | undefined, t: Timings, mustStill: string): void {
  if (drain !== undefined && (typeof drain !== 'number' || !Number.isInteger(drain) || drain < 0 || drain > MAX_TIMER_MS)) {
    throw new InvalidConfigError(`drainTimeoutMs must be a whole number of milliseconds from 0 to 2^31 − 1, got ${quoted(drain)}`);
  }
  const fits = maxDrainMs(t);
  if (drain !== undefined && drain > 0 && drain > fits) {
    throw new InvalidConfigError(
      fits > 0
        ? `drainTimeoutMs must be at most renewDeadlineMs/2 − retryPeriodMs (${fits}): ${mustStill} before the renew deadline; raise renewDeadlineMs for a longer drain, got ${drain}`
        : `drainTimeoutMs ${drain} is too long: no drain fits renewDeadlineMs/2 − retryPeriodMs (${t.renewDeadlineMs / 2} − ${t.retryPeriodMs}); raise renewDeadlineMs, lower retryPeriodMs, or give 0`,
      { field: 'drainTimeoutMs' },
    );
  }
}

/** The timings with the defaults (client-go's) filled in. */
export function resolvedTimings(o: Partial<Timings>): Timings {
  return {
    leaseDurationMs: o.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS,
    renewDeadlineMs: o.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS,
    retryPeriodMs: o.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS,
  };
}

/**
 * Refuses timings that cannot be safe, naming the broken rule as client-go does:
 * leaseDuration > renewDeadline > JitterFactor × retryPeriod > 0. The leader must give up
 * (renewDeadline) before anyone else may take over (leaseDuration), and must get more than one
 * jittered retry inside its deadline. `names`: how the messages name the options.
 */
export function validateTimings(t: Timings, names: OptionNames = 'duration'): void {
  const n = (key: keyof Timings) => nameOf(key, names);
  const show = (v: number) => showMs(v, names);
  const refuse = (key: keyof Timings, message: string) => new InvalidConfigError(message, { field: fieldOf(key) });
  for (const key of ['leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs'] as const) {
    if (typeof t[key] !== 'number') throw refuse(key, `${key} must be a number of milliseconds, got ${JSON.stringify(t[key])}`);
    if (!Number.isFinite(t[key])) throw refuse(key, `${n(key)} must be a finite duration, got ${t[key]}`);
    if (t[key] > MAX_TIMER_MS) throw refuse(key, `${n(key)} must be at most ${MAX_TIMER_MS} ms (2^31 − 1, the longest a timer can wait), got ${t[key]}`);
  }
  if (t.retryPeriodMs <= 0) throw refuse('retryPeriodMs', `${n('retryPeriodMs')} must be greater than zero (got ${show(t.retryPeriodMs)})`);
  // Durations given as text keep the same rule: timers are whole milliseconds.
  for (const key of ['leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs'] as const) {
    const why = durationRangeError(t[key]);
    if (why) throw refuse(key, `${n(key)} ${why}, got ${t[key]}`);
  }
  const [lease, renew, retry] = [n('leaseDurationMs'), n('renewDeadlineMs'), n('retryPeriodMs')];
  if (t.leaseDurationMs <= t.renewDeadlineMs) {
    throw refuse('leaseDurationMs', `${lease} must be greater than ${renew} (got ${lease} ${show(t.leaseDurationMs)}, ${renew} ${show(t.renewDeadlineMs)})`);
  }
  const marginMs = clockMarginMs(t.leaseDurationMs);
  if (t.leaseDurationMs - t.renewDeadlineMs < marginMs) {
    throw refuse(
      'renewDeadlineMs',
      `${renew} must be at most ${lease} − ${show(marginMs)} (50 ms + 0.1% of ${lease}: the margin for late timers and clock rates, docs/guarantees.md) (got ${lease} ${show(t.leaseDurationMs)}, ${renew} ${show(t.renewDeadlineMs)})`,
    );
  }
  if (t.renewDeadlineMs <= JITTER_FACTOR * t.retryPeriodMs) {
    throw refuse(
      'renewDeadlineMs',
      `${renew} must be greater than ${retry}*JitterFactor (got ${renew} ${show(t.renewDeadlineMs)}, ${retry} ${show(t.retryPeriodMs)} × ${JITTER_FACTOR} = ${show(JITTER_FACTOR * t.retryPeriodMs)})`,
    );
  }
}

/** A Lease stores leaseDurationSeconds as an integer: with the kubernetes backend it must be whole seconds. */
export function validateKubernetesLeaseDuration(leaseDurationMs: number, names: OptionNames = 'duration'): void {
  if (leaseDurationMs % 1000 === 0) return;
  const rule = 'the kubernetes backend stores leaseDurationSeconds as an integer: use whole seconds';
  throw new InvalidConfigError(`${nameOf('leaseDurationMs', names)} ${showMs(leaseDurationMs, names)} is invalid: ${rule}`, { field: 'leaseDuration', rule });
}

/** A contention window is a finite, non-negative number of milliseconds, at most the lease duration. */
export function validateContentionWindow(windowMs: number, leaseDurationMs: number, names: OptionNames = 'duration'): void {
  if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs < 0 || windowMs > leaseDurationMs) {
    throw new InvalidConfigError(
      `${nameOf('contentionWindowMs', names)} must be between 0 and ${nameOf('leaseDurationMs', names)} (${showMs(leaseDurationMs, names)}): it delays the standbys' first try after the lease becomes free, got ${quoted(windowMs)}`,
      { field: 'contentionWindow' },
    );
  }
}

/** DNS-1123 subdomain: what a Lease's metadata.name accepts; the SQLite store uses the same rule. */
const LEASE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function validateLeaseName(name: string): void {
  if (typeof name !== 'string') {
    throw new InvalidConfigError(`lease is required: a string naming the lease (a DNS-1123 subdomain), got ${describe(name)}`, { field: 'lease' });
  }
  if (name.length === 0 || name.length > 253 || !LEASE_NAME.test(name)) {
    const rule = "it must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)";
    throw new InvalidConfigError(`lease name ${JSON.stringify(name)} is invalid: ${rule}`, { field: 'lease', rule });
  }
}

export function validateIdentity(identity: string): void {
  if (typeof identity !== 'string') {
    throw new InvalidConfigError(`identity is required: a string unique among the candidates (a pod or host name), got ${describe(identity)}`, {
      field: 'identity',
    });
  }
  if (identity.trim() === '' || identity.length > 253 || hasControl(identity)) {
    const rule = 'must be non-empty, at most 253 characters, with no control characters (newlines, tabs, escapes)';
    throw new InvalidConfigError(`identity ${JSON.stringify(identity)} is invalid: it ${rule}`, { field: 'identity', rule });
  }
}

export interface ElectionRules extends Timings {
  lease: string;
  identity: string;
  contentionWindowMs?: number | undefined;
  /** The store's backend when known: the Kubernetes backend adds its whole-seconds rule. */
  backend?: string | undefined;
}

/**
 * An election's options with every rule checked and every default filled in: what the elector
 * runs with. Only resolveElectionConfig makes one, so whoever takes it checks nothing again.
 */
export type ElectionConfig = Readonly<
  Timings & {
    lease: string;
    identity: string;
    /**
     * When the lease becomes free (released, or expired as this standby sees it), a standby tries
     * after a random delay in [0, window], and not at all if it sees another take the lease
     * first: with many standbys only a few try (contentionDelayMs, elector-config.ts). Default 32 ms.
     */
    contentionWindowMs: number;
  }
> & {
  /** A mark in the type only (absent at run time): a configuration made by hand does not type-check. */
  readonly __resolvedBy: 'resolveElectionConfig';
};

/** The rule a refusal is about, for a caller that tells refusals in its own words (the CLI, by flag). */
export type ElectionRule = 'lease' | 'identity' | 'timings' | 'kubernetesLeaseDuration' | 'contentionWindow';

/**
 * Every rule an election's options must keep, checked once, before anything is opened: the
 * options as the elector takes them (ElectionConfig). A refusal is one InvalidConfigError naming
 * the option as `names` spells it, and the rule; `tell` may put it in its caller's words.
 */
export function resolveElectionConfig(
  o: ElectionRules,
  names: OptionNames = 'option',
  tell: (rule: ElectionRule, err: InvalidConfigError) => Error = (_, err) => err,
): ElectionConfig {
  const check = (rule: ElectionRule, run: () => void) => {
    try {
      run();
    } catch (err) {
      throw err instanceof InvalidConfigError ? tell(rule, err) : err;
    }
  };
  check('lease', () => validateLeaseName(o.lease));
  check('identity', () => validateIdentity(o.identity));
  check('timings', () => validateTimings(o, names));
  if (o.backend === 'kubernetes') check('kubernetesLeaseDuration', () => validateKubernetesLeaseDuration(o.leaseDurationMs, names));
  const window = o.contentionWindowMs;
  if (window !== undefined) {
    check('contentionWindow', () => {
      // A timer waits it: whole milliseconds, as the timings.
      const why = typeof window === 'number' && Number.isFinite(window) ? durationRangeError(window, 0) : null;
      if (why) throw new InvalidConfigError(`${nameOf('contentionWindowMs', names)} ${why}, got ${window}`, { field: 'contentionWindow', rule: why });
      validateContentionWindow(window, o.leaseDurationMs, names);
    });
  }
  // The default is within every rule: whole milliseconds, at most the lease duration.
  const contentionWindowMs = window ?? Math.min(DEFAULT_CONTENTION_WINDOW_MS, o.leaseDurationMs);
  const config = {
    lease: o.lease,
    identity: o.identity,
    leaseDurationMs: o.leaseDurationMs,
    renewDeadlineMs: o.renewDeadlineMs,
    retryPeriodMs: o.retryPeriodMs,
    contentionWindowMs,
  };
  return config as ElectionConfig;
}

/** A value of the wrong type, for a message: `undefined`, `null`, `a number (5)`. */
function describe(v: unknown): string {
  if (v === undefined || v === null) return String(v);
  return `a ${typeof v} (${JSON.stringify(v) ?? typeof v})`;
}
