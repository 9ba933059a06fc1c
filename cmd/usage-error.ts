import { InvalidConfigError } from '../src/errors.js';

/** Exit code for bad input: a flag, a value, a path. Nothing has been written when it is used. */
export const EXIT_USAGE = 2;

/** A bad flag value: names the flag, the value and the rule, on one line. */
export function badFlag(flag: string, value: unknown, rule: string): InvalidConfigError {
  return new InvalidConfigError(`invalid --${flag} ${JSON.stringify(value)}: ${rule}`);
}
