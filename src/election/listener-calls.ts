import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { CandidateListener } from './candidate-options.js';

/** Calls one method of the listener by name, with its arguments. */
export type Notify = <K extends keyof CandidateListener>(name: K, ...args: Parameters<NonNullable<CandidateListener[K]>>) => void;

/**
 * The listener as the election calls it. A listener is the app's code (or the sidecar's):
 * whatever it throws, or a promise it returns rejects with, is logged and goes no further, so it
 * can never abort the write that made the candidate leader, end a term, or crash the process.
 */
export function listenerCalls(listener: CandidateListener, log: Logger): Notify {
  return (name, ...args) => {
    const report = (err: unknown) => log.error('listener callback failed', { callback: name, error: describeError(err) });
    try {
      const fn = listener[name] as ((...a: typeof args) => unknown) | undefined;
      const result = fn?.apply(listener, args);
      if (isThenable(result)) result.then(undefined, report);
    } catch (err) {
      report(err);
    }
  };
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as PromiseLike<unknown> | null)?.then === 'function';
}
