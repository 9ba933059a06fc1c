/**
 * What the PostgreSQL store hears on its channel, and what it believes of it: nothing. Any role
 * that can connect to the database may NOTIFY any channel with any payload (PostgreSQL has no
 * permission on channels), so a notification is only a hint to read the row again. Its payload
 * names a lease at most; it never carries a holder, token, expiry or version into a candidate.
 */
import { createHash } from 'node:crypto';
import type { Clock, Timer } from '../clock.js';

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
 * Passes on at most one hint per `intervalMs`: the first at once, the rest of a burst as one
 * hint at the end of the interval. A flood of notifications (forged or not) then costs each
 * candidate at most one read per interval, and a real release is still noticed within it.
 */
export class HintThrottle {
  private lastAt = -Infinity;
  private timer: Timer | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly deliver: () => void,
    /**
     * While true, the interval is `eagerIntervalMs`: the named successor (WatchOptions.eager),
     * whose takeover waits on this hint, should not wait out an interval a renewal's hint began.
     * A flood then costs that one candidate more reads, and the others none more.
     */
    private readonly eager: () => boolean = () => false,
    private readonly eagerIntervalMs = intervalMs,
  ) {}

  hint(): void {
    if (this.timer) return; // one is already due: it covers this one
    const interval = this.eager() ? Math.min(this.eagerIntervalMs, this.intervalMs) : this.intervalMs;
    const wait = this.lastAt + interval - this.clock.monotonic();
    if (wait <= 0) return this.fire();
    this.timer = this.clock.setTimer(() => {
      this.timer = null;
      this.fire();
    }, wait);
  }

  cancel(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private fire(): void {
    this.lastAt = this.clock.monotonic();
    this.deliver();
  }
}
