/**
 * This candidate's terms, one at a time: begun by a write that landed, renewed by later ones,
 * stepped down (by the loop, or at renewDeadline by the term's own timer), and over once through
 * the end-of-term gate (EndOfTerm.gate). It tells the listener of each change; it never
 * calls the store.
 */
import type { Clock, Timer } from '../clock.js';
import type { Logger } from '../log.js';
import type { VersionedRecord } from '../backends/lease-store.js';
import type { LeadershipTerm } from './candidate-options.js';
import type { Notify } from './listener-calls.js';

/** A term of this candidate's: one object per phase of a term; a renewal moves its times on in place. */
export interface Term extends LeadershipTerm {
  /** leading: it renews; ending: it stepped down and its end-of-term gate has not run; over. */
  readonly phase: 'leading' | 'ending' | 'over';
  /** Once ended: how (each released with releaseOnCancel once its work stopped, but a record gone: nothing to release). */
  readonly end?: TermEnd;
  /** Monotonic start of the last successful acquire/renew request. */
  renewedAtMono: number;
  /** Steps down at renewedAtMono + renewDeadline unless a renewal re-arms it first. */
  deadline: Timer;
}

/**
 * How a term ended: given up by this candidate, lost (its renewals unanswered, another holder),
 * or its record read gone (the one end with nothing to release, known without asking the store).
 */
export type TermEnd = 'given up' | 'lost' | 'record gone';

/** When a write request started, on both clocks: a term counts from here (see landed). */
export interface Stamp {
  wall: Date;
  mono: number;
}

export interface TermsOptions {
  clock: Clock;
  log: Logger;
  notify: Notify;
  renewDeadlineMs: number;
  /** The loop's schedule: a step-down ends its wait, so the gate runs at once. */
  schedule: { wakeUp(): void };
}

export class Terms {
  /** This candidate's latest term, whatever its phase; null before its first. */
  private latest: Term | null = null;

  constructor(private readonly o: TermsOptions) {}

  /** The current term while this candidate leads; null otherwise. */
  get leading(): Term | null {
    return this.latest?.phase === 'leading' ? this.latest : null;
  }

  /** A term that ended and has not been through the end-of-term gate yet. */
  get ended(): Term | null {
    return this.latest?.phase === 'ending' ? this.latest : null;
  }

  /** Monotonic start of the last successful acquire/renew, kept after a step-down (for liveness); null before the first. */
  get lastRenewMono(): number | null {
    return this.latest?.renewedAtMono ?? null;
  }

  /**
   * Leading, and still inside renewDeadline by the clock, not only by the deadline timer: after
   * a pause the answer to a read can be handled before the overdue timer has run.
   */
  sitting(): boolean {
    const t = this.leading;
    return t !== null && this.o.clock.monotonic() < t.renewedAtMono + this.o.renewDeadlineMs;
  }

  /**
   * A write landed. It renews `renewing` only if that term is still the current one (we may
   * have stepped down at the deadline while it was in flight: a late success never revives a
   * term), and it counts from the start of the request: others can have seen the write only
   * after that instant, so renewDeadline from there is still before any of them may take over.
   * `renewing` null: a new term, `freedAtMono` when this candidate saw the lease free (null when
   * it created the record). True when this candidate leads on it.
   */
  landed(got: VersionedRecord, renewing: Term | null, start: Stamp, freedAtMono: number | null): boolean {
    const { clock, log, notify, renewDeadlineMs } = this.o;
    if (renewing !== null && renewing !== this.leading) return false;
    const validUntil = new Date(start.wall.getTime() + renewDeadlineMs);
    if (start.mono + renewDeadlineMs <= clock.monotonic()) {
      // The answer came after the deadline it would have set: never announce a term already past.
      this.stepDown(`the renewal was answered after renewDeadline (${renewDeadlineMs} ms)`, 'lost');
      return false;
    }
    if (renewing) {
      renewing.deadline.cancel();
      Object.assign(renewing, { renewedAt: start.wall, validUntil, renewedAtMono: start.mono, deadline: this.armDeadline(start.mono) });
      log.debug('renewed', { token: renewing.token, validUntil: validUntil.toISOString() });
      notify('onRenewed', publicTerm(renewing));
      return true;
    }
    const token = got.record.leaseTransitions;
    const term: Term = {
      phase: 'leading',
      token,
      acquiredAt: got.record.acquireTime ?? start.wall,
      renewedAt: start.wall,
      validUntil,
      renewedAtMono: start.mono,
      deadline: this.armDeadline(start.mono),
    };
    this.latest = term;
    // How long after the lease freed (as this candidate saw it) the takeover landed: the figure
    // the contention window trades against conflicts. Absent when it was created from nothing.
    const sinceFreeMs = freedAtMono === null ? undefined : Math.round(clock.monotonic() - freedAtMono);
    log.info('became leader', { token, validUntil: validUntil.toISOString(), sinceFreeMs });
    notify('onStartedLeading', sinceFreeMs === undefined ? publicTerm(term) : { ...publicTerm(term), sinceFreeMs });
    return true;
  }

  /**
   * Ends the current term, if any, given up or lost (`end`: what the end-of-term gate may
   * release); the listener hears it before anything else happens. The term then waits for the
   * end-of-term gate, which the loop runs at once.
   */
  stepDown(reason: string, end: TermEnd): void {
    const t = this.leading;
    if (!t) return;
    this.latest = { ...t, phase: 'ending', end };
    t.deadline.cancel();
    this.o.log.warn('stopped leading', { token: t.token, reason });
    this.o.notify('onStoppedLeading', reason);
    this.o.schedule.wakeUp();
  }

  /** The ended term is through its gate: it is over. */
  over(): void {
    const ended = this.ended;
    if (ended) this.latest = { ...ended, phase: 'over' };
  }

  /** Steps down at startMono + renewDeadline unless a later renewal re-arms it first. */
  private armDeadline(startMono: number): Timer {
    const { clock, renewDeadlineMs } = this.o;
    const due = startMono + renewDeadlineMs - clock.monotonic();
    return clock.setTimer(() => {
      if (this.leading?.renewedAtMono === startMono) {
        this.stepDown(`no successful renewal within renewDeadline (${renewDeadlineMs} ms)`, 'lost');
      }
    }, due);
  }
}

function publicTerm(t: Term): LeadershipTerm {
  return { token: t.token, acquiredAt: t.acquiredAt, renewedAt: t.renewedAt, validUntil: t.validUntil };
}
