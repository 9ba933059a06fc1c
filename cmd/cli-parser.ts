/**
 * The one command-line parser: a command's flags from its table (cmd/flag-table.ts), read from
 * the command line and then from LEASEHOLD_<FLAG> variables, then the table's defaults.
 * node:util's parseArgs splits the words (`--flag value`, `--flag=value`, `--no-flag`); the
 * rules are applied here, over its tokens, so that each refusal is one line naming the flag and
 * the rule: an unknown flag, a flag given twice, a missing or empty value, a boolean given a word
 * other than true or false, a stray word. Not parseArgs' `strict`: it refuses a value that starts
 * with a dash (`--health-hold-down -1s`) as "ambiguous" where the flag's own rule should say what
 * is wrong with it, and its messages name no rule.
 */
import { createRequire } from 'node:module';
import type * as Util from 'node:util';
import { InvalidConfigError } from '../src/errors.js';
import { hideCredentials } from '../src/util/hide-credentials.js';
import { envName, type ArgsOf, type FlagTable, type FlagValues, type Origin } from './flag-table.js';
import { TERM_VARIABLES } from './run-environment.js';
import { badFlag, quoteValue } from './cli-errors.js';

/**
 * node:util by require, as src/util/node-http.ts loads node:http: an ESM import builds the
 * namespace from every export, running each lazy getter, and a sidecar would keep what they load
 * for as long as it runs (half a MiB on the image's Node, docs/benchmarks.md).
 */
const { parseArgs } = createRequire(import.meta.url)('node:util') as typeof Util;

export interface ParseContext {
  /** The command word, for messages (`leasehold sidecar --help`). */
  readonly command: string;
  /** The command takes a command of its own after `--` (`run`), handed on as `--`, byte for byte. */
  readonly takesCommand?: boolean;
  /** Where the flags are listed, for an unknown one (default: the command's --help). */
  readonly listed?: string;
}

const listedIn = (c: ParseContext) => c.listed ?? `leasehold ${c.command} --help lists its flags`;

export type Parsed<T extends FlagTable> = ArgsOf<T> & { '--'?: string[] };

/**
 * A command's flags as parsed: each value, and where each came from (the command line, its
 * variable or the default), so that a refusal names what the user set and a rule can tell a
 * flag given from one left to its default. Nothing about a parse is kept anywhere else.
 */
export type ParsedFlags<T extends FlagTable> = FlagValues<Parsed<T>>;

/**
 * The one rule for empty values, on the command line and in variables alike: an empty value is
 * bad input, never a setting. Read as a setting, an empty --status-dir puts the status files in
 * the working directory and an empty --listen would have to mean something of its own, and an
 * empty variable (a template with nothing to put there) does so unseen. Left out, a flag has
 * its default. `variable`: the message is about LEASEHOLD_<FLAG>, not the flag.
 */
export function emptyValueRule(command: string, flag: string, variable = false, required = false): string {
  // A required flag has no default to fall back on: leaving it out is refused too.
  if (required) return 'must be non-empty (it is required)';
  const fallback = variable ? 'unset the variable for the default' : 'leave the flag out for its default';
  // Only the sidecar's and run's listener has an "off".
  const off = flag === 'listen' && (command === 'sidecar' || command === 'run') ? ', or give off for no listener' : '';
  return `must be non-empty (${fallback}${off})`;
}

/** What to do about a flag given without its value (the end of the line, or another flag next). */
function missingValueRule(command: string, flag: string, required = false): string {
  if (required) return 'give one after it (it is required)';
  const off = flag === 'listen' && (command === 'sidecar' || command === 'run') ? ' (off for no listener)' : '';
  return `give one after it${off}, or leave the flag out for its default`;
}

/** `--leaseDuration`, the camelCase spelling the CLI has always taken, is `--lease-duration`. */
const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const camel = (flag: string) => flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

const usage = (message: string) => new InvalidConfigError(message);

