/**
 * Contention window: when the lease becomes free (released, or expired as a standby sees it),
 * each standby waits a random delay in [0, window] (contentionDelayMs below). Its default lives
 * with the other defaults (src/config/election-options.ts), where the option rules read it.
 */
export { DEFAULT_CONTENTION_WINDOW_MS } from '../config/election-options.js';

/**
 * A release is reached through a window this many times longer. A release arrives at every
 * standby as one event, and handling it is a burst of work on whatever the standbys share (on
 * one machine, its cores): the winner's write then takes longer to become visible to the others.
 * At an expiry each standby wakes on its own timer, with no such burst before. With one window
 * for both, many standbys made tens of conflicting writes per release and only a few per
 * expiry; the longer window spreads the turns past the burst (docs/benchmarks.md, "One lease,
 * 100 standbys", counts the conflicts per handoff).
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
