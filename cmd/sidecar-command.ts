import { createLogger } from '../src/log.js';
import type { InvalidConfigError } from '../src/errors.js';
import { storeTimeouts } from '../src/config/election-options.js';
import { Sidecar } from '../src/sidecar/sidecar.js';
import { SIDECAR_COMMAND_OPTIONS, checkListenAddress, openStoreAndLabeler, resolveSidecarCommand } from './sidecar-settings.js';
import type { CommandSpec } from './flag-table.js';
import type { ParsedFlags } from './cli-parser.js';
import type { CommandContext } from './cli-io.js';
import { onShutdownSignal } from './signals.js';

export const SIDECAR_COMMAND = {
  name: 'sidecar',
  description: 'Campaign for a lease (or, with --shards, own shards of a group); publish it to files, HTTP and metrics',
  flags: SIDECAR_COMMAND_OPTIONS,
} as const satisfies CommandSpec;

/**
 * Campaigns until a shutdown signal, then steps down and releases; with --shards, is a member of
 * the group until then, then gives its shards up and leaves. Resolves to 0; rejects with the
 * refusal when a member leaves its group on its own (main() makes it exit 2).
 */
export async function runSidecar(flags: ParsedFlags<typeof SIDECAR_COMMAND_OPTIONS>, { env, io }: CommandContext): Promise<number> {
  const { sharding: group, ...s } = resolveSidecarCommand(flags, env);
  await checkListenAddress(s.listen, flags.values.listen);
  const base = group ? { group: s.lease, identity: s.identity } : { lease: s.lease, identity: s.identity };
  const log = createLogger({ format: s.logFormat, level: s.logLevel, base, write: (line) => io.stderr(`${line}\n`) });
  // A leader reads its EndpointSlice again once a lease duration, to put back what something else rewrote.
  const endpoints = s.leaderEndpoints && { ...s.leaderEndpoints, verifyMs: s.leaseDurationMs };
  const { store, podLabeler, leaderEndpoints } = await openStoreAndLabeler(
    { ...s.store, ...storeTimeouts(s) },
    s.podLabel,
    s.identity,
    s.lease,
    log,
    endpoints,
  );
  let sidecar: Pick<Sidecar, 'start' | 'stop'>;
  // A member that leaves its group on its own (the group's records say another shard count: a
  // start race with another --shards, or the group recreated) ends the command with that
  // refusal (exit 2), rather than running on as a member of nothing.
  let refused: Promise<InvalidConfigError> = new Promise(() => {});
  try {
    if (group) {
      // Loaded only in shard mode: a leader sidecar carries none of it.
      const { ShardSidecar } = await import('../src/sidecar/shard-sidecar.js');
      const member = new ShardSidecar({ ...s, ...group, group: s.lease, store, log, drainKey: true });
      refused = member.refused;
      sidecar = member;
    } else sidecar = new Sidecar({ ...s, store, log, podLabeler, leaderEndpoints });
  } catch (err) {
    // Nothing may be left open: main() returns, and the process ends when nothing runs.
    await store.close().catch(() => {});
    throw err;
  }
  const stopped = new Promise<void>((resolve) =>
    onShutdownSignal(io, async (signal) => {
      log.info('shutting down', { signal });
      await sidecar.stop();
      resolve();
    }),
  );
  try {
    await sidecar.start();
  } catch (err) {
    await sidecar.stop().catch(() => {});
    throw err;
  }
  const refusal = await Promise.race([stopped.then(() => null), refused]);
  if (refusal) {
    await sidecar.stop();
    throw refusal;
  }
  return 0;
}
