const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses a Go-style duration ("15s", "500ms", "1m30s", "1.5s") into milliseconds.
 * Returns null when the text is not one; a bare number is refused (is "15" seconds or ms?).
 * Decimal arithmetic on the digits, not floats: "1.005s" is 1005 (a float product gives
 * 1004.9999999999999, which the whole-milliseconds rule would refuse), the same as the Helm
 * charts compute. A duration finer than a millisecond comes back as a non-integer within 1 ms
 * of it, so durationRangeError refuses it however small the excess ("1.0000000000000001s").
 */
export function parseDuration(text: string): number | null {
  const s = text.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(s)) return null;
  let whole = 0n;
  let finer = false;
  for (const m of s.matchAll(/(\d+)(?:\.(\d+))?(ms|s|m|h)/g)) {
    const fraction = m[2] ?? '';
    // The value × 10^digits, in milliseconds: exact for any number of digits.
    const scaled = BigInt(m[1]! + fraction) * BigInt(UNITS[m[3]!]!);
    const divisor = 10n ** BigInt(fraction.length);
    whole += scaled / divisor;
    if (scaled % divisor !== 0n) finer = true;
  }
  return finer ? Number(whole) + 0.5 : Number(whole);
}

/** The longest a Node timer can wait (2^31 − 1 ms, about 24.8 days); longer ones fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Why `ms` cannot be a duration here, or null when it can: whole milliseconds, at most MAX_TIMER_MS. */
export function durationRangeError(ms: number, min = 1): string | null {
  if (!Number.isInteger(ms)) return 'must be a whole number of milliseconds (no finer than 1ms)';
  if (ms < min || ms > MAX_TIMER_MS)
    return `must be from ${formatDuration(min)} to ${formatDuration(MAX_TIMER_MS)} (2^31 − 1 ms, the longest a timer can wait)`;
  return null;
}

/** 15000 → "15s", 500 → "500ms", 90000 → "1m30s". */
export function formatDuration(ms: number): string {
  if (ms < 1000 || ms % 1000 !== 0) return `${ms}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
}
