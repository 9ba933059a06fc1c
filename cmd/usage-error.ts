import { InvalidConfigError } from '../src/errors.js';

/** Exit code for bad input: a flag, a value, a path. Nothing has been written when it is used. */
export const EXIT_USAGE = 2;

/** A bad flag value: names the flag, the value and the rule, on one line. */
export function badFlag(flag: string, value: unknown, rule: string): InvalidConfigError {
  return new InvalidConfigError(`invalid --${flag} ${JSON.stringify(value)}: ${rule}`);
}

/** A flag given twice arrives as an array; refuse it by name rather than fail later on its type. */
export function rejectRepeated<T extends Record<string, unknown>>(args: T, flags: readonly string[]): T {
  for (const flag of flags) {
    const value = args[flag];
    if (Array.isArray(value)) throw badFlag(flag, value.map(String), 'given more than once: give each flag at most once');
  }
  return args;
}
