/**
 * Where an idle sidecar's memory goes, on the image's Node with its flags: a node process that
 * loads more and more of what the sidecar loads, each measured after it settled (RSS, split into
 * anonymous memory and pages of mapped files, the node binary above all; and the V8 heap in use).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ImageNode } from '../lib/image-node.js';
import { REPO } from '../../test/support/cli.js';

export interface MemoryRow {
  what: string;
  rssMB: number;
  anonMB: number;
  fileMB: number;
  heapUsedMB: number;
}

/** node:http as the sidecar loads it: by require (src/util/node-http.ts), not an ESM import. */
const HTTP = [join(REPO, 'dist/src/util/node-http.js'), 'node:https'];
/**
 * What `leasehold sidecar` loads with plain flags: cmd/leasehold.js's fast path, the sidecar, a
 * store, prom-client; no yargs (cmd/sidecar-fast-path.ts).
 */
const SIDECAR = [
  ...HTTP,
  'prom-client',
  join(REPO, 'dist/cmd/sidecar-fast-path.js'),
  join(REPO, 'dist/cmd/sidecar-command.js'),
  join(REPO, 'dist/src/backends/kubernetes-store.js'),
];
const STEPS: { what: string; imports: string[]; flags: 'none' | 'image' }[] = [
  { what: 'empty node, no flags', imports: [], flags: 'none' },
  { what: "empty node, the image's flags", imports: [], flags: 'image' },
  { what: '(for comparison: an ESM import of node:http, which loads undici)', imports: ['node:http'], flags: 'image' },
  { what: '+ node:http (by require, as the sidecar loads it), node:https: any HTTP client and server', imports: HTTP, flags: 'image' },
  { what: '+ prom-client (metrics)', imports: [...HTTP, 'prom-client'], flags: 'image' },
  { what: "+ leasehold's own modules (sidecar, Kubernetes store)", imports: SIDECAR, flags: 'image' },
  {
    what: '(for comparison: the same + yargs, which `leasehold sidecar` loads only for input its fast path leaves to it)',
    imports: [...SIDECAR, 'yargs'],
    flags: 'image',
  },
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

export function memoryMarkdown(rows: MemoryRow[], node: ImageNode, standby: { jitlessOnly: number; image: number }): string {
  const f1 = (n: number) => n.toFixed(1);
  return `### Where the memory goes

Node ${node.version}, flags \`${node.flags.join(' ')}\` (the image's) unless said otherwise; each row a
fresh process that imports what is listed and idles for 3 s. "File" is pages of mapped files,
almost all the node binary's own code (shared between processes, and reclaimable); "anon" is
memory of this process alone (the V8 heap, malloc).

| process | RSS MiB | anon MiB | file MiB | V8 heap used MiB |
| --- | ---: | ---: | ---: | ---: |
${rows.map((r) => `| ${r.what} | ${f1(r.rssMB)} | ${f1(r.anonMB)} | ${f1(r.fileMB)} | ${f1(r.heapUsedMB)} |`).join('\n')}
| the idle Kubernetes standby (median, from the idle window above) | ${f1(standby.image)} | | | |
| the same with \`--jitless\` alone | ${f1(standby.jitlessOnly)} | | | |
`;
}
