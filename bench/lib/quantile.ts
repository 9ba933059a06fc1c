/**
 * The bench's one definition of a quantile: nearest rank, the smallest value with at least a
 * fraction p of the sample at or under it. Every figure in docs/benchmarks.md (median, p10, p95,
 * p99) is read through it, so two tables never disagree on what "median" means.
 */

/** Nearest-rank quantile of a non-empty sample (any order), 0 < p <= 1. */
export function quantile(xs: readonly number[], p: number): number {
  if (xs.length === 0) throw new Error('quantile of an empty sample');
  return atRank(sorted(xs), p);
}

/** min, median and p95 of a sample, and the sample itself, sorted (for charts). */
export function summary(xs: readonly number[]): { min: number; median: number; p95: number; samples: number[] } {
  const s = sorted(xs);
  return { min: s[0]!, median: atRank(s, 0.5), p95: atRank(s, 0.95), samples: s };
}

export interface Quantiles {
  n: number;
  median: number;
  p95: number;
  p99: number;
  max: number;
}

/** Median, p95, p99 and max of a non-empty sample. */
export function quantiles(xs: readonly number[]): Quantiles {
  if (xs.length === 0) throw new Error('quantiles of an empty sample');
  const s = sorted(xs);
  return { n: s.length, median: atRank(s, 0.5), p95: atRank(s, 0.95), p99: atRank(s, 0.99), max: s[s.length - 1]! };
}

const sorted = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);

function atRank(s: readonly number[], p: number): number {
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}
