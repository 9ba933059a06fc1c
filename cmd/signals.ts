import { constants } from 'node:os';

/**
 * Runs `handler` once on the first SIGTERM, SIGINT or SIGHUP. A second signal while it runs
 * exits at once with 128 + signal number, for an operator who really means it.
 */
export function onShutdownSignal(handler: (signal: NodeJS.Signals) => Promise<void>): void {
  let running = false;
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (running) process.exit(128 + constants.signals[signal]);
      running = true;
      void handler(signal);
    });
  }
}
