import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { REPO } from '../support/cli.js';
import { CHARTS, documentedKeys, renderReadme, type ChartName } from '../../scripts/chart-readme.js';

it('documentedKeys: a `# --` comment (and its continuation lines) documents the next key, by its dotted path', () => {
  const rows = documentedKeys(['# -- top', 'a: 1', 'b:', '  # -- nested', '  # more', '  c: 2', '  d: 3', '# plain comment', 'e: 4'].join('\n'));
  assert.deepEqual(rows, [
    { key: 'a', description: 'top' },
    { key: 'b.c', description: 'nested more' },
  ]);
});

for (const name of Object.keys(CHARTS) as ChartName[]) {
  const dir = join(REPO, CHARTS[name].dir);
  const valuesYaml = readFileSync(join(dir, 'values.yaml'), 'utf8');

  it(`${name}: every value in values.yaml is documented, itself or by its parent`, () => {
    const documented = new Set(documentedKeys(valuesYaml).map((r) => r.key));
    const missing: string[] = [];
    const walk = (v: unknown, path: string[]) => {
      const key = path.join('.');
      if (path.length > 0 && documented.has(key)) return;
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
        for (const [k, child] of Object.entries(v)) walk(child, [...path, k]);
      } else if (path.length > 0) missing.push(key);
    };
    walk(load(valuesYaml), []);
    assert.deepEqual(missing, []);
  });

  it(`${name}: every documented value has a type in values.schema.json`, () => {
    const untyped = renderReadme(name)
      .split('\n')
      .filter((line) => /^\| `[^`]+` \| {2}\|/.test(line));
    assert.deepEqual(untyped, []);
  });

  it(`${name}: the chart README is the generated one (npm run chart:readme)`, () => {
    assert.equal(readFileSync(join(dir, 'README.md'), 'utf8'), renderReadme(name));
  });
}

it("the operator chart README gives docs/operator.md's instructions: every command and manifest in it, verbatim", () => {
  const readme = renderReadme('leasehold-operator');
  const docs = readFileSync(join(REPO, 'docs/operator.md'), 'utf8');
  const blocks = [...readme.matchAll(/```[a-z]*\n[\s\S]*?```/g)].map((m) => m[0]);
  assert.ok(
    blocks.some((b) => b.includes('leasehold.io/inject: "true"')),
    'the README shows the pod template label',
  );
  for (const block of blocks) assert.ok(docs.includes(block), `docs/operator.md lacks:\n${block}`);
  // Injection reads the pod's labels, which come from the pod template: a label on the Deployment itself does nothing.
  const texts: [string, string][] = [
    ['README', readme],
    ['docs/operator.md', docs],
    ['README.md', readFileSync(join(REPO, 'README.md'), 'utf8')],
  ];
  for (const [name, text] of texts) {
    assert.doesNotMatch(text, /kubectl label (deployment|deploy|statefulset)/, name);
  }
});
