/**
 * A failed request on Leases, said again with what was being done, for both Kubernetes stores
 * (the lease and the group's records): the client's coded error (src/kube/api-errors.ts) keeps
 * its class, the original as `cause`. A 403 names the RBAC rule that is missing; a 404 on update
 * is a conflict by the store contract (the Lease is gone).
 */
import { httpStatus } from '../../kube/api-errors.js';
import { BackendError, ConflictError, ForbiddenError, LeaseholdError, NotFoundError } from '../../errors.js';

export type LeaseVerb = 'get' | 'list' | 'create' | 'update';

/** `doing`: what was asked, as messages start (`get Lease ns/name`); `verb`: the RBAC verb it needs. */
export function leaseRequestError(err: unknown, verb: LeaseVerb, doing: string, namespace: string): LeaseholdError {
  if (!(err instanceof LeaseholdError)) return new BackendError(`${doing}: ${String(err)}`, { cause: err });
  const status = httpStatus(err);
  const Same = err.constructor as new (message: string, options?: { cause?: unknown }) => LeaseholdError;
  if (status === undefined) return new Same(`${doing}: ${err.message}`, { cause: err }); // transport, cancellation
  switch (status) {
    case 403:
      return new ForbiddenError(
        `${doing}: forbidden (403): RBAC denies verb "${verb}" on resource "leases" (coordination.k8s.io) in namespace ${namespace}: ${err.message}`,
        { cause: err },
      );
    case 404:
      if (verb === 'update') return new ConflictError(`${doing}: the Lease no longer exists (404): ${err.message}`, { cause: err });
      return new NotFoundError(`${doing}: not found (404): ${err.message}`, { cause: err });
    default:
      // A 409 comes as a ConflictError already (api-errors.ts), and stays one.
      return new Same(`${doing}: ${describeStatus(status)} (${status}): ${err.message}`, { cause: err });
  }
}

function describeStatus(status: number): string {
  const known: Record<number, string> = { 401: 'unauthorized', 409: 'conflict', 422: 'rejected as invalid', 429: 'throttled' };
  return known[status] ?? (status >= 500 ? 'server error' : 'HTTP error');
}
