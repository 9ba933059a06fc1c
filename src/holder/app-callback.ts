import { describeError } from '../errors.js';
import type { Logger } from '../log.js';

/**
 * Runs one of the app's callbacks (the library's LeaderElection and ShardGroup): whatever it
 * throws or its promise rejects with is logged, never passed on to the election (where it would
 * disturb it) nor left unhandled (where it would end the process). `settled` runs when it has
 * finished, either way: the end-of-term gate waits on it.
 */
export function runAppCallback(log: Logger, name: string, run: () => unknown, settled: () => void = () => {}): void {
  const report = (err: unknown) => log.error('callback failed', { callback: name, error: describeError(err) });
  try {
    const result = run();
    if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') {
      (result as PromiseLike<unknown>).then(settled, (err: unknown) => {
        report(err);
        settled();
      });
      return;
    }
  } catch (err) {
    report(err);
  }
  settled();
}
