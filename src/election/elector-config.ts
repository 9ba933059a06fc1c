/**
 * Contention window: when the lease becomes free (released, or expired as a standby sees it),
 * each standby waits a random delay in [0, window] before it tries, and gives up its try when it
 * sees another take the lease first. The delay's distribution grows exponentially over the
 * window (Sift's idea: Jamieson, Balakrishnan, Tay, "Sift: a MAC protocol for event-driven
 * wireless sensor networks", 2006): with few standbys the first try comes late in the window,
 * with many the earliest tries are still few, because the probability of the early instants is
 * small. With the default 32 ms and 100 standbys, about 3 try within the first 5 ms after the
 * first try; with 1 standby the median delay is 28 ms (src/election/contention.test.ts). 32 ms
 * keeps a lone standby's takeover (the delay, then a read and a write) within 50 ms of the
 * expiry (docs/benchmarks.md); 40 ms measured 52 ms at p95 (that file at commit c7a79bf).
 */
export const DEFAULT_CONTENTION_WINDOW_MS = 32;
/**
 * A release is reached through a window this many times longer. A release arrives at every
 * standby as one event, and handling it is a burst of work on whatever the standbys share (on
 * one machine, its cores): the winner's write then takes longer to become visible to the others.
 * At an expiry each standby wakes on its own timer, with no such burst before. Measured with 100
 * standbys on 2 cores and one 40 ms window for both (`npm run bench -- --only scale --standbys 100
 * --scale-setups leasehold` at commit 7bf9479): 31 to 83 conflicting writes per release, 1 to 4
 * per expiry.
 */
export const RELEASE_WINDOW_FACTOR = 5;
/** The window holds this many e-foldings of the delay's density: its steepness. */
const CONTENTION_EFOLDINGS = 5;

/**
 * The delay for a uniform draw u in [0, 1]: the inverse of the truncated exponential
 * distribution F(t) = (e^(k·t/W) − 1) / (e^k − 1) on [0, W]. u = 0 gives 0, u = 1 gives W.
 */
export function contentionDelayMs(u: number, windowMs: number): number {
  if (windowMs <= 0) return 0;
  const k = CONTENTION_EFOLDINGS;
  const clamped = Math.min(1, Math.max(0, u));
  return (windowMs / k) * Math.log1p(clamped * Math.expm1(k));
}
