/**
 * The successor claim: how one standby goes first when the lease is free, and the others stand
 * back, without anyone knowing how many standbys there are.
 *
 * A standby that finds no live claim in the record writes one naming itself (at a random moment
 * in a window, so that of many standbys one writes first and the others see it), and refreshes
 * it now and then. When the lease is next free (a release, or the expiry as each standby
 * observes it), the claimant tries at once; every other standby first waits a grace period,
 * long enough to see the claimant's takeover, and then its own turn in the contention window
 * (elector-config.ts), so a claimant that died costs only that grace.
 *
 * Only timing depends on the claim. Every takeover is still a read and a compare-and-swap of
 * the record under the lease's own rules: a claim gives no right to the lease, a stale or forged
 * one delays nobody past the grace, and a store that cannot keep claims leaves the window as
 * the only rule. The claim is kept apart from the lease's expiry: writing it changes neither
 * holder nor token (the times are written back as read, to the millisecond), and a standby does
 * not count it as a renewal.
 */
import type { LeaseRecord, SuccessorClaim } from '../backends/lease-store.js';

/** What a candidate makes of the claim in the record it last saw. */
export type ClaimState = 'self' | 'other' | 'none';

export interface ClaimTimings {
  /** How often the claimant rewrites its claim, so the others know it is alive. */
  refreshMs: number;
  /** A claim not seen to change for this long is dead: another standby may replace it. */
  lifetimeMs: number;
  /** The window in which standbys that find no live claim write theirs (see volunteerDelayMs). */
  volunteerWindowMs: number;
  /** How long the others stand back from a free lease for a live claimant. */
  graceMs: number;
}

/** The claimant refreshes at each safety re-read; a claim missing two refreshes and a half is dead. */
export const CLAIM_LIFETIME_REFRESHES = 2.5;
/** Standbys that find no live claim write theirs within this window (bounded by half a lease). */
export const VOLUNTEER_WINDOW_MS = 1_000;

export function claimState(claim: SuccessorClaim | null | undefined, identity: string, seenForMs: number, lifetimeMs: number): ClaimState {
  if (!claim || seenForMs >= lifetimeMs) return 'none';
  return claim.identity === identity ? 'self' : 'other';
}

/** Two claims are the same claim: same claimant, same claim time (to the millisecond). */
export function sameClaim(a: SuccessorClaim | null | undefined, b: SuccessorClaim | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.identity === b.identity && a.claimedAt.getTime() === b.claimedAt.getTime();
}

/** The record with only its claim replaced (null: withdrawn). Holder, times and token are untouched. */
export function withClaim(rec: LeaseRecord, claim: SuccessorClaim | null): LeaseRecord {
  return { ...rec, successor: claim };
}

/**
 * The claim a new term's record carries: another standby's claim stays (it is still the one to
 * go next), this candidate's own ends (it leads now).
 */
export function claimForNewTerm(rec: LeaseRecord | null, identity: string): SuccessorClaim | null {
  const claim = rec?.successor ?? null;
  return claim && claim.identity !== identity ? claim : null;
}
