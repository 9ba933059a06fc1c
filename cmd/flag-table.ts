/**
 * A command's flags as a plain table: each flag declared once, with its type, default and
 * meaning. The parser (cmd/cli-parser.ts), `--help`, the LEASEHOLD_<FLAG> variables and the
 * generated flag reference in docs/cli.md (scripts/cli-reference.ts) are all read from it; what
 * a value must be is checked by the command's resolve function, which names the flag and the rule.
 */
export interface FlagSpec {
  /** `list`: may be given more than once, each adding a value (the operator's --extra-host). */
  readonly type: 'string' | 'boolean' | 'list';
  /** A boolean without one defaults to false; a string without one is absent (undefined). */
  readonly default?: string | boolean;
  /** No default: the command refuses to run without it (the operator's --sidecar-image). */
  readonly required?: boolean;
  readonly describe: string;
}

export type FlagTable = Readonly<Record<string, FlagSpec>>;

type ValueOf<F extends FlagSpec> = F['type'] extends 'boolean'
  ? boolean
  : F['type'] extends 'list'
    ? string[]
    : F extends { readonly default: string }
      ? string
      : string | undefined;

/** The flags of a table as the parser hands them to the command. */
export type ArgsOf<T extends FlagTable> = { -readonly [K in keyof T]: ValueOf<T[K]> };

/** The variable of a flag: --lease-duration is LEASEHOLD_LEASE_DURATION. */
export function envName(flag: string): string {
  return `LEASEHOLD_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/** A flag's default as help and the reference show it, or undefined for none. */
export function defaultOf(spec: FlagSpec): string | undefined {
  if (spec.type === 'list') return undefined;
  if (spec.default === undefined) return spec.type === 'boolean' ? 'false' : undefined;
  return String(spec.default);
}

/** A command as its help and the flag reference describe it; its flags are its table. */
export interface CommandSpec<T extends FlagTable = FlagTable> {
  readonly name: string;
  /** One line: what the command does. */
  readonly description: string;
  /** How it is called, when more than `leasehold NAME [flags]`. */
  readonly usage?: string;
  readonly flags: T;
  /** It takes a command of its own after `--` (`run`). */
  readonly takesCommand?: boolean;
}

/**
 * Where a flag's value came from: the command line, its LEASEHOLD_<FLAG> variable (named, for
 * a refusal to name what the user set), or the table's default. A flag with neither a value
 * nor a default has no origin.
 */
export type Origin = { readonly from: 'flag' } | { readonly from: 'variable'; readonly variable: string } | { readonly from: 'default' };

/** Each flag's origin, by flag name. */
export type Origins = Readonly<Record<string, Origin>>;

/** Whether the user set `flag`, on the command line or through its variable (not left to its default). */
export function isGiven(origins: Origins, flag: string): boolean {
  const from = origins[flag]?.from;
  return from === 'flag' || from === 'variable';
}

/** Flag values with where each came from, as the parser hands them to a command's resolve function. */
export interface FlagValues<A> {
  readonly values: A;
  readonly origins: Origins;
}