/** The table's flag a word names, and whether it is negated (`--no-once`); undefined for no flag of the table. */
function flagOf(table: FlagTable, raw: string): { flag: string; negated: boolean } | undefined {
  if (!raw.startsWith('--')) return undefined;
  const flag = kebab(raw.slice(2));
  if (Object.hasOwn(table, flag)) return { flag, negated: false };
  const positive = flag.startsWith('no-') ? flag.slice(3) : undefined;
  if (positive !== undefined && table[positive]?.type === 'boolean') return { flag: positive, negated: true };
  return undefined;
}

function strayWords(given: string[], c: ParseContext): InvalidConfigError {
  // A stray word may be a connection URL meant for a flag: its credentials are never shown.
  const words = given.map((w) => hideCredentials(w));
  if (c.takesCommand) {
    return usage(
      `unexpected ${words.length > 1 ? 'arguments' : 'argument'} ${words.join(' ')}: leasehold ${c.command} takes its command after --, as in leasehold ${c.command} [flags] -- ${words.join(' ')}`,
    );
  }
  return usage(`unexpected argument ${JSON.stringify(words[0])}: ${c.listed ? c.command : `leasehold ${c.command}`} takes flags only (${listedIn(c)})`);
}

/** A boolean's value as written: `--x` true, `--no-x` false, `--x=true|false`, and `--no-x=true|false` negated. */
function booleanValue(raw: string, negated: boolean, inline: string | undefined): boolean {
  if (inline === undefined) return !negated;
  if (inline !== 'true' && inline !== 'false') throw usage(`invalid ${raw} ${quoteValue(inline)}: must be true or false`);
  return (inline === 'true') !== negated;
}

type Token = ReturnType<typeof parseArgs>['tokens'] extends (infer T)[] | undefined ? T : never;

/**
 * Whether the word at `i` is a boolean's value written as a word of its own (`--release-on-exit
 * false`), as the CLI has always taken it: `true` or `false` right after a boolean flag without `=`.
 */
function takenByBoolean(tokens: readonly Token[], i: number, table: FlagTable): boolean {
  const word = tokens[i];
  const before = tokens[i - 1];
  if (word?.kind !== 'positional' || (word.value !== 'true' && word.value !== 'false')) return false;
  if (before?.kind !== 'option' || before.inlineValue || before.index + 1 !== word.index) return false;
  const named = flagOf(table, before.rawName);
  return named !== undefined && table[named.flag]!.type === 'boolean';
}

/**
 * The command-line half: each flag given, with its value (a list's values in order), and the
 * words as written for a flag given twice. `own`: the words before `--`.
 */
function fromCommandLine(table: FlagTable, own: string[], c: ParseContext): Map<string, string | boolean | string[]> {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {};
  for (const [flag, spec] of Object.entries(table)) {
    const option = { type: spec.type === 'boolean' ? ('boolean' as const) : ('string' as const), multiple: spec.type === 'list' };
    options[flag] = option;
    options[camel(flag)] = option;
  }
  const { tokens } = parseArgs({ args: own, options, strict: false, allowPositionals: true, tokens: true });
  const given = new Map<string, string | boolean | string[]>();
  const forms = new Map<string, string[]>();
  const strays: string[] = [];
  for (const [i, token] of tokens.entries()) {
    if (token.kind === 'positional' && !takenByBoolean(tokens, i, table)) strays.push(token.value);
    if (token.kind !== 'option') continue;
    const named = flagOf(table, token.rawName);
    if (named === undefined) throw usage(`unknown flag ${token.rawName} (${listedIn(c)})`);
    const { flag, negated } = named;
    const spec = table[flag]!;
    const next = tokens[i + 1];
    const inline = token.inlineValue ? token.value : takenByBoolean(tokens, i + 1, table) && next?.kind === 'positional' ? next.value : undefined;
    if (spec.type === 'boolean') {
      const form = inline === undefined ? token.rawName : `${token.rawName}${token.inlineValue ? '=' : ' '}${inline}`;
      const value = booleanValue(token.rawName, negated, inline);
      const seen = [...(forms.get(flag) ?? []), form];
      if (seen.length > 1) throw badFlag(flag, seen, 'given more than once: give each flag at most once');
      forms.set(flag, seen);
      given.set(flag, value);
      continue;
    }
    // A separate word that is another flag is not this one's value: the value is missing,
    // which is said as such (an "empty" value the user never typed would puzzle).
    const missing = token.value === undefined || (!token.inlineValue && token.value.startsWith('--'));
    if (missing) throw usage(`${token.rawName} needs a value: ${missingValueRule(c.command, flag, spec.required)}`);
    const value = token.value;
    if (value === '') throw badFlag(flag, '', emptyValueRule(c.command, flag, false, spec.required));
    const values = [...((given.get(flag) as string[] | undefined) ?? []), value];
    if (spec.type === 'string' && values.length > 1) throw badFlag(flag, values, 'given more than once: give each flag at most once');
    given.set(flag, values);
  }
  if (strays.length > 0) throw strayWords(strays, c);
  for (const [flag, value] of given) if (table[flag]!.type === 'string') given.set(flag, (value as string[])[0]!);
  return given;
}

