/**
 * Draws docs/dashboard.svg from the chart's Grafana dashboard (its panels' titles, kinds and grid
 * positions), so docs/observability.md can show the dashboard's layout without a Grafana to take a
 * screenshot in. `--check` fails when the picture is out of date (npm run lint).
 *   node --import tsx scripts/dashboard-picture.ts [--check]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DASHBOARD = resolve(REPO, 'deploy/helm/leasehold/dashboards/leasehold.json');
const PICTURE = resolve(REPO, 'docs/dashboard.svg');

interface Panel {
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
}

/** Grafana's grid: 24 columns; a row unit is 30 px high. */
const COLUMN_PX = 40;
const ROW_PX = 30;
const GAP_PX = 4;

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function dashboardSvg(dashboard: { title: string; panels: Panel[] }): string {
  const width = 24 * COLUMN_PX;
  const bottom = Math.max(...dashboard.panels.map((p) => p.gridPos.y + p.gridPos.h));
  const top = 36;
  const height = top + bottom * ROW_PX + GAP_PX;
  const boxes = dashboard.panels.map((p) => {
    const x = p.gridPos.x * COLUMN_PX + GAP_PX;
    const y = top + p.gridPos.y * ROW_PX + GAP_PX;
    const w = p.gridPos.w * COLUMN_PX - 2 * GAP_PX;
    const h = p.gridPos.h * ROW_PX - 2 * GAP_PX;
    // A stat panel shows one number; a time series a line over time: sketch which.
    const sketch =
      p.type === 'stat'
        ? `<text x="${x + w / 2}" y="${y + h / 2 + 14}" font-size="28" text-anchor="middle" fill="#73bf69">·</text>`
        : `<polyline fill="none" stroke="#73bf69" stroke-width="2" points="${[0, 0.2, 0.4, 0.6, 0.8, 1]
            .map((f, i) => `${Math.round(x + 12 + f * (w - 24))},${Math.round(y + h - 16 - (i % 2 ? 0.45 : 0.2) * (h - 40))}`)
            .join(' ')}"/>`;
    return [
      `<rect x="${x}" y="${y}" width="${w}" height="${h}" rx="3" fill="#181b1f" stroke="#2c3235"/>`,
      `<text x="${x + 10}" y="${y + 20}" font-size="13" fill="#ccccdc">${escapeXml(p.title)}</text>`,
      `<text x="${x + w - 10}" y="${y + 20}" font-size="11" text-anchor="end" fill="#6e7180">${escapeXml(p.type)}</text>`,
      sketch,
    ].join('\n  ');
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `  <rect width="${width}" height="${height}" fill="#111217"/>`,
    // The chart fills the title in at render time (e.g. `leasehold: billing (jobs)`).
    `  <text x="${GAP_PX + 6}" y="24" font-size="16" fill="#ccccdc">${escapeXml(dashboard.title.replace('__TITLE__', 'leasehold: <lease> (<namespace>)'))}</text>`,
    ...boxes.map((b) => `  ${b}`),
    '</svg>',
    '',
  ].join('\n');
}

const main = fileURLToPath(import.meta.url) === resolve(process.argv[1] ?? '');
if (main) {
  const svg = dashboardSvg(JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { title: string; panels: Panel[] });
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(PICTURE, 'utf8');
    } catch {
      // missing: out of date
    }
    if (current !== svg) {
      process.stderr.write('docs/dashboard.svg is out of date: run node --import tsx scripts/dashboard-picture.ts\n');
      process.exit(1);
    }
  } else {
    writeFileSync(PICTURE, svg);
    process.stdout.write(`wrote ${PICTURE}\n`);
  }
}
