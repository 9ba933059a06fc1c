/**
 * The import graph's three rules, checked by `npm run lint`: no import cycle (a module that needs
 * itself, through others, before it has finished loading); no upward import: src/, the
 * package's library, never imports from cmd/, bench/, test/, scripts/ or examples/, which are
 * built on it; and inside src/, the layers of LAYERS: a module imports only from its own folder
 * and from layers below its own (CONTRIBUTING "Layers"). Read from the relative import
 * specifiers of every .ts file (static, `export ... from`, `import type` and dynamic `import()`
 * alike); no compiler needed.
 *   node --import tsx scripts/import-graph.ts --check
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ROOTS = ['src', 'cmd', 'bench', 'test', 'scripts', 'examples'];
/** What src/ may import from: itself (and packages and node: modules, which are not files here). */
const LIBRARY = 'src/';

/** Each module a source file imports by a relative path, as written (`./x.js`). */
export function importSpecifiers(source: string): string[] {
  const out: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.[^'"]+)['"]/gm,
    /^\s*import\s*['"](\.[^'"]+)['"]/gm,
    /\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of source.matchAll(re)) out.push(m[1]!);
  return out;
}

/** The graph: each file (relative to the repository, `cmd/x.ts`) and the files it imports. */
export function readGraph(repo = REPO): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(repo, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(path);
      } else if (/\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
        const source = readFileSync(join(repo, path), 'utf8');
        const targets = importSpecifiers(source).map((s) => relative(repo, resolve(repo, dirname(path), s)).replace(/\.(m?)js$/, '.$1ts'));
        graph.set(path, [...new Set(targets)]);
      }
    }
  };
  for (const root of ROOTS) walk(root);
  return graph;
}

/** Every cycle, once each, as the files around it (`a.ts -> b.ts -> a.ts`): Tarjan's strongly connected components. */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.reverse());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** Each import from src/ into what is built on it, as `src/x.ts imports cmd/y.ts`. */
export function upwardImports(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    // A unit test beside the library is never built (tsconfig.build.json): it may use test support.
    if (!from.startsWith(LIBRARY) || from.endsWith('.test.ts')) continue;
    for (const to of targets) if (!to.startsWith(LIBRARY)) out.push(`${from} imports ${to}`);
  }
  return out.sort();
}

/**
 * The layers inside src/, lowest first. Each entry is a folder (ending in `/`) or a file; a file
 * belongs to the longest entry that contains it (`src/backends/sqlite/store.ts` to
 * `src/backends/sqlite/`, `src/backends/lease-store.ts` to `src/backends/`). A module imports
 * from its own entry and from lower layers only: never from a higher layer, nor from another
 * entry of its own layer (the stores know nothing of each other). Why each sits where it does
 * is in CONTRIBUTING "Layers"; the two that surprise: clock above config (it clamps timers to
 * config's MAX_TIMER_MS) and status above election (toLeaderStatus reads the elector's
 * snapshot).
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['src/errors.ts'],
  ['src/util/'],
  ['src/log.ts', 'src/abort.ts'],
  ['src/config/'],
  ['src/clock.ts'],
  ['src/kube/'],
  ['src/backends/'], // the LeaseStore contract and what the stores share
  ['src/backends/sqlite/', 'src/backends/postgres/', 'src/backends/kubernetes/', 'src/testing/'],
  ['src/backends/open-store.ts'], // picks one of the stores
  ['src/health/'],
  ['src/holder/'], // what a lease's candidate and a shard member share: bounded calls, app callbacks, the eligibility check
  ['src/election/'],
  ['src/shards/'], // shard groups: a member runs the election's end-of-term rule, never the reverse
  ['src/status/'],
  ['src/sidecar/', 'src/fencing/'],
  ['src/run/'],
  ['src/operator/'],
  ['src/index.ts'],
];

/** The entry of `layers` a file belongs to, and its layer's index; undefined when none holds it. */
export function layerOf(file: string, layers: readonly (readonly string[])[] = LAYERS): { entry: string; layer: number } | undefined {
  let found: { entry: string; layer: number } | undefined;
  layers.forEach((entries, layer) => {
    for (const entry of entries) {
      const holds = entry.endsWith('/') ? file.startsWith(entry) : file === entry;
      if (holds && (!found || entry.length > found.entry.length)) found = { entry, layer };
    }
  });
  return found;
}

/**
 * Each import inside src/ that goes up or sideways between layers, and each library file no
 * layer holds (a new folder is placed in LAYERS before it is used), and each entry that holds
 * no file (so the list stays the truth).
 */
export function layerBreaches(graph: ReadonlyMap<string, readonly string[]>, layers: readonly (readonly string[])[] = LAYERS): string[] {
  const out: string[] = [];
  const used = new Set<string>();
  const name = (at: { entry: string; layer: number }) => `${at.entry.replace(/^src\//, '').replace(/\.ts$/, '') || 'src'}, layer ${at.layer + 1}`;
  for (const [from, targets] of graph) {
    if (!from.startsWith(LIBRARY)) continue;
    const here = layerOf(from, layers);
    if (!here) {
      out.push(`layer missing: ${from} is in no layer (add its folder to LAYERS in scripts/import-graph.ts)`);
      continue;
    }
    used.add(here.entry);
    // A unit test beside the library is never built: it may use what it tests with.
    if (from.endsWith('.test.ts')) continue;
    for (const to of targets) {
      const there = to.startsWith(LIBRARY) ? layerOf(to, layers) : undefined;
      if (!there || there.entry === here.entry || there.layer < here.layer) continue;
      const how = there.layer === here.layer ? 'its sibling' : 'a higher layer';
      out.push(`layer breach: ${from} (${name(here)}) imports ${to} (${how}: ${name(there)})`);
    }
  }
  for (const entries of layers) for (const entry of entries) if (!used.has(entry)) out.push(`layer entry ${entry} holds no file: remove it from LAYERS`);
  return out.sort();
}

/** One line per breach of the three rules; none when the graph keeps them. */
export function problems(graph: ReadonlyMap<string, readonly string[]>, layers: readonly (readonly string[])[] = LAYERS): string[] {
  return [
    ...cycles(graph).map((c) => `import cycle: ${[...c, c[0]].join(' -> ')}`),
    ...upwardImports(graph).map((u) => `upward import: ${u} (src/ is the library: it imports nothing built on it)`),
    ...layerBreaches(graph, layers).map((b) => (b.startsWith('layer breach') ? `${b}: a layer imports only from those below it` : b)),
  ];
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = problems(readGraph());
  for (const line of found) process.stderr.write(`${line}\n`);
  if (found.length > 0) process.exitCode = 1;
  else if (!process.argv.includes('--check')) process.stdout.write('the import graph has no cycle, no upward import and no import against the layers\n');
}
