/**
 * The one end-of-term rule (docs/design.md, "The end-of-term gate"), for a lease's term and a
 * shard's alike: the term's work drains, bounded in time; a term whose work was seen to stop may
 * be released, however it ended (given up or lost), by a compare-and-swap from the version its
 * holder last wrote, retried while the store does not answer until the term could have expired;
 * one whose work was not seen to stop is held until it could have expired (its last renewal + the
 * lease duration), the one moment after which a next term may begin while its work may still run.
 * The callers differ only where the table there says: the lease's gate (end-of-term.ts) and each
 * shard's (src/shards/shard-term-ends.ts).
 */
import { sleep, type Clock, type Timer } from '../clock.js';

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

/** One term's drain among several bounded together: given the signal that aborts at the shared bound. */
export type BoundedDrain = (bound: AbortSignal) => Promise<boolean | void>;

/**
 * drainedWithin for many terms ended together (the shards a member's pass gives up): each
 * drain's verdict as drainedWithin gives it, but one timer for them all, not one per term. At the
 * bound the signal aborts, so the waits the drains began end with it (they need no timer of
 * their own); the timer is cancelled once every drain has answered. Each verdict comes as soon as
 * its own drain answers: a quick shard is not held back by a slow one.
 */
export function drainedEachWithin(clock: Clock, timeoutMs: number, drains: readonly (BoundedDrain | null | undefined)[]): Promise<boolean>[] {
  if (timeoutMs === 0 || drains.every((d) => !d)) return drains.map(() => Promise.resolve(true));
  const bound = new AbortController();
  const timer = clock.setTimer(() => bound.abort(), timeoutMs);
  const boundPassed = new Promise<false>((resolve) => bound.signal.addEventListener('abort', () => resolve(false), { once: true }));
  let open = drains.length;
  const answered = () => {
    if (--open === 0) timer.cancel();
  };
  return drains.map((drain) => {
    if (!drain) {
      answered();
      return Promise.resolve(true);
    }
    const stopped = Promise.resolve()
      .then(() => drain(bound.signal))
      .then(
        (r) => r !== false,
        () => false,
      );
    return Promise.race([stopped, boundPassed]).finally(answered);
  });
}

/** When a term whose work was not seen to stop could have expired for the others: its last renewal (as sent) + the lease duration. */
export function couldHaveExpiredAtMono(lastRenewalMono: number, leaseDurationMs: number): number {
  return lastRenewalMono + leaseDurationMs;
}

/**
 * What one release attempt found: it landed; it cannot land (the record is not the holder's any
 * more, or the store refuses the released record); or the store did not answer, and another
 * attempt may land.
 */
export type ReleaseAttempt = 'released' | 'final' | 'unanswered';

/**
 * Whether round `round` of a term's release (0: the first, then one each retryPeriod) may wait on
 * a lock another client holds (CallOptions.waitForLock). Only the first round for a term given up
 * does, as any write does: a stop's or a move's release should land though a neighbour is writing
 * at that moment. A lost term's rounds (its store just failed to answer, or another holds the
 * record) and every later round never wait: on SQLite such a wait is up to the busy timeout, and
 * a holder retrying each retryPeriod for the rest of its lease would spend most of that time
 * waiting on a lock it has no reason to think is free. A round that does not wait
 * ends at its first unanswered write: asked again at once, the lock would still be held; the
 * next round comes a retryPeriod later.
 */
export function releaseWaitsForLock(end: 'given up' | 'lost', round: number): boolean {
  return end === 'given up' && round === 0;
}

/**
 * The release of a term whose work stopped, given up or lost alike: tried at once, then every
 * `retryMs` while the store does not answer, until `untilMono` (the term could have expired: from
 * then on the others take it without a release, so one would shorten nothing). Safe at any moment
 * of that window because each attempt is a compare-and-swap from a version the holder itself
 * wrote: it lands only if nobody wrote the record since. `stop` ends the retries (the holder is
 * exiting: it does not wait on a store that does not answer; the term expires as after a crash).
 * `attempt` is told its round (releaseWaitsForLock). Resolves with the last attempt's answer.
 */
export async function releaseUntil(
  clock: Clock,
  untilMono: number,
  retryMs: number,
  attempt: (round: number) => Promise<ReleaseAttempt>,
  stop?: AbortSignal,
): Promise<ReleaseAttempt> {
  for (let round = 0; ; round++) {
    const answer = await attempt(round);
    const leftMs = untilMono - clock.monotonic();
    if (answer !== 'unanswered' || leftMs <= 0 || stop?.aborted) return answer;
    await sleep(clock, Math.min(retryMs, leftMs), stop);
    if (clock.monotonic() >= untilMono || stop?.aborted) return answer;
  }
}
