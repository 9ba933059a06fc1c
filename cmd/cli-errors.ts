/**
 * How the CLI tells an error: bad input as one line naming the flag, the value and the rule
 * (badFlag, checkFlag), a library error led by the flag its setting comes from (cliMessage), and
 * that line as written to stderr (refusalLine, with EXIT_USAGE). A refusal is built without
 * knowing where a value came from; cliMessage tells it by the parse's origins, naming the
 * LEASEHOLD_<FLAG> variable a value came from rather than its flag.
 */
import { InvalidConfigError, describeError } from '../src/errors.js';
import { escapeForTerminal } from '../src/util/escape-control.js';
import { hideCredentials } from '../src/util/hide-credentials.js';
import type { Origins } from './flag-table.js';

/** Exit code for bad input: a flag, a value, a path. Nothing has been written when it is used. */
export const EXIT_USAGE = 2;

/** Past this many characters a quoted value is cut: the line must stay one a terminal shows whole. */
const QUOTED_MAX = 80;

/**
 * A value as an error line quotes it: JSON, a URL's credentials hidden (hideCredentials;
 * `schemeless` for a flag that takes a URL), a long string cut with its length, so the rule
 * after it is seen; each of a list's (a flag given twice) the same way.
 */
export function quoteValue(value: unknown, o: { schemeless?: boolean } = {}): string {
  if (Array.isArray(value)) return `[${value.map((v) => quoteValue(v, o)).join(',')}]`;
  if (typeof value !== 'string') return JSON.stringify(value);
  const text = hideCredentials(value, o);
  if (text.length <= QUOTED_MAX) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, QUOTED_MAX))}... (${text.length} characters)`;
}

/**
 * Flags whose value may hold a secret anywhere, not only in a URL's credentials: a connection
 * URL's password (in its query too), a command line (`curl -u user:secret ...`).
 */
const UNQUOTED = new Set(['postgres-url', 'health-exec']);

/** Flags whose value is a URL, typed with its scheme or without: `user:secret@host` is hidden too. */
const URL_FLAGS = new Set(['health-http']);

/** A flag's value as its lines show it: quoted, or not at all when it may hold a password. */
function shownValue(flag: string, value: unknown): string {
  // Error lines reach logs and CI output: a value that may hold a password is never quoted.
  if (UNQUOTED.has(flag) && value !== '') return '(its value is not shown: it may hold a password)';
  return quoteValue(value, { schemeless: URL_FLAGS.has(flag) });
}

/** `--x shown`, or `LEASEHOLD_X shown (for --x)` for a value that came from the variable. */
function named(flag: string, shown: string, origins: Origins): string {
  const origin = origins[flag];
  return origin?.from === 'variable' ? `${origin.variable} ${shown} (for --${flag})` : `--${flag} ${shown}`;
}

/**
 * Bad values of flags: the flags, each value as the line shows it, and the rule. Its message
 * names each flag as if given on the command line; cliMessage tells it by the parse's origins.
 */
export class FlagRefusal extends InvalidConfigError {
  constructor(
    /** What the line leads with: `invalid`, `invalid timings`. */
    readonly subject: string,
    readonly values: readonly { readonly flag: string; readonly shown: string }[],
    rule: string,
  ) {
    super(`${subject} ${values.map((v) => named(v.flag, v.shown, {})).join(' ')}: ${rule}`, { rule });
  }

  /** The line, each value named by where it came from. */
  tell(origins: Origins): string {
    return `${this.subject} ${this.values.map((v) => named(v.flag, v.shown, origins)).join(' ')}: ${this.rule!}`;
  }
}

/**
 * A bad flag value: names the flag, the value and the rule, on one line (`invalid --x "value":
 * rule`; from a variable, `invalid LEASEHOLD_X "value" (for --x): rule`).
 */
export function badFlag(flag: string, value: unknown, rule: string): FlagRefusal {
  return new FlagRefusal('invalid', [{ flag, shown: shownValue(flag, value) }], rule);
}

/** Flags whose values break a rule together, each as written (durations, already parsed: nothing to quote). */
export function badTogether(subject: string, values: readonly (readonly [flag: string, value: string])[], rule: string): FlagRefusal {
  return new FlagRefusal(
    subject,
    values.map(([flag, value]) => ({ flag, shown: value })),
    rule,
  );
}

/** The flag for each setting an error's `field` names (src/ knows no flag). */
const FLAG_OF: Record<string, string> = {
  lease: 'lease',
  // A shard group's name is its --lease.
  group: 'lease',
  identity: 'identity',
  leaseDuration: 'lease-duration',
  renewDeadline: 'renew-deadline',
  retryPeriod: 'retry-period',
  contentionWindow: 'contention-window',
  db: 'db',
  statusDir: 'status-dir',
  postgresTable: 'postgres-table',
  postgresUrl: 'postgres-url',
  kubeconfig: 'kubeconfig',
  healthHttp: 'health-http',
};

/** Library settings a message may advise, and the flag that sets each on the command line. */
const ADVISED_FLAG: Record<string, string> = {
  allowNetworkFilesystem: 'allow-network-filesystem',
};

/** The setting an error is about (`field`, on InvalidConfigError, StoreOpenError and StatusDirError). */
function fieldOf(err: unknown): string | undefined {
  const field = err instanceof Error ? (err as { field?: unknown }).field : undefined;
  return typeof field === 'string' ? field : undefined;
}

/**
 * An error as the CLI tells it: a FlagRefusal by where each value came from; any other led by
 * the flag its setting comes from (`--db: the database file ...`, or `LEASEHOLD_DB (for --db):
 * ...` when its value came from the variable) unless the message names that flag already, and
 * followed by the flag for any setting it advises. Only the message is used, so a
 * --postgres-url value (it may hold a password) is never shown. `origins`: the parse's, or none
 * when the parse itself failed (its refusals name the variable themselves).
 */
export function cliMessage(err: unknown, origins: Origins = {}): string {
  if (err instanceof FlagRefusal) return err.tell(origins);
  const message = describeError(err);
  const field = fieldOf(err);
  const flag = field === undefined ? undefined : FLAG_OF[field];
  // A value from a variable is led by the variable, as badFlag tells it: that is what was set.
  const origin = flag === undefined ? undefined : origins[flag];
  const lead = origin?.from === 'variable' ? `${origin.variable} (for --${flag})` : `--${flag}`;
  const led = flag === undefined || message.includes(`--${flag}`) ? message : `${lead}: ${message}`;
  const advised = Object.keys(ADVISED_FLAG).filter((setting) => message.includes(setting));
  return advised.reduce((text, setting) => `${text} (on the command line: --${ADVISED_FLAG[setting]!})`, led);
}

/** The flag an option's refusal is about, or undefined when it names none. */
export function flagOf(err: unknown): string | undefined {
  return err instanceof InvalidConfigError && err.field !== undefined ? FLAG_OF[err.field] : undefined;
}

/**
 * Runs a rule on a flag's value; a refusal about that flag is told as `invalid --flag "value":
 * rule`. Anything else passes through as it is.
 */
export function checkFlag(flag: string, value: unknown, check: () => void): void {
  try {
    check();
  } catch (err) {
    if (flagOf(err) === flag) throw badFlag(flag, value, (err as InvalidConfigError).rule ?? (err as InvalidConfigError).message);
    throw err;
  }
}

/**
 * The CLI's last word, as written to stderr: one line. It quotes what it was given (a stray
 * word, a value, a path) for a terminal: a control or invisible format character in it is
 * escaped, so that it can neither move the cursor nor reorder or hide the rest of the line.
 */
export function refusalLine(message: string): string {
  return `leasehold: ${escapeForTerminal(message.replace(/\s*\n\s*/g, ' ').trim())}\n`;
}
