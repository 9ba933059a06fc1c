/**
 * The picture beside the latency tables in docs/benchmarks.md: one row per series (leasehold
 * and client-go, graceful handoff and crash failover), every trial a dot on a logarithmic time
 * axis, the median a bar. Plain SVG written by the bench itself; no library.
 */
export interface Series {
  label: string;
  samples: number[];
  median: number;
  color: string;
}

const WIDTH = 760;
const ROW = 34;
const LEFT = 230;
const RIGHT = 30;
const TOP = 30;
const MIN_MS = 5;
const MAX_MS = 20_000;

function x(ms: number): number {
  const clamped = Math.min(MAX_MS, Math.max(MIN_MS, ms));
  return LEFT + ((Math.log10(clamped) - Math.log10(MIN_MS)) / (Math.log10(MAX_MS) - Math.log10(MIN_MS))) * (WIDTH - LEFT - RIGHT);
}

const escape = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function latencyChart(title: string, series: Series[]): string {
  const height = TOP + series.length * ROW + 40;
  const ticks = [10, 30, 100, 300, 1_000, 3_000, 10_000];
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    `<text x="${LEFT}" y="18" font-weight="bold">${escape(title)}</text>`,
  ];
  const axisY = TOP + series.length * ROW;
  for (const t of ticks) {
    parts.push(`<line x1="${x(t).toFixed(1)}" y1="${TOP - 6}" x2="${x(t).toFixed(1)}" y2="${axisY}" stroke="#ddd"/>`);
    parts.push(`<text x="${x(t).toFixed(1)}" y="${axisY + 16}" text-anchor="middle" fill="#444">${t >= 1000 ? `${t / 1000} s` : `${t} ms`}</text>`);
  }
  series.forEach((s, i) => {
    const cy = TOP + i * ROW + ROW / 2;
    parts.push(`<text x="${LEFT - 10}" y="${cy + 4}" text-anchor="end">${escape(s.label)}</text>`);
    s.samples.forEach((v, j) => {
      // A little vertical spread, by index, so equal values stay visible.
      const dy = ((j % 5) - 2) * 2.5;
      parts.push(`<circle cx="${x(v).toFixed(1)}" cy="${(cy + dy).toFixed(1)}" r="3" fill="${s.color}" fill-opacity="0.55"/>`);
    });
    parts.push(`<line x1="${x(s.median).toFixed(1)}" y1="${cy - 11}" x2="${x(s.median).toFixed(1)}" y2="${cy + 11}" stroke="black" stroke-width="2"/>`);
  });
  parts.push(`<text x="${LEFT}" y="${axisY + 34}" fill="#444">each dot one trial, the bar the median; logarithmic axis</text>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
