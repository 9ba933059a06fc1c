import { it } from 'node:test';
import assert from 'node:assert/strict';
import { cycles, importSpecifiers, problems, readGraph, upwardImports } from './import-graph.js';

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
  assert.deepEqual(problems(graph), ['import cycle: cmd/a.ts -> cmd/b.ts -> cmd/c.ts -> cmd/a.ts']);
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
  assert.equal(problems(graph).length, 3, 'the two upward imports, and the cycle src/lib.ts -> cmd/flags.ts -> src/lib.ts');
});

it('the repository itself keeps both rules', () => {
  const graph = readGraph();
  assert.ok(graph.has('cmd/leasehold.ts') && graph.has('src/index.ts'), 'it read the tree');
  assert.deepEqual(problems(graph), []);
});
