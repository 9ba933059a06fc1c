/**
 * Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional digits
 * ("2026-12-02T09:15:24.123456Z"). The API server rejects JavaScript's three-digit
 * toISOString form; a JS Date holds milliseconds, so the last three digits are 000.
 */
export function formatMicroTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Parses MicroTime or RFC 3339 Time (both arrive as JSON strings); null when absent. */
export function parseMicroTime(v: unknown): Date | null {
  if (v === undefined || v === null || v === '') return null;
  const d = v instanceof Date ? v : typeof v === 'string' || typeof v === 'number' ? new Date(v) : new Date(NaN);
  return Number.isNaN(d.getTime()) ? null : d;
}
