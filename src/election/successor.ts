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
import { ConflictError, describeError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { LeaseRecord, SuccessorClaim, SuccessorClaimSupport } from '../backends/lease-store.js';
import type { Standing } from './candidate-options.js';
import type { Timings } from '../config/election-options.js';
import { RELEASE_WINDOW_FACTOR, contentionDelayMs } from './elector-config.js';
import type { RecordAccess } from './record-access.js';
import type { RecordView } from './record-view.js';

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

/** The claim's timings for a candidate's safety re-read, contention window and lease duration. */
export function claimTimings(safetyRereadMs: number, contentionWindowMs: number, leaseDurationMs: number): ClaimTimings {
  return {
    // As often as a standby re-reads: the claimant's one write per safety period, beside its re-read.
    refreshMs: safetyRereadMs,
    lifetimeMs: CLAIM_LIFETIME_REFRESHES * safetyRereadMs,
    volunteerWindowMs: Math.min(VOLUNTEER_WINDOW_MS, leaseDurationMs / 2),
    graceMs: Math.min(RELEASE_WINDOW_FACTOR * contentionWindowMs, leaseDurationMs),
  };
}

export function claimState(claim: SuccessorClaim | null | undefined, identity: string, seenForMs: number, lifetimeMs: number): ClaimState {
  if (!claim || seenForMs >= lifetimeMs) return 'none';
  return claim.identity === identity ? 'self' : 'other';
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

/** What the claim asks of the candidate that owns it: its view, its way to the record, its standing. */
export interface ClaimantOptions {
  identity: string;
  lease: string;
  clock: Clock;
  log: Logger;
  random: () => number;
  timings: Readonly<Timings>;
  claim: ClaimTimings;
  /** The store's capability: whether it keeps claims now (it may change when the store reopens). */
  support: SuccessorClaimSupport;
  /** What the candidate believes about the record, the claim's age and its unanswered claim writes included. */
  view: RecordView;
  /** The candidate's bounded store calls, each answer taken into its view. */
  access: RecordAccess;
  /** Whether the candidate leads, and whether it campaigns (its app is eligible). */
  candidate: Standing;
}

/**
 * One standby's part in the claim: when to volunteer, refresh or stand back, and writing and
 * withdrawing its claim. A candidate that makes no claims has none of it; the schedule asks it
 * when the next claim write is due and how long this standby's turn at a free lease is.
 */
export class SuccessorClaimant {
  /** This standby's delay for the moment it found no live claim (drawn once per moment). */
  private volunteer: { needAtMono: number; delayMs: number } | null = null;
  /** When this standby last wrote (or tried to write) its claim: a failed write waits a retry period. */
  private lastWriteMono: number | null = null;

  constructor(private readonly o: ClaimantOptions) {}

  /** What this candidate makes of the claim in the record last seen. */
  state(): ClaimState {
    const claim = this.o.view.observed?.record.successor;
    return claimState(claim, this.o.identity, this.o.clock.monotonic() - this.o.view.claimSeenSinceMono, this.o.claim.lifetimeMs);
  }

  /** The store keeps claims and this standby holds the live one: it goes first when the lease is free. */
  named(): boolean {
    return !this.o.candidate.isLeader() && this.o.candidate.campaigning() && this.kept() && this.state() === 'self';
  }

  /**
   * A store whose watch polls polls quickly while this standby is named: its takeover waits on
   * noticing the release. Returns the function that ends it.
   */
  pollQuicklyWhileNamed(): () => void {
    return this.o.support.pollQuicklyWhile?.(this.o.lease, () => this.named()) ?? (() => {});
  }

  /**
   * This standby's wait at a free lease, given the turn it drew in the contention window: the
   * named successor goes at once; the others first give it the grace to be seen taking over.
   */
  turnMs(drawnMs: number): number {
    const state = this.kept() ? this.state() : 'none';
    return state === 'self' ? 0 : state === 'other' ? this.o.claim.graceMs + drawnMs : drawnMs;
  }

  /** A claim write is due now: to volunteer, or to refresh this standby's own claim. */
  due(): boolean {
    if (!this.dueNow()) return false;
    return this.lastWriteMono === null || this.o.clock.monotonic() - this.lastWriteMono >= this.o.timings.retryPeriodMs;
  }

  /** Monotonic ms at which the next claim write is due (a failed one waits a retry period), or null. */
  nextWriteMono(): number | null {
    const due = this.dueMono();
    return due === null ? null : Math.max(due, (this.lastWriteMono ?? -Infinity) + this.o.timings.retryPeriodMs);
  }

  /**
   * Writes this standby's claim into the record last seen, changing nothing else: a volunteer
   * when no live claim is there, or its own claim's refresh. A lost race re-reads, and the next
   * turn judges again from what it found.
   */
  async write(): Promise<void> {
    const o = this.o;
    this.lastWriteMono = o.clock.monotonic();
    const last = o.view.observed;
    if (!last) return;
    try {
      let seen = last;
      // A volunteer reads first (the claimant refreshing its own claim does not): of many
      // standbys whose moments came close together, those after the first one's claim see it
      // and send nothing, as a takeover's read does. Without the read, each wrote from a view
      // its watch had not yet brought up to date, and lost the race.
      // The claimant reads too when its view is older than one request timeout: a claim-only
      // write rewrites the record as seen, so from an old view it could bring back an old term.
      if (!this.named() || !o.view.recentlyConfirmed(last.version)) {
        const current = await o.access.get();
        if (!current) {
          o.view.noteAbsent();
          return;
        }
        o.access.observe(current);
        if (!this.dueNow()) return;
        seen = current;
      }
      const claimed = withClaim(seen.record, { identity: o.identity, claimedAt: o.clock.now() });
      // Until its answer comes, a withdrawal reads the record rather than trust the view.
      o.view.noteAnswer('claim', false);
      const version = await o.access.update(claimed, seen.version);
      o.view.noteAnswer('claim', true);
      // Not our lease write: the holder's expiry still counts from its last renewal (see
      // RecordView.observe). Unless the watch has meanwhile shown a newer record (a release
      // that landed right after the claim): the answer must not take the view back before it.
      if (o.view.observed?.version === seen.version) o.access.observe({ record: claimed, version });
      o.log.debug('claimed to be the successor', { holder: seen.record.holderIdentity });
    } catch (err) {
      o.log.debug('successor claim not written', { reason: describeError(err) });
      if (err instanceof ConflictError) {
        // A conflict is an answer: the claim did not land.
        o.view.noteAnswer('claim', true);
        const current = await o.access.tryGet();
        if (current) o.access.observe(current);
      }
    }
  }

  /** The record last seen holds this standby's claim, or a claim write of its own went unanswered and may have landed. */
  mayHoldClaim(): boolean {
    return this.o.view.mayHaveLanded('claim') || this.o.view.observed?.record.successor?.identity === this.o.identity;
  }

  /** The candidate stops, or stands aside: it takes its claim back, so the others do not stand back for it. */
  async withdraw(): Promise<void> {
    const o = this.o;
    if (!this.kept()) return;
    for (let attempt = 0; attempt < 3; attempt++) {
      const seen = o.view.observed;
      const ours = seen?.record.successor?.identity === o.identity;
      // Nothing to withdraw unless the record last seen holds our claim, or a claim write went
      // unanswered; to withdraw it, a recent view that shows it, or a read.
      if (attempt === 0 && !ours && !o.view.mayHaveLanded('claim')) return;
      const current = attempt === 0 && ours && seen && o.view.recentlyConfirmed(seen.version) ? seen : await o.access.tryGet();
      // A record read answers for the unanswered write: its claim is there or it is not.
      if (current) o.view.noteAnswer('claim', true);
      if (!current || current.record.successor?.identity !== o.identity) return;
      try {
        const withdrawn = withClaim(current.record, null);
        const version = await o.access.update(withdrawn, current.version);
        if (o.view.observed?.version === current.version) o.access.observe({ record: withdrawn, version });
        o.log.info('withdrew the successor claim');
        return;
      } catch (err) {
        if (!(err instanceof ConflictError)) return;
      }
    }
  }

  /** The record as last seen still asks for this standby's claim now (whatever its last try). */
  private dueNow(): boolean {
    const due = this.dueMono();
    return due !== null && this.o.clock.monotonic() >= due;
  }

  /**
   * When this standby should next write its claim, or null: only while another holds the lease
   * and it has not expired (a free lease is taken, not claimed), and the store keeps claims. Its
   * own live claim is refreshed every refreshMs; with no live claim (none written, or one not
   * seen to change for its lifetime) it volunteers at its own moment in the volunteer window.
   */
  private dueMono(): number | null {
    const o = this.o;
    if (o.candidate.isLeader() || !this.kept() || !o.candidate.campaigning()) return null;
    const seen = o.view.observed;
    if (!seen || seen.record.holderIdentity === '' || o.view.freeOnSight(seen) || o.view.expired(seen.record)) return null;
    const since = o.view.claimSeenSinceMono;
    if (this.state() === 'self') return since + o.claim.refreshMs;
    // Another's live claim is replaced once it has not changed for its lifetime.
    const needAtMono = seen.record.successor ? since + o.claim.lifetimeMs : since;
    if (this.volunteer?.needAtMono !== needAtMono) {
      this.volunteer = { needAtMono, delayMs: contentionDelayMs(o.random(), o.claim.volunteerWindowMs) };
    }
    return needAtMono + this.volunteer.delayMs;
  }

  private kept(): boolean {
    return this.o.support.kept() === true;
  }
}
