/** `--name value` options for the bench and chaos scripts. */
export function option(name: string, dflt: string, args = process.argv.slice(2)): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
}

export const numberOption = (name: string, dflt: number): number => Number(option(name, String(dflt)));

/** min, median and p95 (nearest rank) of a sample, and the sample itself, sorted (for charts). */
export function summary(xs: number[]): { min: number; median: number; p95: number; samples: number[] } {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]!;
  return { min: s[0]!, median: q(0.5), p95: q(0.95), samples: s };
}
