import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../test/support/cli.js';
import { main, type BenchEnv } from './main.js';
import { benchOptions } from './options.js';
import type { Phase } from './phase.js';
import { PHASES } from './phases.js';

const DOC = join(REPO, 'docs/benchmarks.md');

/** The real registry, each phase's run replaced by one that returns a line naming it. */
const faked = (ran: string[]): Phase[] =>
  PHASES.map((p) => ({
    ...p,
    run: async () => {
      ran.push(p.name);
      return { markdown: `FIGURES OF ${p.name}\n` };
    },
  }));

/** main() on a copy of docs/benchmarks.md in a temp dir, removed afterwards whatever happens. */
async function bench(args: string[], o: { root?: boolean; registry?: readonly Phase[] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-main-'));
  try {
    const docPath = join(dir, 'benchmarks.md');
    copyFileSync(DOC, docPath);
    const ran: string[] = [];
    const out: string[] = [];
    const err: string[] = [];
    const env: BenchEnv = {
      registry: o.registry ?? faked(ran),
      docPath,
      svgPath: join(dir, 'latency.svg'),
      root: o.root ?? false,
      stdout: (t) => out.push(t),
      stderr: (l) => err.push(l),
      newCluster: () => assert.fail('no phase here brings up a cluster'),
      imageNode: () => assert.fail('no phase here needs the image node'),
    };
    const status = await main(args, env);
    return { status, ran, out: out.join(''), err, doc: readFileSync(docPath, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const original = readFileSync(DOC, 'utf8');
const names = PHASES.map((p) => p.name);

describe('bench: --only and --list come from the registry', () => {
  it('refuses an unknown --only name with one line naming the known phases, exit 2, nothing run or written', async () => {
    const r = await bench(['--only', 'sqlite,nope']);
    assert.equal(r.status, 2);
    assert.deepEqual(r.ran, []);
    assert.equal(r.err.length, 1);
    assert.match(r.err[0]!, /^bench: --only "nope": no such phase; the phases are /);
    for (const n of names) assert.ok(r.err[0]!.includes(n), `${n} in ${r.err[0]}`);
    assert.equal(r.doc, original);
  });

  it('refuses a mistyped latency row, a phase that needs root without it, and --splice of a phase that cannot be spliced', async () => {
    for (const [args, line] of [
      [['--only', 'leasehold:SIGTERM:99'], /^bench: --only leasehold:SIGTERM:99: CANDIDATES must be a whole number from 2 to 10/],
      [['--only', 'pod'], /^bench: --only pod: the pod phase needs root/],
      [['--only', 'kubernetes', '--splice'], /^bench: --splice: the kubernetes phase's figures cannot be spliced alone; the phases that can are sqlite, /],
      [['--splice'], /^bench: --splice needs --only/],
      [['--only', 'sqlite,sqlite'], /named twice/],
    ] as const) {
      const r = await bench([...args]);
      assert.equal(r.status, 2, args.join(' '));
      assert.equal(r.err.length, 1, args.join(' '));
      assert.match(r.err[0]!, line);
      assert.deepEqual(r.ran, []);
      assert.equal(r.doc, original);
    }
  });

  it('runs the phases named, in the registry order, and prints their figures without writing', async () => {
    const r = await bench(['--only', 'overlap,leasehold:SIGTERM:3']);
    assert.equal(r.status, 0);
    assert.deepEqual(r.ran, ['kubernetes', 'overlap']);
    assert.equal(r.out, 'FIGURES OF kubernetes\n\nFIGURES OF overlap\n');
    assert.equal(r.doc, original);
  });

  it('leaves the phases that need root out of a full run without root', async () => {
    const r = await bench(['--no-write']);
    assert.deepEqual(
      r.ran,
      PHASES.filter((p) => p.inFullRun && !p.needsRoot).map((p) => p.name),
    );
    assert.deepEqual(
      r.err.filter((l) => l.includes('left out')),
      [
        '[bench] the pod phase is left out: it needs root',
        '[bench] the cluster phase is left out: it needs root',
        '[bench] the operator phase is left out: it needs root',
      ],
    );
  });

  it('--list prints every phase: whether it needs root, its estimate, its section', async () => {
    const r = await bench(['--list', '--trials', '3']);
    assert.equal(r.status, 0);
    const lines = r.out.trimEnd().split('\n');
    for (const p of PHASES) {
      const line = lines.find((l) => l.startsWith(`${p.name} `));
      assert.ok(line, p.name);
      assert.match(line, new RegExp(`^${p.name} +${p.needsRoot ? 'yes' : 'no'} +\\d+ min +${p.inFullRun ? 'yes' : 'no'} `));
    }
  });
});

describe('bench --splice', () => {
  it('every phase that can be spliced has its section in docs/benchmarks.md', () => {
    const lines = original.split('\n');
    for (const p of PHASES.filter((x) => x.section !== undefined)) assert.ok(lines.includes(p.heading!(benchOptions([]))), p.name);
  });

  it("replaces only the selected phases' sections, each up to the next heading of its level", async () => {
    const r = await bench(['--only', 'overlap,sqlite', '--splice'], { root: true });
    assert.equal(r.status, 0);
    assert.deepEqual(r.ran, ['sqlite', 'overlap']);
    const cut = (doc: string, from: string, to: string, by: string) => `${doc.slice(0, doc.indexOf(from))}${by}${doc.slice(doc.indexOf(to))}`;
    const today = new Date().toISOString().slice(0, 10);
    let want = cut(
      original,
      '## SQLite (local mode)\n',
      '## PostgreSQL\n',
      `## SQLite (local mode)\n\n_This section was re-measured by \`npm run bench -- --only sqlite --splice\` on ${today}, after the full run; the summary tables above quote the full run's SQLite figures._\n\nFIGURES OF sqlite\n\n`,
    );
    want = cut(
      want,
      '## Overlap of leader work at a graceful handoff\n',
      '## Shard groups\n',
      `## Overlap of leader work at a graceful handoff\n\n_This section was measured by \`npm run bench -- --only overlap --splice\` on ${today}, apart from the full run._\n\nFIGURES OF overlap\n\n`,
    );
    assert.equal(r.doc, want);
  });

  it('a cluster section quotes the whole --only value in its note', async () => {
    const r = await bench(['--only', 'pod,cluster', '--splice', '--cluster-trials', '4'], { root: true });
    assert.equal(r.status, 0);
    assert.match(
      r.doc,
      /## On a real cluster\n\n_This section was re-measured by `flock \/tmp\/cluster.lock npm run bench -- --cluster-trials 4 --only pod,cluster --splice` \(as root\) on [-0-9]+, 4 trials per row._\n\nFIGURES OF cluster\n\n## The operator/,
    );
  });
});
