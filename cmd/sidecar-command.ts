import { createLogger } from '../src/log.js';
import { Sidecar } from '../src/sidecar/sidecar.js';
import { SIDECAR_COMMAND_OPTIONS, checkListenAddress, openStoreAndLabeler, resolveSidecarCommand, type SidecarArgs } from './sidecar-settings.js';
import type { CommandSpec } from './flag-table.js';
import { onShutdownSignal } from './signals.js';

export const SIDECAR_COMMAND = {
  name: 'sidecar',
  description: 'Campaign for a lease; publish leadership to files, HTTP and metrics',
  flags: SIDECAR_COMMAND_OPTIONS,
} as const satisfies CommandSpec;

export async function runSidecar(a: SidecarArgs): Promise<number> {
  const s = resolveSidecarCommand(a);
  await checkListenAddress(s.listen, a.listen);
  const log = createLogger({ format: s.logFormat, level: s.logLevel, base: { lease: s.lease, identity: s.identity } });
  // A leader reads its EndpointSlice again once a lease duration, to put back what something else rewrote.
  const endpoints = s.leaderEndpoints && { ...s.leaderEndpoints, verifyMs: s.leaseDurationMs };
  const { store, podLabeler, leaderEndpoints } = await openStoreAndLabeler(
    { ...s.store, requestTimeoutMs: s.renewDeadlineMs / 2 },
    s.podLabel,
    s.identity,
    s.lease,
    log,
    endpoints,
  );
  const sidecar = new Sidecar({ ...s, store, log, podLabeler, leaderEndpoints });
  const stopped = new Promise<void>((resolve) =>
    onShutdownSignal(async (signal) => {
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
