/**
 * The shard releases the store did not answer since the member last said so, told as one line
 * per turn: how many, a few of their numbers, and the last reason. A line per shard per round
 * was 64 lines a second for 64 shards on a locked SQLite file, and would be thousands at N = 4096,
 * for as long as the store stays away: the one thing worth reading drowned in its copies.
 */
import type { Logger } from '../log.js';

/** How many shard numbers a line names: enough to recognise them, not the whole group. */
const NAMED = 8;

export class ReleaseFailures {
  private shards = new Set<number>();
  private reason = '';

  /** A release of shard `shard` went unanswered (it is kept, and tried again at a later turn). */
  note(shard: number, reason: string): void {
    this.shards.add(shard);
    this.reason = reason;
  }

  /** Says what was noted since the last call, in one warn line, and starts over; nothing when none. */
  tell(log: Logger): void {
    if (this.shards.size === 0) return;
    const sorted = [...this.shards].sort((a, b) => a - b);
    log.warn('releasing shards failed: each is tried again once the store answers', {
      count: sorted.length,
      shards: sorted.slice(0, NAMED).join(',') + (sorted.length > NAMED ? ',…' : ''),
      reason: this.reason,
    });
    this.shards = new Set();
  }
}
