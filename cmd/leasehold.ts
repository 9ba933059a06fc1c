#!/usr/bin/env node
/**
 * leasehold: leader election with fencing tokens.
 *   leasehold sidecar   campaign for a lease and report leadership (status files, HTTP, metrics)
 *   leasehold status    show who holds a lease, its token and when it expires
 *   leasehold run -- CMD  run CMD only while leader, with its fencing token in the environment
 * Every flag can also be set as LEASEHOLD_<FLAG> (e.g. LEASEHOLD_LEASE_DURATION=30s).
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { describeError, isLeaseholdError } from '../src/errors.js';
import { runSidecar, sidecarFlags } from './sidecar-command.js';
import { runStatus, statusFlags } from './status-command.js';
import { runRun, runFlags } from './run-command.js';
import { EXIT_USAGE, rejectRepeated } from './usage-error.js';
import { applyEnvFlags, flagsOf } from './env-flags.js';

const BAD_INPUT = new Set(['LEASEHOLD_ERR_INVALID_CONFIG', 'LEASEHOLD_ERR_STORE_OPEN', 'LEASEHOLD_ERR_STATUS_DIR', 'LEASEHOLD_ERR_COMMAND_START']);

function fail(message: string, code: number): never {
  process.stderr.write(`leasehold: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`);
  process.exit(code);
}

/** Each command's flags, from its builder: the env variables it reads and the flags it checks. */
const COMMAND_FLAGS = { sidecar: flagsOf(sidecarFlags), status: flagsOf(statusFlags), run: flagsOf(runFlags) };

async function main(): Promise<void> {
  let result = 0;
  const run = (fn: () => Promise<number>) => async () => {
    result = await fn();
  };
  await yargs(applyEnvFlags(hideBin(process.argv), process.env, COMMAND_FLAGS))
    .scriptName('leasehold')
    .parserConfiguration({ 'populate--': true })
    .command('sidecar', 'Campaign for a lease; publish leadership to files, HTTP and metrics', sidecarFlags, (a) =>
      run(() => runSidecar(rejectRepeated(a, COMMAND_FLAGS.sidecar)))(),
    )
    .command('status', 'Show who holds a lease, its fencing token and when it expires', statusFlags, (a) =>
      run(() => runStatus(rejectRepeated(a, COMMAND_FLAGS.status)))(),
    )
    .command('run', 'Run a command only while leader: leasehold run [flags] -- CMD [ARGS...]', runFlags, (a) =>
      run(() => runRun(rejectRepeated(a, COMMAND_FLAGS.run), COMMAND_FLAGS.run))(),
    )
    .demandCommand(1, 'a command is required: sidecar, status or run')
    .strict()
    .help()
    .version()
    .wrap(Math.min(110, process.stdout.columns || 110))
    .fail((msg, err) => {
      if (err) throw err;
      fail(msg, EXIT_USAGE);
    })
    .parseAsync();
  process.exitCode = result;
}

main().catch((err: unknown) => {
  if (isLeaseholdError(err) && BAD_INPUT.has(err.code)) fail(describeError(err), EXIT_USAGE);
  fail(describeError(err), 1);
});
