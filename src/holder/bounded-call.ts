import type { Clock } from '../clock.js';
import { BackendUnavailableError } from '../errors.js';
import type { CallOptions } from '../backends/lease-store.js';

/**
 * Bounds one backend call so a hung request cannot hold the election past its deadlines. At the
 * bound the call's signal aborts, so the store cancels the request (a Kubernetes request is
 * destroyed) rather than abandoning it; the call rejects then even if a store ignores it.
 * `what` names the call in the timeout's message; `failed` sees every rejection from the store.
 */
export function boundedCall<T>(
  clock: Clock,
  timeoutMs: number,
  what: string,
  send: (opts: CallOptions) => Promise<T>,
  failed: (e: unknown) => void,
): Promise<T> {
  const cancel = new AbortController();
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimer(() => {
      const err = new BackendUnavailableError(`${what} timed out after ${timeoutMs} ms`);
      cancel.abort(err);
      reject(err);
    }, timeoutMs);
    send({ signal: cancel.signal }).then(
      (v) => {
        timer.cancel();
        resolve(v);
      },
      (e: unknown) => {
        timer.cancel();
        failed(e);
        reject(e);
      },
    );
  });
}
