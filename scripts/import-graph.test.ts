import { it } from 'node:test';
import assert from 'node:assert/strict';
import { LAYERS, cycles, importSpecifiers, layerBreaches, layerOf, problems, readGraph, upwardImports } from './import-graph.js';

/** One layer holding all of src/: the tests of the first two rules leave the third aside. */
const FLAT = [['src/']];

it('reads every relative import: static, multi-line, type-only, re-exported, bare and dynamic', () => {
  const source = [
    "import { a } from './a.js';",
    'import {',
    '  b,',
    "} from '../b.js';",
    "import type { C } from './c.js';",
    "export { d } from './d.js';",
    "import './e.js';",
    "const f = await import('./f.js');",
    "import { parseArgs } from 'node:util';",
    "import yaml from 'js-yaml';",
  ].join('\n');
  assert.deepEqual(importSpecifiers(source).sort(), ['../b.js', './a.js', './c.js', './d.js', './e.js', './f.js']);
});

it('finds a cycle, and says where it goes', () => {
  const graph = new Map([
    ['cmd/a.ts', ['cmd/b.ts']],
    ['cmd/b.ts', ['cmd/c.ts', 'src/x.ts']],
    ['cmd/c.ts', ['cmd/a.ts']],
    ['src/x.ts', []],
  ]);
  assert.deepEqual(cycles(graph), [['cmd/a.ts', 'cmd/b.ts', 'cmd/c.ts']]);
  assert.deepEqual(problems(graph, FLAT), ['import cycle: cmd/a.ts -> cmd/b.ts -> cmd/c.ts -> cmd/a.ts']);
  assert.deepEqual(cycles(new Map([['cmd/self.ts', ['cmd/self.ts']]])), [['cmd/self.ts']]);
});

it('finds src/ importing what is built on it; the other way is fine', () => {
  const graph = new Map([
    ['src/lib.ts', ['src/util.ts', 'cmd/flags.ts', 'test/support/cli.ts']],
    ['src/util.ts', []],
    ['cmd/flags.ts', ['src/lib.ts']],
    ['test/support/cli.ts', ['src/util.ts']],
    // A unit test beside the library is never built: test support is fine there.
    ['src/lib.test.ts', ['src/lib.ts', 'test/support/cli.ts']],
  ]);
  assert.deepEqual(upwardImports(graph), ['src/lib.ts imports cmd/flags.ts', 'src/lib.ts imports test/support/cli.ts']);
  assert.equal(problems(graph, FLAT).length, 3, 'the two upward imports, and the cycle src/lib.ts -> cmd/flags.ts -> src/lib.ts');
});

it('refuses an import from a lower layer to a higher one, or to a sibling; the other way is fine', () => {
  const layers = [['src/errors.ts'], ['src/backends/'], ['src/backends/sqlite/', 'src/backends/postgres/'], ['src/election/']];
  const graph = new Map([
    ['src/errors.ts', []],
    ['src/backends/lease-store.ts', ['src/errors.ts', 'src/election/candidate-loop.ts']],
    ['src/backends/sqlite/store.ts', ['src/backends/lease-store.ts', 'src/backends/sqlite/reader.ts', 'src/backends/postgres/config.ts']],
    ['src/backends/sqlite/reader.ts', ['src/errors.ts']],
    ['src/backends/postgres/config.ts', ['src/errors.ts']],
    ['src/election/candidate-loop.ts', ['src/backends/lease-store.ts', 'src/errors.ts']],
    // A unit test may import across layers (a store's test may use another's helpers).
    ['src/backends/sqlite/store.test.ts', ['src/backends/postgres/config.ts', 'src/election/candidate-loop.ts']],
  ]);
  assert.deepEqual(layerBreaches(graph, layers), [
    'layer breach: src/backends/lease-store.ts (backends/, layer 2) imports src/election/candidate-loop.ts (a higher layer: election/, layer 4)',
    'layer breach: src/backends/sqlite/store.ts (backends/sqlite/, layer 3) imports src/backends/postgres/config.ts (its sibling: backends/postgres/, layer 3)',
  ]);
  assert.ok(problems(graph, layers).includes('import cycle: src/backends/lease-store.ts -> src/election/candidate-loop.ts -> src/backends/lease-store.ts'));
});

it('places a file by the longest entry that holds it, and names files no layer holds and entries that hold none', () => {
  assert.deepEqual(layerOf('src/backends/sqlite/store.ts'), { entry: 'src/backends/sqlite/', layer: layerOf('src/backends/postgres/store.ts')!.layer });
  assert.ok(layerOf('src/backends/lease-store.ts')!.layer < layerOf('src/backends/sqlite/store.ts')!.layer);
  assert.ok(layerOf('src/backends/sqlite/store.ts')!.layer < layerOf('src/backends/open-store.ts')!.layer);
  assert.equal(layerOf('src/newcomer/x.ts'), undefined);
  assert.equal(layerOf('src/index.ts')!.layer, LAYERS.length - 1, 'the library entry point is the top');
  const graph = new Map([
    ['src/newcomer/x.ts', []],
    ['src/errors.ts', []],
  ]);
  assert.deepEqual(layerBreaches(graph, [['src/errors.ts'], ['src/util/']]), [
    'layer entry src/util/ holds no file: remove it from LAYERS',
    'layer missing: src/newcomer/x.ts is in no layer (add its folder to LAYERS in scripts/import-graph.ts)',
  ]);
});

it('the repository itself keeps the three rules', () => {
  const graph = readGraph();
  assert.ok(graph.has('cmd/leasehold.ts') && graph.has('src/index.ts'), 'it read the tree');
  assert.deepEqual(problems(graph), []);
});
