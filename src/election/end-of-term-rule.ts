/**
 * The one end-of-term rule (docs/design.md, "The end-of-term gate"), for a lease's term and a
 * shard's alike: the term's work drains, bounded in time; a term whose work was seen to stop may
 * be released; one whose work was not seen to stop is held until it could have expired (its last
 * renewal + the lease duration), the one moment after which a next term may begin while its work
 * may still run. The callers differ only where the table there says: the lease's gate
 * (end-of-term.ts) and each shard's (src/shards/shard-member.ts).
 */
import type { Clock, Timer } from '../clock.js';

/**
 * Whether the work stopped within `timeoutMs`: true without a drain (no work is known) or with
 * a bound of 0; false past the bound, when the drain says it cannot know (false), and when it
 * throws or rejects (the work may still run). The timer never outlives the wait.
 */
export async function drainedWithin(clock: Clock, timeoutMs: number, drain: (() => Promise<boolean | void>) | null | undefined): Promise<boolean> {
  if (!drain || timeoutMs === 0) return true;
  let timer: Timer | undefined;
  const bound = new Promise<false>((resolve) => (timer = clock.setTimer(() => resolve(false), timeoutMs)));
  const stopped = Promise.resolve()
    .then(drain)
    .then(
      (r) => r !== false,
      () => false,
    );
  try {
    return await Promise.race([stopped, bound]);
  } finally {
    timer?.cancel();
  }
}

/** When a term whose work was not seen to stop could have expired for the others: its last renewal (as sent) + the lease duration. */
export function couldHaveExpiredAtMono(lastRenewalMono: number, leaseDurationMs: number): number {
  return lastRenewalMono + leaseDurationMs;
}
