import { createLogger } from '../src/log.js';
import { Sidecar } from '../src/sidecar/sidecar.js';
import { SIDECAR_COMMAND_OPTIONS, checkListenAddress, openStoreAndLabeler, resolveSidecarCommand } from './sidecar-settings.js';
import type { CommandSpec } from './flag-table.js';
import type { ParsedFlags } from './cli-parser.js';
import type { CommandContext } from './cli-io.js';
import { onShutdownSignal } from './signals.js';

export const SIDECAR_COMMAND = {
  name: 'sidecar',
  description: 'Campaign for a lease; publish leadership to files, HTTP and metrics',
  flags: SIDECAR_COMMAND_OPTIONS,
} as const satisfies CommandSpec;

/** Campaigns until a shutdown signal, then steps down and releases; resolves to 0. */
export async function runSidecar(flags: ParsedFlags<typeof SIDECAR_COMMAND_OPTIONS>, { io }: CommandContext): Promise<number> {
  const s = resolveSidecarCommand(flags);
  await checkListenAddress(s.listen, flags.values.listen);
  const log = createLogger({ format: s.logFormat, level: s.logLevel, base: { lease: s.lease, identity: s.identity }, write: (line) => io.stderr(`${line}\n`) });
  const { store, podLabeler } = await openStoreAndLabeler({ ...s.store, requestTimeoutMs: s.renewDeadlineMs / 2 }, s.podLabel, s.identity, s.lease, log);
  let sidecar: Sidecar;
  try {
    sidecar = new Sidecar({ ...s, store, log, podLabeler });
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
  await stopped;
  return 0;
}
