/**
 * The records a candidate writes: a new term, a renewal, a release. Pure: what the record says
 * follows from the record seen, the time the request starts and the tokens seen.
 */
import { InvalidRecordError } from '../errors.js';
import type { LeaseRecord, LeaseStore } from '../backends/lease-store.js';
import { claimForNewTerm } from './successor.js';

/** Who writes: the candidate's identity and lease duration, and its store. */
export interface Writer {
  identity: string;
  leaseDurationMs: number;
  /** Its bound on tokens is read at each new term. */
  store: Pick<LeaseStore, 'backend' | 'maxToken'>;
}

/** A record created from nothing, with `token` (past the highest ever seen, after a deletion). */
export function freshRecord(w: Writer, now: Date, token: number): LeaseRecord {
  const max = Math.min(w.store.maxToken ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  if (token > max) {
    throw new InvalidRecordError(
      `the fencing token would pass ${max}, the largest the ${w.store.backend} store can hold${max === Number.MAX_SAFE_INTEGER ? ' (2^53 − 1, past which tokens can no longer be told apart)' : ''}`,
    );
  }
  return {
    holderIdentity: w.identity,
    leaseDurationSeconds: w.leaseDurationMs / 1000,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: token,
  };
}

/** The record of a new term: this candidate, now, the next token after any seen. */
export function newTermRecord(w: Writer, rec: LeaseRecord, now: Date, highestToken: number): LeaseRecord {
  return { ...freshRecord(w, now, Math.max(rec.leaseTransitions, highestToken) + 1), successor: claimForNewTerm(rec, w.identity) };
}

/** The sitting leader's renewal: the same term, renewed now; the claim in the record stays. */
export function renewalRecord(w: Writer, rec: LeaseRecord, now: Date, termAcquiredAt: Date | undefined): LeaseRecord {
  return {
    holderIdentity: w.identity,
    leaseDurationSeconds: w.leaseDurationMs / 1000,
    acquireTime: rec.acquireTime ?? termAcquiredAt ?? now,
    renewTime: now,
    leaseTransitions: rec.leaseTransitions,
    successor: rec.successor ?? null,
  };
}

/**
 * The lease given up as client-go gives it up: holder '', leaseDurationSeconds 1, times = now,
 * the token unchanged (the next acquirer bumps it); with `keepAcquireTime`, acquireTime stays
 * the term's. The named successor in the record is the one to take it now.
 */
export function releasedRecord(rec: LeaseRecord, now: Date, keepAcquireTime: boolean): LeaseRecord {
  return {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: keepAcquireTime ? rec.acquireTime : now,
    renewTime: now,
    leaseTransitions: rec.leaseTransitions,
    successor: rec.successor ?? null,
  };
}
