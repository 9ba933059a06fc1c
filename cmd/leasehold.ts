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
 * `leasehold sidecar` with plain flags skips yargs (cmd/sidecar-fast-path.ts: the long-running
 * process keeps no CLI parser); everything else, and any input the fast path is unsure of, goes
 * to the yargs CLI, imported only then.
 */
async function main(): Promise<number> {
  const fast = sidecarFastPath(process.argv.slice(2), process.env);
  if (fast) return runSidecar(fast.args, fast.settings);
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
