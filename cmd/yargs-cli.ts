/**
 * The CLI as yargs parses it. cmd/leasehold.ts loads this module only when the fast paths
 * (cmd/sidecar-fast-path.ts, cmd/run-fast-path.ts) decline, so a sidecar or a run started with
 * plain flags never loads yargs.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { runSidecar } from './sidecar-command.js';
import { sidecarFlags } from './sidecar-settings.js';
import { runStatus, statusFlags } from './status-command.js';
import { RUN_DESCRIPTION, commandAfterSeparator, runRun, runFlags } from './run-command.js';
import { EXIT_USAGE, exitWith, rejectEmpty, rejectRepeated, rejectRepeatedBooleans } from './usage-error.js';
import { applyEnvFlags, booleanFlagsOf, checkBooleans, flagsOf } from './env-flags.js';
import { ownVersion } from './own-version.js';
import { OPERATOR_DESCRIPTION, operatorFlags, runOperator } from './operator-command.js';

/** Each command's flags, from its builder: the env variables it reads and the flags it checks. */
const COMMAND_FLAGS = { sidecar: flagsOf(sidecarFlags), status: flagsOf(statusFlags), run: flagsOf(runFlags), operator: flagsOf(operatorFlags) };
const BOOLEAN_FLAGS: Record<string, string[]> = {
  sidecar: booleanFlagsOf(sidecarFlags),
  status: booleanFlagsOf(statusFlags),
  run: booleanFlagsOf(runFlags),
  operator: booleanFlagsOf(operatorFlags),
};

const EPILOGUE = `Every flag can also be set as LEASEHOLD_<FLAG> (--lease-duration as LEASEHOLD_LEASE_DURATION); the command line wins, and each command reads only its own flags' variables. Boolean flags and variables take true or false; an empty value is bad input (leave the flag out, or unset its variable, for its default). Exit status: 0 done (status: the lease exists; run --skip-if-ran-within: skipped); 1 a failure (status: no such lease); 2 bad input, one line, nothing written; 3 status: the store did not answer in time or refused the connection; run: the command's status, 75 if leadership was lost first (--once), 124 not elected within --try, 127 the command cannot start; 128 + n on a second signal during shutdown.`;
const OPERATOR_EPILOGUE = `Every flag can also be set as LEASEHOLD_<FLAG> (--lease-duration as LEASEHOLD_LEASE_DURATION); the command line wins; an empty value is bad input. Exit status: 0 stopped by SIGTERM or SIGINT; 1 a failure (the API server or the Secret unusable); 2 bad input, one line, nothing written.`;

/**
 * A command's flags as yargs parsed them from `argv`, once each and none empty. `once`: the flags that may be
 * given only once (all but the operator's lists).
 */
function checked<T extends Record<string, unknown>>(
  a: T,
  argv: readonly string[],
  command: keyof typeof COMMAND_FLAGS,
  once: readonly string[] = COMMAND_FLAGS[command],
): T {
  return rejectEmpty(rejectRepeated(a, once), argv, COMMAND_FLAGS[command], command);
}

/** yargs names stray words "Unknown arguments"; for `run` they are most likely a command missing its `--`. */
function usageMessage(msg: string, argv: string[]): string {
  const m = /^Unknown arguments?: (.*)$/.exec(msg);
  if (argv[0] === 'run' && m && !argv.includes('--')) {
    return `${msg}: leasehold run takes its command after --, as in leasehold run [flags] -- ${m[1]!.split(', ').join(' ')}`;
  }
  return msg;
}

/**
 * The whole CLI, parsed by yargs: every command, --help, --version and every usage message.
 * `commands`: the sidecar and run commands (a test passes its own, to see what yargs hands them).
 */
export async function runYargsCli(argv = hideBin(process.argv), env = process.env, commands = { sidecar: runSidecar, run: runRun }): Promise<number> {
  const { sidecar, run: runCommand } = commands;
  let result = 0;
  const run = (fn: () => Promise<number>) => async () => {
    result = await fn();
  };
  checkBooleans(argv, env, BOOLEAN_FLAGS[argv[0] ?? ''] ?? []);
  rejectRepeatedBooleans(argv, BOOLEAN_FLAGS[argv[0] ?? ''] ?? []);
  await yargs(applyEnvFlags(argv, env, COMMAND_FLAGS))
    .scriptName('leasehold')
    .parserConfiguration({ 'populate--': true })
    .command(
      'sidecar',
      'Campaign for a lease; publish leadership to files, HTTP and metrics',
      (y) => sidecarFlags(y).epilogue(EPILOGUE),
      (a) => run(() => sidecar(checked(a, argv, 'sidecar')))(),
    )
    .command(
      'status',
      'Show who holds a lease, its fencing token and when it expires',
      (y) => statusFlags(y).epilogue(EPILOGUE),
      (a) => run(() => runStatus(checked(a, argv, 'status')))(),
    )
    .command(
      'run',
      RUN_DESCRIPTION,
      (y) => runFlags(y).epilogue(EPILOGUE),
      // populate-- keeps CMD out of the flags (and of .strict()); CMD itself is taken from argv.
      (a) => run(() => runCommand({ ...checked(a, argv, 'run'), '--': commandAfterSeparator(argv) }, COMMAND_FLAGS.run))(),
    )
    .command(
      'operator',
      OPERATOR_DESCRIPTION,
      (y) => operatorFlags(y).epilogue(OPERATOR_EPILOGUE),
      (a) =>
        run(() =>
          runOperator(
            checked(
              a,
              argv,
              'operator',
              COMMAND_FLAGS.operator.filter((f) => f !== 'extra-host' && f !== 'exclude-namespace'),
            ),
          ),
        )(),
    )
    .demandCommand(1, 'a command is required: sidecar, status, run or operator')
    .strict()
    .help()
    .version(ownVersion())
    .epilogue(EPILOGUE)
    .wrap(Math.min(110, process.stdout.columns || 110))
    .fail((msg, err) => {
      if (err) throw err;
      exitWith(usageMessage(msg, argv), EXIT_USAGE);
    })
    .parseAsync();
  return result;
}
