#!/usr/bin/env node
/**
 * leasehold: leader election with fencing tokens.
 *   leasehold sidecar   campaign for a lease and report leadership (status files, HTTP, metrics)
 *   leasehold status    show who holds a lease, its token and when it expires
 *   leasehold run -- CMD  run CMD only while leader, with its fencing token in the environment
 *   leasehold operator  inject the sidecar into labelled pods (admission webhook) and keep their RBAC
 * Every flag can also be set as LEASEHOLD_<FLAG> (e.g. LEASEHOLD_LEASE_DURATION=30s).
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { isLeaseholdError } from '../src/errors.js';
import { runSidecar } from './sidecar-command.js';
import { sidecarFlags } from './sidecar-settings.js';
import { runStatus, statusFlags } from './status-command.js';
import { RUN_DESCRIPTION, runRun, runFlags } from './run-command.js';
import { EXIT_USAGE, cliMessage, rejectRepeated, rejectRepeatedBooleans } from './usage-error.js';
import { applyEnvFlags, booleanFlagsOf, checkBooleans, flagsOf } from './env-flags.js';
import { ownVersion } from './own-version.js';
import { OPERATOR_DESCRIPTION, operatorFlags, runOperator } from './operator-command.js';

const BAD_INPUT = new Set(['LEASEHOLD_ERR_INVALID_CONFIG', 'LEASEHOLD_ERR_STORE_OPEN', 'LEASEHOLD_ERR_STATUS_DIR', 'LEASEHOLD_ERR_COMMAND_START']);

function fail(message: string, code: number): never {
  process.stderr.write(`leasehold: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`);
  process.exit(code);
}

/** Each command's flags, from its builder: the env variables it reads and the flags it checks. */
const COMMAND_FLAGS = { sidecar: flagsOf(sidecarFlags), status: flagsOf(statusFlags), run: flagsOf(runFlags), operator: flagsOf(operatorFlags) };
const BOOLEAN_FLAGS: Record<string, string[]> = {
  sidecar: booleanFlagsOf(sidecarFlags),
  status: booleanFlagsOf(statusFlags),
  run: booleanFlagsOf(runFlags),
  operator: booleanFlagsOf(operatorFlags),
};

const EPILOGUE = `Every flag can also be set as LEASEHOLD_<FLAG> (--lease-duration as LEASEHOLD_LEASE_DURATION); the command line wins, and each command reads only its own flags' variables. Boolean flags and variables take true or false. Exit status: 0 done (status: the lease exists; run --skip-if-ran-within: skipped); 1 a failure (status: no such lease); 2 bad input, one line, nothing written; 3 status: the store did not answer in time or refused the connection; run: the command's status, 75 if leadership was lost first (--once), 124 not elected within --try, 127 the command cannot start; 128 + n on a second signal during shutdown.`;
const OPERATOR_EPILOGUE = `Every flag can also be set as LEASEHOLD_<FLAG> (--lease-duration as LEASEHOLD_LEASE_DURATION); the command line wins. Exit status: 0 stopped by SIGTERM or SIGINT; 1 a failure (the API server or the Secret unusable); 2 bad input, one line, nothing written.`;

/** yargs names stray words "Unknown arguments"; for `run` they are most likely a command missing its `--`. */
function usageMessage(msg: string, argv: string[]): string {
  const m = /^Unknown arguments?: (.*)$/.exec(msg);
  if (argv[0] === 'run' && m && !argv.includes('--')) {
    return `${msg}: leasehold run takes its command after --, as in leasehold run [flags] -- ${m[1]!.split(', ').join(' ')}`;
  }
  return msg;
}

async function main(): Promise<void> {
  let result = 0;
  const run = (fn: () => Promise<number>) => async () => {
    result = await fn();
  };
  const argv = hideBin(process.argv);
  checkBooleans(argv, process.env, BOOLEAN_FLAGS[argv[0] ?? ''] ?? []);
  rejectRepeatedBooleans(argv, BOOLEAN_FLAGS[argv[0] ?? ''] ?? []);
  await yargs(applyEnvFlags(argv, process.env, COMMAND_FLAGS))
    .scriptName('leasehold')
    .parserConfiguration({ 'populate--': true })
    .command(
      'sidecar',
      'Campaign for a lease; publish leadership to files, HTTP and metrics',
      (y) => sidecarFlags(y).epilogue(EPILOGUE),
      (a) => run(() => runSidecar(rejectRepeated(a, COMMAND_FLAGS.sidecar)))(),
    )
    .command(
      'status',
      'Show who holds a lease, its fencing token and when it expires',
      (y) => statusFlags(y).epilogue(EPILOGUE),
      (a) => run(() => runStatus(rejectRepeated(a, COMMAND_FLAGS.status)))(),
    )
    .command(
      'run',
      RUN_DESCRIPTION,
      (y) => runFlags(y).epilogue(EPILOGUE),
      (a) => run(() => runRun(rejectRepeated(a, COMMAND_FLAGS.run), COMMAND_FLAGS.run))(),
    )
    .command(
      'operator',
      OPERATOR_DESCRIPTION,
      (y) => operatorFlags(y).epilogue(OPERATOR_EPILOGUE),
      (a) =>
        run(() =>
          runOperator(
            rejectRepeated(
              a,
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
      fail(usageMessage(msg, argv), EXIT_USAGE);
    })
    .parseAsync();
  process.exitCode = result;
}

main().catch((err: unknown) => {
  if (isLeaseholdError(err) && BAD_INPUT.has(err.code)) fail(cliMessage(err), EXIT_USAGE);
  fail(cliMessage(err), 1);
});
