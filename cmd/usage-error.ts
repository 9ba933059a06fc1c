import { InvalidConfigError } from '../src/errors.js';

/** Exit code for bad input: a flag, a value, a path. Nothing has been written when it is used. */
export const EXIT_USAGE = 2;

/** A bad flag value: names the flag, the value and the rule, on one line. */
export function badFlag(flag: string, value: unknown, rule: string): InvalidConfigError {
  return new InvalidConfigError(`invalid --${flag} ${JSON.stringify(value)}: ${rule}`, { rule });
}

/** The flag for each option an InvalidConfigError's `field` names (src/ knows no flag). */
const FLAG_OF: Record<string, string> = {
  lease: 'lease',
  identity: 'identity',
  leaseDuration: 'lease-duration',
  renewDeadline: 'renew-deadline',
  retryPeriod: 'retry-period',
  contentionWindow: 'contention-window',
};

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

/** A flag given twice arrives as an array; refuse it by name rather than fail later on its type. */
export function rejectRepeated<T extends Record<string, unknown>>(args: T, flags: readonly string[]): T {
  for (const flag of flags) {
    const value = args[flag];
    if (Array.isArray(value)) throw badFlag(flag, value.map(String), 'given more than once: give each flag at most once');
  }
  return args;
}

/**
 * yargs reads a repeated boolean (`--once --once`, `--once --no-once`) as its last form, not as
 * an array, so rejectRepeated never sees it: counted here in argv before `--`, in every form
 * yargs takes (`--x`, `--no-x`, `--x=true`, `--no-x=false`, and camelCase `--releaseOnExit`).
 */
export function rejectRepeatedBooleans(argv: readonly string[], booleans: readonly string[]): void {
  const sep = argv.indexOf('--');
  const seen = new Map<string, string[]>();
  for (const arg of sep >= 0 ? argv.slice(0, sep) : argv) {
    const m = /^--(?:no-)?([^=]+)(?:=.*)?$/s.exec(arg);
    if (!m) continue;
    const flag = m[1]!.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    if (!booleans.includes(flag)) continue;
    const forms = [...(seen.get(flag) ?? []), arg];
    if (forms.length > 1) throw badFlag(flag, forms, 'given more than once: give each flag at most once');
    seen.set(flag, forms);
  }
}
