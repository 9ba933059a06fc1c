import { createLogger } from '../src/log.js';
import { formatDuration } from '../src/config/duration.js';
import { clockMarginMs, storeTimeouts } from '../src/config/election-options.js';
import { duration } from './election-flags.js';
import { resolveExecutable } from '../src/util/resolve-executable.js';
import { EXIT_NOT_ELECTED, LeaderRunner } from '../src/run/leader-runner.js';
import { SIDECAR_OPTIONS, checkListenAddress, openStoreAndLabeler, resolveSidecar } from './sidecar-settings.js';
import type { ArgsOf, CommandSpec, FlagTable, FlagValues } from './flag-table.js';
import type { CommandContext } from './cli-io.js';
import { badFlag } from './cli-errors.js';
import { onShutdownSignal } from './signals.js';
import { CommandStartError } from '../src/errors.js';
import { childEnvironment } from './run-environment.js';
import { RUN_SHARDS_RULE } from './shard-flags.js';

export const RUN_DESCRIPTION =
  'Run a command only while leader: wait to be elected, start CMD with LEASEHOLD_FENCING_TOKEN, LEASEHOLD_LEASE and LEASEHOLD_IDENTITY set (and LEASEHOLD_STATUS_DIR with --status-dir), stop it (SIGTERM, then SIGKILL after --grace-period) when leadership is lost';

/**
 * Three failures in a row: one is a blip the restart (with backoff) is for, and a handoff costs
 * more than a restart; three, with 1 s and 2 s of backoff between them, is a host that cannot
 * run the command (a missing file, a full disk, credentials it lacks), which another may.
 */
export const DEFAULT_GIVE_UP_AFTER = 3;

/** `run`'s flags: the sidecar's (with no HTTP listener by default), then its own (cmd/flag-table.ts). */
export const RUN_OPTIONS = {
  ...SIDECAR_OPTIONS,
  listen: { ...SIDECAR_OPTIONS.listen, default: 'off' },
  once: { type: 'boolean', default: false, describe: 'Run CMD once while leader, then release and exit with its status' },
  'skip-if-ran-within': {
    type: 'string',
    describe:
      'With --once, for cron: exit 0 without running CMD if a run (a term of this lease) began less than this ago, here or on another candidate; less than the cron interval',
  },
  try: { type: 'string', describe: `With --once: give up after waiting this long to be elected (exit ${EXIT_NOT_ELECTED})` },
  'grace-period': {
    type: 'string',
    describe:
      'SIGTERM→SIGKILL delay when leadership is lost (default and maximum: lease-duration − renew-deadline − (50ms + 0.1% of lease-duration), at most 5s by default)',
  },
  // No default in the table: given with --once it is refused, so it must be seen as given or not.
  'give-up-after': {
    type: 'string',
    describe: `Without --once: after this many failures of CMD in a row while leading, release the lease and stand aside for a lease duration so another candidate runs it; 0: never (default ${DEFAULT_GIVE_UP_AFTER})`,
  },
  // Read only to be refused: a LEASEHOLD_SHARDS meant for a sidecar must not leave run leading one lease unseen.
  shards: { type: 'string', describe: 'Not for run: refused (shard groups are joined by leasehold sidecar --shards, beside the app)' },
} as const satisfies FlagTable;

/** The flags, plus CMD and its arguments: every word after the first `--`, byte for byte. */
export type RunArgs = ArgsOf<typeof RUN_OPTIONS> & { '--'?: string[] };

export const RUN_COMMAND = {
  name: 'run',
  description: RUN_DESCRIPTION,
  usage: 'leasehold run [flags] -- CMD [ARGS...]',
  flags: RUN_OPTIONS,
  takesCommand: true,
} as const satisfies CommandSpec;

/**
 * Validates every `run` flag and the command's presence before anything is created; throws one
 * clear error. The command itself is looked up on PATH later, in runRun.
 */
