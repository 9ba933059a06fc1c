import { constants } from 'node:os';
import type { CliIo, ShutdownSignal } from './cli-io.js';

export const SHUTDOWN_SIGNALS: readonly ShutdownSignal[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * Runs `handler` once on the first SIGTERM, SIGINT or SIGHUP from `io.signals`. A second signal
 * while it runs exits at once with 128 + signal number, for an operator who really means it.
 */
export function onShutdownSignal(io: CliIo, handler: (signal: ShutdownSignal) => Promise<void>): void {
  let running = false;
  for (const signal of SHUTDOWN_SIGNALS) {
    io.signals.on(signal, () => {
      if (running) io.exit(128 + constants.signals[signal]);
      running = true;
      void handler(signal);
    });
  }
}
