/**
 * A shard member's session (docs/design.md, "Who owns what"): its member slot and the slot's
 * token, the slot record's version, its state, and how long it stays valid. It is valid, for the
 * member, until the older of its last successful heartbeat and its last successful list (both as
 * sent) + renewDeadline; a deadline timer ends it there unless renewed first, and a session that
 * has expired stays expired (`valid` asks the clock, not the timer). What ends a session's shards
 * is the member's: this module only says when.
 */
import type { Clock, Timer } from '../clock.js';
import type { MemberState } from '../backends/group-store.js';
import type { SessionId } from './group-view.js';

interface Moment {
  mono: number;
  wall: Date;
}

/** One session: one object from the join to its end, whose version, state and renewal a heartbeat moves on in place. */
export interface Session extends SessionId {
  version: string;
  state: MemberState;
  /** Monotonic and wall start of the last successful heartbeat (or the join). */
  renewedAtMono: number;
  renewedAt: Date;
  /** When the last heartbeat was sent, answered or not (heartbeats are paced by it); null: one is due now. */
  heartbeatSentMono: number | null;
  /** Ends the session at its validity's end (basis() + renewDeadline) unless renewed first. */
  deadline: Timer | null;
}

export class MemberSession {
  /** This member's session; null while it has none. */
  private session: Session | null = null;
  /** When the last successful list was sent: with the heartbeat, what a session's validity counts from. */
  private listedAt: Moment | null = null;
  /**
   * The session that ended last (lost or left): its slot may still name it, and the others may
   * count it live until it could have expired, but this member knows it is over.
   */
  private endedLast: SessionId | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly renewDeadlineMs: number,
  ) {}

  get current(): Session | null {
    return this.session;
  }

  /** A slot was taken at `at` (the write's start): the session it starts, not yet armed. */
  begin(slot: number, session: number, version: string, at: Moment): Session {
    this.session = { slot, session, version, state: 'active', renewedAtMono: at.mono, renewedAt: at.wall, heartbeatSentMono: at.mono, deadline: null };
    return this.session;
  }

  /** The session is over (lost or left): returns it, its deadline cancelled; null when there was none. */
  end(): Session | null {
    const m = this.session;
    if (!m) return null;
    this.session = null;
    this.endedLast = { slot: m.slot, session: m.session };
    m.deadline?.cancel();
    return m;
  }

  /** The session that ended last; null before any did. */
  get ended(): SessionId | null {
    return this.endedLast;
  }

  /** A list sent at `at` succeeded. */
  listed(at: Moment): void {
    this.listedAt = at;
  }

  /**
   * What a session's validity counts from: the older of its last successful heartbeat and its
   * last successful list, both as sent. The heartbeat shows the slot is still ours; the list, that
   * the shard records still name us (one deleted under us is seen within a list).
   */
  basis(m: Session): Moment {
    const l = this.listedAt;
    return l && l.mono < m.renewedAtMono ? l : { mono: m.renewedAtMono, wall: m.renewedAt };
  }

  /** Whether `m` is the current session and its validity has not ended, now. */
  valid(m: Session): boolean {
    return this.session === m && this.clock.monotonic() < this.basis(m).mono + this.renewDeadlineMs;
  }

  /** When `m`'s validity ends unless renewed (monotonic): valid(m) is false from then. */
  validUntilMono(m: Session): number {
    return this.basis(m).mono + this.renewDeadlineMs;
  }

  /** When `m`'s validity ends unless renewed, as a wall time. */
  validUntil(m: Session): Date {
    return new Date(this.basis(m).wall.getTime() + this.renewDeadlineMs);
  }

  /**
   * A heartbeat or a list succeeded: the current session's deadline moves on to its validity's
   * end, where `over` is called if the session is still current and not renewed since. Returns
   * the new validUntil; null without a session.
   */
  rearm(over: () => void): Date | null {
    const m = this.session;
    if (!m) return null;
    const b = this.basis(m);
    m.deadline?.cancel();
    m.deadline = this.clock.setTimer(
      () => {
        if (this.session === m && this.clock.monotonic() >= this.basis(m).mono + this.renewDeadlineMs) over();
      },
      b.mono + this.renewDeadlineMs - this.clock.monotonic(),
    );
    return new Date(b.wall.getTime() + this.renewDeadlineMs);
  }
}
