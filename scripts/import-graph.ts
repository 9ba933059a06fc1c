/**
 * The import graph's two rules, checked by `npm run lint`: no import cycle (a module that needs
 * itself, through others, before it has finished loading), and no upward import: src/, the
 * package's library, never imports from cmd/, bench/, test/, scripts/ or examples/, which are
 * built on it. Read from the relative import specifiers of every .ts file (static, `export ...
 * from`, `import type` and dynamic `import()` alike); no compiler needed.
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

/** One line per breach of the two rules; none when the graph keeps them. */
export function problems(graph: ReadonlyMap<string, readonly string[]>): string[] {
  return [
    ...cycles(graph).map((c) => `import cycle: ${[...c, c[0]].join(' -> ')}`),
    ...upwardImports(graph).map((u) => `upward import: ${u} (src/ is the library: it imports nothing built on it)`),
  ];
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const found = problems(readGraph());
  for (const line of found) process.stderr.write(`${line}\n`);
  if (found.length > 0) process.exitCode = 1;
  else if (!process.argv.includes('--check')) process.stdout.write('the import graph has no cycle and no upward import\n');
}
