/**
 * Pure helpers of the operator's admission bench (bench/scenarios/operator-admission.ts):
 * Prometheus histograms read from a /metrics text, subtracted (the counters are cumulative since
 * the process started) and read as "what fraction at or under a bucket bound", since a histogram
 * can only bound a quantile between two of its buckets.
 */

/** One histogram: cumulative counts by upper bound (seconds, ascending, +Inf last), its sum and count. */
export interface Histogram {
  buckets: { le: number; count: number }[];
  sum: number;
  count: number;
}

/** The labels of one sample line, `{a="x",b="y"}` → { a: 'x', b: 'y' }. */
function labelsOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) out[m[1]!] = m[2]!;
  return out;
}

/**
 * The histogram `name` in a Prometheus text exposition, summed over every series whose labels
 * include `match` (e.g. one webhook's name), so that one call reads a metric split by labels the
 * caller does not care about. An absent metric reads as empty (no buckets, count 0).
 */
export function parseHistogram(text: string, name: string, match: Record<string, string> = {}): Histogram {
  const byLe = new Map<number, number>();
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || !m[1]!.startsWith(name)) continue;
    const suffix = m[1]!.slice(name.length);
    if (suffix !== '_bucket' && suffix !== '_sum' && suffix !== '_count') continue;
    const labels = labelsOf(m[2] ?? '');
    if (!Object.entries(match).every(([k, v]) => labels[k] === v)) continue;
    const value = Number(m[3]);
    if (suffix === '_sum') sum += value;
    else if (suffix === '_count') count += value;
    else {
      const le = labels['le'] === '+Inf' ? Infinity : Number(labels['le']);
      byLe.set(le, (byLe.get(le) ?? 0) + value);
    }
  }
  const buckets = [...byLe.entries()].sort((a, b) => a[0] - b[0]).map(([le, c]) => ({ le, count: c }));
  return { buckets, sum, count };
}

/** What was observed between two readings of the same histogram (after − before, bucket by bucket). */
export function histogramDelta(before: Histogram, after: Histogram): Histogram {
  const was = new Map(before.buckets.map((b) => [b.le, b.count]));
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (was.get(b.le) ?? 0) })),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/** Adds histograms with the same buckets (e.g. one per operator replica). */
export function histogramSum(hs: Histogram[]): Histogram {
  const byLe = new Map<number, number>();
  for (const h of hs) for (const b of h.buckets) byLe.set(b.le, (byLe.get(b.le) ?? 0) + b.count);
  return {
    buckets: [...byLe.entries()].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count })),
    sum: hs.reduce((a, h) => a + h.sum, 0),
    count: hs.reduce((a, h) => a + h.count, 0),
  };
}

/** The fraction of observations at or under the bucket bound `le` (seconds); NaN with no observation or no such bucket. */
export function fractionAtOrUnder(h: Histogram, le: number): number {
  const b = h.buckets.find((x) => x.le === le);
  return h.count > 0 && b ? b.count / h.count : NaN;
}

/**
 * The bucket a quantile falls in: `upper` is the smallest bound with at least q of the
 * observations at or under it, `lower` the bound before it (0 for the first). The quantile lies
 * in (lower, upper]; that is all a histogram can say. Null with no observation.
 */
export function quantileBucket(h: Histogram, q: number): { lower: number; upper: number } | null {
  if (h.count <= 0) return null;
  let lower = 0;
  for (const b of h.buckets) {
    if (b.count >= q * h.count) return { lower, upper: b.le };
    lower = b.le;
  }
  return { lower, upper: Infinity };
}

/** Seconds as milliseconds, without trailing zeros: 0.00025 → "0.25", 0.005 → "5". */
export const msText = (s: number): string => String(Number((s * 1000).toFixed(3)));

/** "(5, 25] ms" for a bucket given in seconds. */
export function describeBucket(b: { lower: number; upper: number } | null): string {
  if (!b) return 'n/a (no call observed)';
  return `(${msText(b.lower)}, ${b.upper === Infinity ? '∞' : msText(b.upper)}] ms`;
}

/**
 * Whether p99 ≤ goal, from the API server's histogram where its buckets decide; where the goal
 * falls inside the p99's bucket, from the client's latencies (labelled p99 − unlabelled p99).
 */
export function admissionVerdict(
  api: { lower: number; upper: number } | null,
  clientDiffMs: number,
  goalMs: number,
): { met: boolean; by: 'the API server histogram' | 'the client latencies' } {
  if (api && api.upper * 1000 <= goalMs) return { met: true, by: 'the API server histogram' };
  if (api && api.lower * 1000 >= goalMs) return { met: false, by: 'the API server histogram' };
  return { met: clientDiffMs <= goalMs, by: 'the client latencies' };
}
