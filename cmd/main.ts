/**
 * The CLI as a function: main(argv, env, io) runs one command and resolves to its exit status.
 * It reads no process state of its own (the bin, cmd/leasehold.ts, hands it the process's argv,
 * environment and streams), never exits, and tells every failure as one line on io.stderr: bad
 * input with exit 2 (nothing written), anything else with 1. Each command is loaded only when it
 * runs (cmd/commands.ts); the help text only for --help.
 */
import { InvalidConfigError, isLeaseholdError } from '../src/errors.js';
import { COMMAND_NAMES, loadCommand } from './commands.js';
import { parseFlags } from './cli-parser.js';
import { EXIT_USAGE, cliMessage, refusalLine } from './cli-errors.js';
import type { CliIo } from './cli-io.js';
import type { Origins } from './flag-table.js';

export type { CliIo } from './cli-io.js';

/** The error codes that are bad input: exit 2. */
const BAD_INPUT = new Set(['LEASEHOLD_ERR_INVALID_CONFIG', 'LEASEHOLD_ERR_STORE_OPEN', 'LEASEHOLD_ERR_STATUS_DIR', 'LEASEHOLD_ERR_COMMAND_START']);

const listed = (joiner: string) => COMMAND_NAMES.join(', ').replace(/, (?=[^,]*$)/, ` ${joiner} `);

/** A mistyped command is bad input even with --help: the overall help and exit 0 would hide it. */
function unknownCommand(name: string): InvalidConfigError {
  return new InvalidConfigError(`unknown command ${JSON.stringify(name)}: the commands are ${listed('and')}`);
}

/** `--help` and `--version`, before a command's own `--`; the help text is loaded only then. */
async function answered(argv: readonly string[], io: CliIo): Promise<boolean> {
  const sep = argv.indexOf('--');
  const own = sep < 0 ? argv : argv.slice(0, sep);
  if (own.includes('--version')) {
    const { ownVersion } = await import('./own-version.js');
    io.stdout(`${ownVersion()}\n`);
    return true;
  }
  if (!own.includes('--help') && !own.includes('-h')) return false;
  // The command is the first word past the help flags (`leasehold --help sidecar` too). A flag
  // there means no command was named: the word after it is that flag's value (`--lease x --help`).
  const first = own.find((w) => w !== '--help' && w !== '-h');
  const command = first === undefined || first.startsWith('-') ? undefined : first;
  if (command !== undefined && !(COMMAND_NAMES as string[]).includes(command)) throw unknownCommand(command);
  const { helpText } = await import('./cli-help.js');
  io.stdout(await helpText(command));
  return true;
}

/**
 * Runs `leasehold` with `argv` (the words after it, as process.argv.slice(2)), the LEASEHOLD_<FLAG>
 * variables of `env`, and `io`; resolves to the exit status.
 */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  // Set once the flags are parsed: a refusal after that names the variable a value came from.
  let origins: Origins = {};
  try {
    // `leasehold help [COMMAND]`, as git and helm take it; words after COMMAND change nothing
    // (refusing `help` itself as an unknown command would contradict `leasehold help`).
    // --help leads, so a `--` among the words cannot hide it (`help run -- CMD` runs nothing).
    const words = argv[0] === 'help' ? ['--help', ...argv.slice(1)] : [...argv];
    const name = words[0];
    if (name !== undefined && !name.startsWith('-') && !(COMMAND_NAMES as string[]).includes(name)) throw unknownCommand(name);
    if (await answered(words, io)) return 0;
    if (name === undefined || name.startsWith('-')) throw new InvalidConfigError(`a command is required: ${listed('or')}`);
    const command = await loadCommand(name);
    if (!command) throw unknownCommand(name);
    const { spec, run } = command;
    const flags = parseFlags(spec.flags, words.slice(1), env, { command: spec.name, takesCommand: spec.takesCommand });
    origins = flags.origins;
    return await run(flags, { env, io });
  } catch (err) {
    io.stderr(refusalLine(cliMessage(err, origins)));
    return isLeaseholdError(err) && BAD_INPUT.has(err.code) ? EXIT_USAGE : 1;
  }
}
