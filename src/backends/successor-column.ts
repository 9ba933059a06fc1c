import type { LeaseRecord, SuccessorClaim } from './lease-store.js';
import { claimFromJson } from './successor-json.js';

/**
 * How the SQL stores (SQLite, PostgreSQL) keep a successor claim in their `successor TEXT NOT
 * NULL DEFAULT ''` column: '' is no claim; otherwise JSON `{"identity":"<id>","claimedAt":<ms>}`
 * with claimedAt in milliseconds since the epoch (a number, so it round-trips to the
 * millisecond). The column is shared with peers that may write anything into it (the
 * tutorial's Python candidates never do, a neighbour might): whatever is not exactly that
 * reads as no claim, never as an error, since no candidate's right to the lease depends on it.
 */
export function encodeSuccessor(claim: SuccessorClaim | null | undefined): string {
  if (!claim) return '';
  return JSON.stringify({ identity: claim.identity, claimedAt: claim.claimedAt.getTime() });
}

/** The claim a column value holds, or null for '' and for anything malformed (successor-json.ts). */
export function decodeSuccessor(text: unknown): SuccessorClaim | null {
  return claimFromJson(text, (t) => (typeof t === 'number' && Number.isFinite(t) ? new Date(t) : null));
}

/** Adds `successor` to a record read from a row only when there is a claim: no claim, no key. */
export function withSuccessor(record: LeaseRecord, text: unknown): LeaseRecord {
  const claim = decodeSuccessor(text);
  return claim ? { ...record, successor: claim } : record;
}
