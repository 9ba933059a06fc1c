import { BackendUnavailableError } from './errors.js';

/** Cancellation of store and API calls by an AbortSignal, as client-go cancels by `ctx`. */

/** Rejects at once when the call's signal has already aborted: nothing is sent or written. */
export function throwIfAborted(opts: { signal?: AbortSignal | undefined } | undefined): void {
  const signal = opts?.signal;
  if (signal?.aborted) throw abortReason(signal);
}

/** The error a cancelled call rejects with: the signal's reason when it is an Error. */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new BackendUnavailableError('the request was cancelled', { cause: signal.reason });
}
