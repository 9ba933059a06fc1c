import { validateIdentity } from '../config/election-options.js';
import type { SuccessorClaim } from './lease-store.js';

/**
 * A successor claim from its JSON form, `{"identity": ..., "claimedAt": ...}`, as every store
 * keeps it; only the form of claimedAt differs (`readTime`: a Lease annotation holds RFC 3339, a
 * SQL column milliseconds). Anyone who can write the record can put anything there: whatever is
 * not a well-formed claim (not JSON, a field missing or of the wrong type, an identity that
 * breaks the identity rules, a time that is not one) is no claim, never an error.
 */
export function claimFromJson(value: unknown, readTime: (claimedAt: unknown) => Date | null): SuccessorClaim | null {
  if (typeof value !== 'string') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
  const { identity, claimedAt } = parsed as { identity?: unknown; claimedAt?: unknown };
  const at = readTime(claimedAt);
  if (typeof identity !== 'string' || !at || claimProblem(identity, at)) return null;
  return { identity, claimedAt: at };
}

/** What makes a claim unusable, or null: its identity breaks the identity rules, or its time is not a time. */
export function claimProblem(identity: string, claimedAt: Date): string | null {
  try {
    validateIdentity(identity);
  } catch (err) {
    return (err as Error).message;
  }
  if (!(claimedAt instanceof Date) || Number.isNaN(claimedAt.getTime())) return `claimedAt ${String(claimedAt)} is not a valid time`;
  return null;
}
