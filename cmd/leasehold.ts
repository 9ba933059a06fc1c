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
import { runSidecar } from './sidecar-command.js';
import { sidecarFastPath } from './sidecar-fast-path.js';
import { EXIT_USAGE, cliMessage, exitWith } from './usage-error.js';

const BAD_INPUT = new Set(['LEASEHOLD_ERR_INVALID_CONFIG', 'LEASEHOLD_ERR_STORE_OPEN', 'LEASEHOLD_ERR_STATUS_DIR', 'LEASEHOLD_ERR_COMMAND_START']);

/**
 * `leasehold sidecar` and `leasehold run` with plain flags skip yargs (cmd/sidecar-fast-path.ts,
 * cmd/run-fast-path.ts: the long-running process keeps no CLI parser); everything else, and any
 * input the fast paths are unsure of, goes to the yargs CLI, imported only then.
 */
async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const fast = sidecarFastPath(argv, process.env);
  if (fast) return runSidecar(fast.args, fast.settings);
  if (argv[0] === 'run') {
    const { RUN_FLAGS, runFastPath } = await import('./run-fast-path.js');
    const { runRun } = await import('./run-command.js');
    const plain = runFastPath(argv, process.env);
    if (plain) return runRun(plain.args, RUN_FLAGS, plain.settings);
  }
  const { runYargsCli } = await import('./yargs-cli.js');
  return runYargsCli();
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
