/**
 * Where an idle sidecar's memory goes, on the image's Node with its flags: a node process that
 * loads more and more of what the sidecar loads, each measured after it settled (RSS, split into
 * anonymous memory and pages of mapped files, the node binary above all; and the V8 heap in use).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ImageNode } from '../lib/image-node.js';
import { rssMB } from '../lib/proc-stats.js';
import { REPO } from '../../test/support/cli.js';
import type { Phase } from '../phase.js';
import type { KubernetesBenchResult } from './kubernetes.js';

export interface MemoryRow {
  what: string;
  rssMB: number;
  anonMB: number;
  fileMB: number;
  heapUsedMB: number;
}

/** node:http as the sidecar loads it: by require (src/util/node-http.ts), not an ESM import. */
const HTTP = [join(REPO, 'dist/src/util/node-http.js'), 'node:https'];
/** What `leasehold sidecar` loads: the CLI's parser, the sidecar, a store, prom-client. */
const SIDECAR = [
  ...HTTP,
  'prom-client',
  join(REPO, 'dist/cmd/cli-parser.js'),
  join(REPO, 'dist/cmd/sidecar-command.js'),
  join(REPO, 'dist/src/backends/kubernetes/store.js'),
];
const STEPS: { what: string; imports: string[]; flags: 'none' | 'image' }[] = [
  { what: 'empty node, no flags', imports: [], flags: 'none' },
  { what: "empty node, the image's flags", imports: [], flags: 'image' },
  { what: '(for comparison: an ESM import of node:http, which loads undici)', imports: ['node:http'], flags: 'image' },
  { what: '+ node:http (by require, as the sidecar loads it), node:https: any HTTP client and server', imports: HTTP, flags: 'image' },
  { what: '+ prom-client (metrics)', imports: [...HTTP, 'prom-client'], flags: 'image' },
  { what: "+ leasehold's own modules (sidecar, Kubernetes store)", imports: SIDECAR, flags: 'image' },
];

function statusKB(pid: number, key: string): number {
  return Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

async function measure(node: ImageNode, imports: string[], flags: string[]): Promise<Omit<MemoryRow, 'what'>> {
  const code = `${imports.map((m) => `await import(${JSON.stringify(m)});`).join('')}
setTimeout(() => { console.log(process.memoryUsage().heapUsed); }, 3000); setInterval(() => {}, 1000);`;
  const child = spawn(node.bin, [...flags, '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'], cwd: REPO });
  const heapUsed = await new Promise<number>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  const pid = child.pid!;
  const row = {
    rssMB: statusKB(pid, 'VmRSS') / 1024,
    anonMB: statusKB(pid, 'RssAnon') / 1024,
    fileMB: statusKB(pid, 'RssFile') / 1024,
    heapUsedMB: heapUsed / 2 ** 20,
  };
  child.kill();
  return row;
}

export async function memoryBreakdown(node: ImageNode): Promise<MemoryRow[]> {
  const rows: MemoryRow[] = [];
  for (const s of STEPS) rows.push({ what: s.what, ...(await measure(node, s.imports, s.flags === 'image' ? node.flags : [])) });
  return rows;
}

export const MEMORY_HEADING = '### Where the memory goes';

const IMAGE_ROW = 'the idle Kubernetes standby (median, from the idle window above)';
const JITLESS_ROW = 'the same with `--jitless` alone';

export function memoryMarkdown(rows: MemoryRow[], node: ImageNode, standby: { jitlessOnly: number; image: number }): string {
  const f1 = (n: number) => n.toFixed(1);
  return `${MEMORY_HEADING}

Node ${node.version}, flags \`${node.flags.join(' ')}\` (the image's) unless said otherwise; each row a
fresh process that imports what is listed and idles for 3 s. "File" is pages of mapped files,
almost all the node binary's own code (shared between processes, and reclaimable); "anon" is
memory of this process alone (the V8 heap, malloc).

| process | RSS MiB | anon MiB | file MiB | V8 heap used MiB |
| --- | ---: | ---: | ---: | ---: |
${rows.map((r) => `| ${r.what} | ${f1(r.rssMB)} | ${f1(r.anonMB)} | ${f1(r.fileMB)} | ${f1(r.heapUsedMB)} |`).join('\n')}
| ${IMAGE_ROW} | ${f1(standby.image)} | | | |
| ${JITLESS_ROW} | ${f1(standby.jitlessOnly)} | | | |
`;
}

/** RSS of a `node` process that loads nothing, after it settled: the floor under any Node sidecar. */
export async function emptyNodeRssMB(n: ImageNode, flags: string[]): Promise<number> {
  const child = spawn(n.bin, [...flags, '-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 3_000));
  const mb = rssMB(child.pid!);
  child.kill();
  return mb;
}

export interface MemoryResult {
  markdown: string;
  rows: MemoryRow[];
  /** An empty node's RSS without flags and with the image's, for the summary table. */
  emptyNodeMB: number;
  emptyNodeFlagsMB: number;
}

/** The two idle-standby rows of a docs/benchmarks.md, kept when the breakdown is measured without the Kubernetes phase. */
export function keptStandbyRows(doc: string): { image: number; jitlessOnly: number } {
  const kept = (label: string) =>
    Number(
      doc
        .split('\n')
        .find((l) => l.startsWith(`| ${label} |`))
        ?.split('|')[2]
        ?.trim() ?? NaN,
    );
  const image = kept(IMAGE_ROW);
  const jitlessOnly = kept(JITLESS_ROW);
  if (Number.isNaN(image + jitlessOnly)) throw new Error('docs/benchmarks.md has no idle standby rows to keep: run the whole bench');
  return { image, jitlessOnly };
}

export const memoryPhase: Phase<MemoryResult> = {
  name: 'memory',
  what: () => "where an idle sidecar's memory goes: node processes that load more and more of what it loads",
  needsRoot: false,
  inFullRun: true,
  estimateS: () => 40,
  heading: () => MEMORY_HEADING,
  section: (r, ctx) =>
    `${r.markdown}\n_The breakdown was re-measured by \`npm run bench -- --only memory --splice\` on ${ctx.today}; the two standby rows are the full run's._\n`,
  async run(ctx) {
    const node = ctx.node();
    // The standby rows come from this run's idle windows when it had them, else from the last full run.
    const kube = ctx.results.get('kubernetes') as KubernetesBenchResult | undefined;
    const standby = kube?.idle.length
      ? {
          image: kube.idle.find((r) => r.impl === 'leasehold')!.standbys[0]!.rssMedianMB,
          jitlessOnly: kube.idle.find((r) => r.impl === 'leasehold-jitless')!.standbys[0]!.rssMedianMB,
        }
      : keptStandbyRows(readFileSync(ctx.docPath, 'utf8'));
    const rows = await memoryBreakdown(node);
    return {
      markdown: memoryMarkdown(rows, node, standby),
      rows,
      emptyNodeMB: await emptyNodeRssMB(node, []),
      emptyNodeFlagsMB: await emptyNodeRssMB(node, node.flags),
    };
  },
};
