import { InvalidRecordError } from '../../errors.js';
import type { SuccessorClaim } from '../lease-store.js';
import { claimFromJson, claimProblem } from '../successor-json.js';

/**
 * The successor claim on a Kubernetes Lease lives in this annotation, not in the spec: the
 * Lease spec has no field for it, client-go candidates ignore metadata, and client-go's
 * LeaseLock carries annotations from the object it read, so a client-go leader's renewals and
 * its release keep the claim.
 */
export const SUCCESSOR_ANNOTATION = 'leasehold.io/successor';

/** RFC 3339 with a zone; Date.parse alone would also accept forms no other writer means. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The annotation's value: `{"identity":"<id>","claimedAt":"<RFC 3339, milliseconds, UTC>"}`.
 * Throws InvalidRecordError (before anything is sent) for a claim that would not read back.
 */
export function formatSuccessor(claim: SuccessorClaim): string {
  const problem = claimProblem(claim.identity, claim.claimedAt);
  if (problem) throw new InvalidRecordError(`successor claim: ${problem}`);
  return JSON.stringify({ identity: claim.identity, claimedAt: claim.claimedAt.toISOString() });
}

/**
 * The claim an annotation value holds, or null. Anyone with write access to the Lease can put
 * anything there (a neighbour's tool, a hand edit): a value that is not a well-formed claim is
 * read as no claim, never as an error, so the lease itself is still read and the next handoff
 * simply goes through the contention window.
 */
export function parseSuccessor(value: unknown): SuccessorClaim | null {
  return claimFromJson(value, (t) => (typeof t === 'string' && RFC3339.test(t) ? new Date(t) : null));
}
