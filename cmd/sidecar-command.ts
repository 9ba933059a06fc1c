import { createLogger } from '../src/log.js';
import { Sidecar } from '../src/sidecar/sidecar.js';
import { checkListenHost, openStoreAndLabeler, resolveSidecarCommand, type SidecarArgs } from './sidecar-settings.js';
import { onShutdownSignal } from './signals.js';

/** `s`: the settings when the caller resolved them already (the fast path), so they are resolved once (one random identity). */
export async function runSidecar(a: SidecarArgs, s = resolveSidecarCommand(a)): Promise<number> {
  await checkListenHost(s.listen, a.listen);
  const log = createLogger({ format: s.logFormat, level: s.logLevel, base: { lease: s.lease, identity: s.identity } });
  const { store, podLabeler } = await openStoreAndLabeler({ ...s.store, requestTimeoutMs: s.renewDeadlineMs / 2 }, s.podLabel, s.identity, s.lease, log);
  const sidecar = new Sidecar({ ...s, store, log, podLabeler });
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
