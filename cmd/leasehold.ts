#!/usr/bin/env node
/**
 * leasehold: leader election with fencing tokens.
 *   leasehold sidecar   campaign for a lease and report leadership (status files, HTTP, metrics)
 *   leasehold status    show who holds a lease, its token and when it expires
 *   leasehold run -- CMD  run CMD only while leader, with its fencing token in the environment
 *   leasehold operator  inject the sidecar into labelled pods (admission webhook) and keep their RBAC
 * Every flag can also be set as LEASEHOLD_<FLAG> (e.g. LEASEHOLD_LEASE_DURATION=30s).
 */
import { isLeaseholdError } from '../src/errors.js';
import { COMMAND_NAMES, loadCommand } from './commands.js';
import { parseFlags } from './cli-parser.js';
import { EXIT_USAGE, cliMessage, exitWith } from './cli-errors.js';

/** A mistyped command is bad input even with --help: the overall help and exit 0 would hide it. */
function unknownCommand(name: string): never {
  exitWith(`unknown command ${JSON.stringify(name)}: the commands are ${COMMAND_NAMES.join(', ').replace(/, (?=[^,]*$)/, ' and ')}`, EXIT_USAGE);
}

const BAD_INPUT = new Set(['LEASEHOLD_ERR_INVALID_CONFIG', 'LEASEHOLD_ERR_STORE_OPEN', 'LEASEHOLD_ERR_STATUS_DIR', 'LEASEHOLD_ERR_COMMAND_START']);

/** `--help` and `--version`, before a command's own `--`; the help text is loaded only then. */
async function answered(argv: readonly string[]): Promise<boolean> {
  const sep = argv.indexOf('--');
  const own = sep < 0 ? argv : argv.slice(0, sep);
  if (own.includes('--version')) {
    const { ownVersion } = await import('./own-version.js');
    process.stdout.write(`${ownVersion()}\n`);
    return true;
  }
  if (!own.includes('--help') && !own.includes('-h')) return false;
  // The command is the first word past the help flags (`leasehold --help sidecar` too). A flag
  // there means no command was named: the word after it is that flag's value (`--lease x --help`).
  const first = own.find((w) => w !== '--help' && w !== '-h');
  const command = first === undefined || first.startsWith('-') ? undefined : first;
  if (command !== undefined && !(COMMAND_NAMES as string[]).includes(command)) unknownCommand(command);
  const { helpText } = await import('./cli-help.js');
  process.stdout.write(await helpText(command));
  return true;
}

async function main(): Promise<number> {
  let argv = process.argv.slice(2);
  // `leasehold help [COMMAND]`, as git and helm take it; words after COMMAND change nothing
  // (refusing `help` itself as an unknown command would contradict `leasehold help`).
  // --help leads, so a `--` among the words cannot hide it (`help run -- CMD` runs nothing).
  if (argv[0] === 'help') argv = ['--help', ...argv.slice(1)];
  const name = argv[0];
  if (name !== undefined && !name.startsWith('-') && !(COMMAND_NAMES as string[]).includes(name)) unknownCommand(name);
  if (await answered(argv)) return 0;
  if (name === undefined || name.startsWith('-')) exitWith(`a command is required: ${COMMAND_NAMES.join(', ').replace(/, (?=[^,]*$)/, ' or ')}`, EXIT_USAGE);
  const command = await loadCommand(name);
  if (!command) unknownCommand(name);
  const { spec, run } = command;
  return run(parseFlags(spec.flags, argv.slice(1), process.env, { command: spec.name, takesCommand: spec.takesCommand }));
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (isLeaseholdError(err) && BAD_INPUT.has(err.code)) exitWith(cliMessage(err), EXIT_USAGE);
    exitWith(cliMessage(err), 1);
  },
);
