import type { Argv } from 'yargs';
import { createLogger } from '../src/log.js';
import { formatDuration } from '../src/config/duration.js';
import { duration } from './election-flags.js';
import { resolveExecutable } from '../src/run/child-process-group.js';
import { LeaderRunner } from '../src/run/leader-runner.js';
import { checkListenHost, openStoreAndLabeler, resolveSidecar, sidecarFlags } from './sidecar-command.js';
import { badFlag } from './usage-error.js';
import { onShutdownSignal } from './signals.js';
import { CommandStartError } from '../src/errors.js';
import { childEnvironment, type FlagsOf } from './env-flags.js';

/** The flags, plus what follows `--` (yargs' populate--). */
export type RunArgs = FlagsOf<typeof runFlags> & { '--'?: (string | number)[] };

export function runFlags<T>(y: Argv<T>) {
  return sidecarFlags(y)
    .option('once', { type: 'boolean', default: false, describe: 'Run CMD once while leader, then release and exit with its status' })
    .option('grace-period', {
      type: 'string',
      describe: 'SIGTERM→SIGKILL delay when leadership is lost (default and maximum: lease-duration − renew-deadline, at most 5s by default)',
    })
    .default('listen', 'off')
    .usage('leasehold run [flags] -- CMD [ARGS...]');
}

export async function runRun(a: RunArgs, flags: readonly string[]): Promise<number> {
  const argv = (a['--'] ?? []).map(String);
  if (argv.length === 0) throw new CommandStartError('no command given: use leasehold run [flags] -- CMD [ARGS...]');
  const s = resolveSidecar(a);
  const remaining = s.leaseDurationMs - s.renewDeadlineMs;
  let gracePeriodMs = Math.min(5_000, remaining);
  if (a['grace-period'] !== undefined) {
    const g = duration('grace-period', a['grace-period'], 0);
    if (g > remaining) {
      throw badFlag(
        'grace-period',
        a['grace-period'],
        `must be at most lease-duration − renew-deadline (${formatDuration(remaining)}): the command must be gone before another candidate may take over`,
      );
    }
    gracePeriodMs = g;
  }
  resolveExecutable(argv[0]!);
  await checkListenHost(s.listen, a.listen);
  const log = createLogger({ format: s.logFormat, level: s.logLevel, base: { lease: s.lease, identity: s.identity } });
  const { store, podLabeler } = await openStoreAndLabeler({ ...s.store, requestTimeoutMs: s.renewDeadlineMs / 2 }, s.podLabel, s.identity, s.lease, log);
  const runner = new LeaderRunner({
    ...s,
    store,
    log,
    argv,
    once: a.once,
    gracePeriodMs,
    podLabeler,
    childEnv: (term) =>
      childEnvironment(process.env, flags, {
        LEASEHOLD_FENCING_TOKEN: String(term.token),
        LEASEHOLD_LEASE: s.lease,
        LEASEHOLD_IDENTITY: s.identity,
        LEASEHOLD_STATUS_DIR: s.statusDir,
      }),
  });
  onShutdownSignal((signal) => runner.forwardSignalAndStop(signal));
  await runner.start();
  return runner.finished;
}