export function resolveRun(f: FlagValues<RunArgs>, env: NodeJS.ProcessEnv) {
  const a = f.values;
  if (a.shards !== undefined) throw badFlag('shards', a.shards, RUN_SHARDS_RULE);
  const argv = a['--'] ?? [];
  if (argv.length === 0) throw new CommandStartError('no command given: use leasehold run [flags] -- CMD [ARGS...]');
  const s = resolveSidecar(f, env);
  // The kill at the end of the grace period keeps the clock margin before the lease's expiry,
  // the earliest moment another candidate may lead (docs/guarantees.md, "Clocks and timers").
  const remaining = s.leaseDurationMs - s.renewDeadlineMs - clockMarginMs(s.leaseDurationMs);
  let gracePeriodMs = Math.min(5_000, remaining);
  if (a['grace-period'] !== undefined) {
    const g = duration('grace-period', a['grace-period'], 0);
    if (g > remaining) {
      throw badFlag(
        'grace-period',
        a['grace-period'],
        `must be at most lease-duration − renew-deadline − the clock margin of 50ms + 0.1% of lease-duration (${formatDuration(remaining)}): the command must be gone a margin before another candidate may take over`,
      );
    }
    gracePeriodMs = g;
  }
  const skipIfRanWithinMs = onceOnly(a, 'skip-if-ran-within');
  const tryMs = onceOnly(a, 'try');
  const giveUpAfter = giveUpCount(a);
  return { ...s, argv, gracePeriodMs, skipIfRanWithinMs, tryMs, giveUpAfter };
}

/** Runs the command while leader until it is done (--once) or a shutdown signal; resolves to the exit status. */
export async function runRun(f: FlagValues<RunArgs>, { env, io }: CommandContext): Promise<number> {
  const { argv, gracePeriodMs, skipIfRanWithinMs, tryMs, giveUpAfter, ...s } = resolveRun(f, env);
  resolveExecutable(argv[0]!, env.PATH ?? '');
  await checkListenAddress(s.listen, f.values.listen);
  const log = createLogger({ format: s.logFormat, level: s.logLevel, base: { lease: s.lease, identity: s.identity }, write: (line) => io.stderr(`${line}\n`) });
  const { store, podLabeler } = await openStoreAndLabeler({ ...s.store, ...storeTimeouts(s) }, s.podLabel, s.identity, s.lease, log);
  let runner: LeaderRunner;
  try {
    runner = new LeaderRunner({
      ...s,
      store,
      log,
      argv,
      once: f.values.once,
      gracePeriodMs,
      skipIfRanWithinMs,
      tryMs,
      giveUpAfter,
      podLabeler,
      childEnv: (term) =>
        childEnvironment(
          env,
          Object.keys(RUN_OPTIONS),
          {
            LEASEHOLD_FENCING_TOKEN: String(term.token),
            LEASEHOLD_LEASE: s.lease,
            LEASEHOLD_IDENTITY: s.identity,
            LEASEHOLD_STATUS_DIR: s.statusDir,
          },
          s.store.backend,
        ),
    });
  } catch (err) {
    // Nothing may be left open: main() returns, and the process ends when nothing runs.
    await store.close().catch(() => {});
    throw err;
  }
  onShutdownSignal(io, (signal) => runner.forwardSignalAndStop(signal));
  try {
    await runner.start();
  } catch (err) {
    // Not leading yet, so no command runs: this stops the campaign and its timers, and closes the store.
    await runner.forwardSignalAndStop('SIGTERM').catch(() => {});
    throw err;
  }
  return runner.finished;
}

/** --give-up-after, which only a restarting run gives a meaning to (--once never restarts CMD). */
function giveUpCount(a: RunArgs): number {
  const text = a['give-up-after'];
  if (text === undefined) return DEFAULT_GIVE_UP_AFTER;
  const n = count('give-up-after', text);
  if (a.once) throw badFlag('give-up-after', text, 'applies without --once: a single run never restarts its command, so there is nothing to give up');
  return n;
}

/** A count: a whole number from 0, as written (no sign, no exponent, no fraction). */
function count(flag: string, text: string): number {
  if (!/^\d{1,9}$/.test(text)) throw badFlag(flag, text, 'must be a whole number from 0 (0: never)');
  return Number(text);
}

/** A duration flag that only --once gives a meaning to (a run that keeps going has no tick). */
function onceOnly(a: RunArgs, flag: 'skip-if-ran-within' | 'try'): number | undefined {
  const text = a[flag];
  if (text === undefined) return undefined;
  const ms = duration(flag, text);
  if (!a.once) throw badFlag(flag, text, 'needs --once: it applies to a single run');
  return ms;
}
