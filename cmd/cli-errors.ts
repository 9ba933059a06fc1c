/**
 * How the CLI tells an error: bad input as one line naming the flag, the value and the rule
 * (badFlag, checkFlag), a library error led by the flag its setting comes from (cliMessage), and
 * the exit (exitWith, EXIT_USAGE).
 */
import { InvalidConfigError, describeError } from '../src/errors.js';
import { escapeForTerminal } from '../src/util/escape-control.js';

/** Exit code for bad input: a flag, a value, a path. Nothing has been written when it is used. */
export const EXIT_USAGE = 2;

/** Past this many characters a quoted value is cut: the line must stay one a terminal shows whole. */
const QUOTED_MAX = 80;

/**
 * A value as an error line quotes it: JSON, a long string cut with its length, so the rule after
 * it is seen; each of a list's (a flag given twice) the same way.
 */
export function quoteValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(quoteValue).join(',')}]`;
  if (typeof value !== 'string' || value.length <= QUOTED_MAX) return JSON.stringify(value);
  return `${JSON.stringify(value.slice(0, QUOTED_MAX))}... (${value.length} characters)`;
}

/**
 * The flags whose value this process took from a LEASEHOLD_<FLAG> variable, and that variable
 * (set by the parser, cli-parser.ts): a refusal names what the user set, the variable.
 */
const FROM_VARIABLE = new Map<string, string>();

export function noteFromVariable(flag: string, variable: string | null): void {
  if (variable === null) FROM_VARIABLE.delete(flag);
  else FROM_VARIABLE.set(flag, variable);
}

/** A flag and its value as a line names them: `--x value`, or `LEASEHOLD_X value (for --x)` from a variable. */
export function namedValue(flag: string, value: string): string {
  const variable = FROM_VARIABLE.get(flag);
  return variable === undefined ? `--${flag} ${value}` : `${variable} ${value} (for --${flag})`;
}

/** Flags whose value may hold a secret (a connection URL's password). */
const UNQUOTED = new Set(['postgres-url']);

/**
 * A bad flag value: names the flag, the value and the rule, on one line; a value from a
 * variable is told as `invalid LEASEHOLD_X "value" (for --x): rule`.
 */
export function badFlag(flag: string, value: unknown, rule: string): InvalidConfigError {
  const variable = FROM_VARIABLE.get(flag);
  // Error lines reach logs and CI output: a value that may hold a password is never quoted.
  const quoted = UNQUOTED.has(flag) && value !== '' ? '(its value is not shown: it may hold a password)' : quoteValue(value);
  const what = variable === undefined ? `--${flag} ${quoted}` : `${variable} ${quoted} (for --${flag})`;
  return new InvalidConfigError(`invalid ${what}: ${rule}`, { rule });
}

/** The flag for each setting an error's `field` names (src/ knows no flag). */
const FLAG_OF: Record<string, string> = {
  lease: 'lease',
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
 * An error as the CLI tells it: led by the flag its setting comes from (`--db: the database file
 * ...`, or `LEASEHOLD_DB (for --db): ...` when its value came from the variable) unless the
 * message names that flag already, and followed by the flag for any setting it
 * advises. Only the message is used, so a --postgres-url value (it may hold a password) is never shown.
 */
export function cliMessage(err: unknown): string {
  const message = describeError(err);
  const field = fieldOf(err);
  const flag = field === undefined ? undefined : FLAG_OF[field];
  // A value from a variable is led by the variable, as badFlag tells it: that is what was set.
  const variable = flag === undefined ? undefined : FROM_VARIABLE.get(flag);
  const lead = variable === undefined ? `--${flag}` : `${variable} (for --${flag})`;
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
 * The CLI's last word: one line on stderr, then the exit code. The line quotes what it was given
 * (a stray word, a value, a path) for a terminal: a control or invisible format character in it
 * is escaped, so that it can neither move the cursor nor reorder or hide the rest of the line.
 */
export function exitWith(message: string, code: number): never {
  process.stderr.write(`leasehold: ${escapeForTerminal(message.replace(/\s*\n\s*/g, ' ').trim())}\n`);
  process.exit(code);
}
