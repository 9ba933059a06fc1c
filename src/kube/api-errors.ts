/**
 * The coded error for each way a Kubernetes API call fails, raised by the client where it
 * fails (src/kube/api-client.ts), so a misconfiguration never looks like an outage:
 * - an HTTP answer: its status picks the class (401 Unauthorized, 403 Forbidden, 404 NotFound,
 *   409 Conflict, 422 InvalidRecord, 429/5xx BackendUnavailable, else Backend), and the error
 *   carries the status and the API server's Status reason;
 * - a certificate the client refuses: StoreOpenError (the kubeconfig's CA or server name is
 *   wrong; retrying will not help);
 * - any other transport failure (refused, reset, timed out): BackendUnavailableError.
 */
import { isTlsRefused } from '../util/tls-refused.js';
import {
  BackendError,
  BackendUnavailableError,
  ConflictError,
  ForbiddenError,
  InvalidRecordError,
  LeaseholdError,
  NotFoundError,
  StoreOpenError,
  UnauthorizedError,
} from '../errors.js';

/** What an HTTP answer said, kept on the error it raised. */
export interface ApiStatus {
  /** The HTTP status (404, 409, ...). */
  status: number;
  /** The Status object's reason (Conflict, Forbidden, Expired, ...), if the server sent one. */
  reason?: string | undefined;
}

type Coded = new (message: string, options?: { cause?: unknown }) => LeaseholdError;

function classFor(status: number): Coded {
  switch (status) {
    case 401:
      return UnauthorizedError;
    case 403:
      return ForbiddenError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 422:
      return InvalidRecordError;
    default:
      return status === 429 || status >= 500 ? BackendUnavailableError : BackendError;
  }
}

/** The coded error for an HTTP answer; `message` is the API server's own Status message. */
export function apiError(status: number, message: string, reason?: string): LeaseholdError & ApiStatus {
  const Class = classFor(status);
  return Object.assign(new Class(message), { status, reason });
}

/** The HTTP status an error came from, or undefined for a transport failure. */
export function httpStatus(err: unknown): number | undefined {
  const s = (err as Partial<ApiStatus> | null)?.status;
  return err instanceof LeaseholdError && typeof s === 'number' ? s : undefined;
}

/** The Status reason an error came from, if any. */
export function httpReason(err: unknown): string | undefined {
  return httpStatus(err) === undefined ? undefined : (err as ApiStatus).reason;
}

/** The coded error for a failure below HTTP: `what` names the call (`GET /apis/...`). */
export function transportError(what: string, err: unknown): LeaseholdError {
  if (err instanceof LeaseholdError) return err; // already coded (a cancellation's reason)
  const e = err as { message?: string; code?: unknown };
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const detail = [e?.message, code && !e?.message?.includes(code) ? code : undefined].filter(Boolean).join(': ') || String(err);
  if (isTlsRefused(code)) {
    return new StoreOpenError(
      `${what}: the API server's certificate was refused (${detail}): check the kubeconfig's certificate-authority and tls-server-name`,
      { cause: err },
    );
  }
  return new BackendUnavailableError(`${what}: ${detail}`, { cause: err });
}
