/**
 * What the PostgreSQL store hears on its channel, and what it believes of it: nothing. Any role
 * that can connect to the database may NOTIFY any channel with any payload (PostgreSQL has no
 * permission on channels), so a notification is only a hint to read the row again. Its payload
 * names a lease at most; it never carries a holder, token, expiry or version into a candidate.
 */
import { createHash } from 'node:crypto';
import type { Clock, Timer } from '../../clock.js';

/**
 * The channel of one table: `leasehold_` and the first 40 hex digits (160 bits) of the SHA-256
 * of `schema.table`, 50 characters, under PostgreSQL's 63. Two tables never share one (the old
 * `leasehold_<schema>_<table>` did: `app_one.leases` and `app.one_leases`, and any two names
 * with the same first 53 characters), so a candidate never hears another table's leader.
 */
export function channelName(schema: string, table: string): string {
  return `leasehold_${createHash('sha256').update(`${schema}.${table}`).digest('hex').slice(0, 40)}`;
}

/**
 * The lease a notification is about. The trigger (and leasehold's own writes on a table without
 * it) send the bare lease name; a JSON payload (the trigger of an earlier leasehold, or anybody's) is
 * read for its `name` only. Anything else in it is ignored on purpose.
 */
export function notifiedLease(payload: string): string {
  if (!payload.startsWith('{')) return payload;
  try {
    const parsed = JSON.parse(payload) as { name?: unknown };
    return typeof parsed.name === 'string' ? parsed.name : '';
  } catch {
    return '';
  }
}

/**
 * Passes hints on at the rate of one per `intervalMs`, with a small burst: a token bucket of
 * `burst` tokens, one refilled per interval; a hint with no token left is passed on when the
 * next token comes, as one for all that arrived meanwhile. A flood of notifications (forged or
 * not) then costs each candidate at most `burst` reads and then one per interval. The burst is
 * for the release that follows a renewal closely: with one token, that release waited out the
 * interval the renewal's hint began (up to 250 ms), and a graceful handoff with it.
 */
export class HintThrottle {
  private tokens: number;
  /** When the bucket was last topped up (monotonic ms). */
  private refilledAt: number;
  private timer: Timer | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly deliver: () => void,
    private readonly burst = 3,
  ) {
    this.tokens = burst;
    this.refilledAt = clock.monotonic();
  }

  hint(): void {
    if (this.timer) return; // one is already due: it covers this one
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      this.deliver();
      return;
    }
    const wait = this.refilledAt + this.intervalMs - this.clock.monotonic();
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      this.refill();
      // A timer may fire a little early: the token it waited for is charged all the same.
      if (this.tokens >= 1) this.tokens -= 1;
      else this.refilledAt += this.intervalMs;
      this.deliver();
    }, wait);
  }

  cancel(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private refill(): void {
    const now = this.clock.monotonic();
    const earned = Math.floor((now - this.refilledAt) / this.intervalMs);
    if (earned <= 0) return;
    this.tokens = Math.min(this.burst, this.tokens + earned);
    this.refilledAt = this.tokens === this.burst ? now : this.refilledAt + earned * this.intervalMs;
  }
}
