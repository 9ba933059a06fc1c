/**
 * `leasehold sidecar` without yargs. The sidecar runs for as long as its pod, and a process that
 * has loaded yargs keeps what it cost after parsing is done (docs/benchmarks.md, "Where the
 * memory goes"). So cmd/leasehold.ts tries this first, and loads yargs only when it declines.
 *
 * The parity rule: it reads the same option table (SIDECAR_COMMAND_OPTIONS), the same LEASEHOLD_<FLAG>
 * variables (applyEnvFlags) and runs the same checks (checkBooleans, rejectRepeatedBooleans,
 * resolveSidecarCommand) as the yargs path, and accepts only input it is sure of: known flags as
 * `--flag value`, `--flag=value`, `--flag`, `--no-flag`, `--flag=true|false` for a boolean, each
 * at most once, every value valid. Anything else (help, version, an unknown, repeated or
 * camelCase flag, a stray word, a value yargs would read differently, an invalid value) makes it
 * decline, and the yargs path answers as it always has: its messages, its exit codes.
 * plainFlags is that parser for any command's table; cmd/run-fast-path.ts uses it for `run`.
 * cmd/sidecar-fast-path.test.ts holds the two paths to the same settings.
 */
import { applyEnvFlags, checkBooleans } from './env-variables.js';
import { SIDECAR_COMMAND_OPTIONS, resolveSidecarCommand, type SidecarArgs } from './sidecar-settings.js';
import { rejectRepeatedBooleans } from './usage-error.js';

export interface FastSidecar {
  /** The flags as yargs would hand them to the command (the table's keys). */
  args: SidecarArgs;
  /** resolveSidecarCommand(args), already checked. */
  settings: ReturnType<typeof resolveSidecarCommand>;
}

type Table = Readonly<Record<string, { readonly type: 'string' | 'boolean'; readonly default?: string | boolean }>>;

/**
 * A value yargs reads as written: not one in quotes (yargs strips matching quotes), not one
 * that starts with a dash (after `--flag ` yargs may read it as a flag); and not empty, which
 * is bad input (emptyValueRule), told by the yargs path.
 */
function plain(value: string): boolean {
  return value !== '' && !/^["'-]/.test(value);
}

/**
 * `command`'s flags from argv (after the node binary and script, the command word first) and
 * env, as yargs would hand them to it, with the table's defaults; or undefined when the input is
 * anything but plain. `withCommand`: the command takes a command of its own after `--` (`run`),
 * handed on as `--`, as yargs' populate-- does.
 */
export function plainFlags(command: string, table: Table, argv: readonly string[], env: NodeJS.ProcessEnv, withCommand = false) {
  const flags = Object.keys(table);
  const booleans = flags.filter((f) => table[f]!.type === 'boolean');
  const sep = argv.indexOf('--');
  if (argv[0] !== command || (withCommand ? sep < 0 || sep === argv.length - 1 : sep >= 0)) return undefined;
  let all: string[];
  try {
    checkBooleans([...argv], env, booleans);
    rejectRepeatedBooleans(argv, booleans);
    all = applyEnvFlags([...argv], env, { [command]: flags });
  } catch {
    return undefined;
  }
  const end = all.indexOf('--');
  const words = all.slice(1, end < 0 ? all.length : end);
  const given = new Map<string, string | boolean>();
  for (let i = 0; i < words.length; i++) {
    const m = /^--(no-)?([a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(words[i]!);
    if (!m) return undefined;
    const [, no, flag, inline] = m as unknown as [string, string | undefined, string, string | undefined];
    const spec = Object.hasOwn(table, flag) ? table[flag] : undefined;
    if (!spec || given.has(flag)) return undefined;
    let value: string | boolean;
    if (spec.type === 'boolean') {
      if (inline === undefined) value = !no;
      else if (!no && (inline === 'true' || inline === 'false')) value = inline === 'true';
      else return undefined;
    } else {
      if (no) return undefined;
      const text = inline ?? words[++i];
      if (text === undefined || !plain(text)) return undefined;
      value = text;
    }
    given.set(flag, value);
  }
  const args: Record<string, string | boolean | string[]> = {};
  for (const flag of flags) {
    const value = given.get(flag) ?? table[flag]!.default;
    if (value !== undefined) args[flag] = value;
  }
  if (withCommand) args['--'] = all.slice(end + 1);
  return args;
}

/** The sidecar's settings from argv (after the node binary and script) and env, or undefined: ask yargs. */
export function sidecarFastPath(argv: readonly string[], env: NodeJS.ProcessEnv): FastSidecar | undefined {
  const args = plainFlags('sidecar', SIDECAR_COMMAND_OPTIONS, argv, env) as SidecarArgs | undefined;
  if (!args) return undefined;
  try {
    return { args, settings: resolveSidecarCommand(args) };
  } catch {
    return undefined;
  }
}