/**
 * The variables half: LEASEHOLD_<FLAG> for each flag the command line did not give. Each
 * command reads only its own flags' variables, so one meant for another command (LEASEHOLD_ONCE
 * for `run`) never breaks this one. Inside a `run` command (LEASEHOLD_FENCING_TOKEN set) the
 * parent's term variables are not read as flags, except by `status`, which writes nothing
 * (cmd/run-environment.ts).
 */
function fromEnvironment(
  table: FlagTable,
  env: NodeJS.ProcessEnv,
  given: ReadonlyMap<string, unknown>,
  command: string,
): Map<string, string | boolean | string[]> {
  const insideRun = env.LEASEHOLD_FENCING_TOKEN !== undefined && command !== 'status';
  const read = new Map<string, string | boolean | string[]>();
  for (const [flag, spec] of Object.entries(table)) {
    const name = envName(flag);
    const value = env[name];
    if (value === undefined || given.has(flag)) continue;
    if (insideRun && (TERM_VARIABLES as readonly string[]).includes(name)) continue;
    if (value === '') throw usage(`invalid ${name} "" (for --${flag}): ${emptyValueRule(command, flag, true, spec.required)}`);
    if (spec.type === 'boolean' && value !== 'true' && value !== 'false') {
      throw usage(`invalid ${name} ${quoteValue(value)} (for --${flag}): must be true or false`);
    }
    read.set(flag, spec.type === 'boolean' ? value === 'true' : spec.type === 'list' ? [value] : value);
  }
  return read;
}

/**
 * A command's flags from `argv` (the words after the command word) and `env`: the command line
 * wins over the variable, the variable over the table's default. Each value comes with its origin.
 */
export function parseFlags<T extends FlagTable>(table: T, argv: readonly string[], env: NodeJS.ProcessEnv, c: ParseContext): ParsedFlags<T> {
  const sep = argv.indexOf('--');
  const own = sep < 0 ? [...argv] : argv.slice(0, sep);
  const after = sep < 0 ? [] : argv.slice(sep + 1);
  if (!c.takesCommand && after.length > 0) throw strayWords(after, c);
  const given = fromCommandLine(table, own, c);
  const fromEnv = fromEnvironment(table, env, given, c.command);
  const values: Record<string, unknown> = {};
  const origins: Record<string, Origin> = {};
  for (const [flag, spec] of Object.entries(table)) {
    const fallback = spec.default ?? (spec.type === 'boolean' ? false : spec.type === 'list' ? [] : undefined);
    const [value, origin]: [unknown, Origin | undefined] = given.has(flag)
      ? [given.get(flag), { from: 'flag' }]
      : fromEnv.has(flag)
        ? [fromEnv.get(flag), { from: 'variable', variable: envName(flag) }]
        : [fallback, fallback === undefined ? undefined : { from: 'default' }];
    if (value === undefined) continue;
    values[flag] = value;
    origins[flag] = origin!;
  }
  if (c.takesCommand) values['--'] = after;
  return { values: values as Parsed<T>, origins };
}
