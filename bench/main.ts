/**
 * What `npm run bench` does with its arguments, with no phase of its own: it takes the phases the
 * registry chooses for `--only` (all of a full run without it), runs them in turn with a progress
 * line each, then prints their figures (`--only`, `--no-write`), replaces their sections of
 * docs/benchmarks.md (`--splice`) or rewrites the whole file (a full run).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { ClusterSession } from '../test/support/cluster-session.js';
import { option } from './cli-args.js';
import type { ImageNode } from './lib/image-node.js';
import { benchOptions } from './options.js';
import type { Phase, PhaseContext, PhaseResult } from './phase.js';
import { choosePhases, listPhases } from './phases.js';
import { writeFullReport } from './report/benchmarks-doc.js';
import { spliceSection } from './report/splice.js';

export interface BenchEnv {
  registry: readonly Phase[];
  docPath: string;
  svgPath: string;
  root: boolean;
  stdout(text: string): void;
  /** Progress, and the line that refuses bad input. */
  stderr(line: string): void;
  newCluster(): ClusterSession;
  imageNode(): ImageNode;
}

/** Runs the bench; resolves to the exit status (2: bad input, nothing run or written). */
export async function main(args: string[], env: BenchEnv): Promise<number> {
  const opts = benchOptions(args);
  if (args.includes('--list')) {
    env.stdout(listPhases(env.registry, opts));
    return 0;
  }
  const only = option('only', '', args);
  const splice = args.includes('--splice');
  const choice = choosePhases(env.registry, only, { splice, root: env.root });
  if ('error' in choice) {
    env.stderr(`bench: ${choice.error}`);
    return 2;
  }
  const log = (m: string) => env.stderr(`[bench] ${m}`);
  for (const p of choice.skipped) log(`the ${p.name} phase is left out: it needs root`);
  const { chosen } = choice;
  const startedMs = Date.now();
  const results = new Map<string, PhaseResult>();
  let session: ClusterSession | undefined;
  let node: ImageNode | undefined;
  const context = (word: string): PhaseContext => ({
    opts,
    log,
    only,
    word,
    results,
    cluster: () => {
      if (!session) {
        session = env.newCluster();
        log('cluster: bringing up the single-node Kubernetes (minutes when the images are not cached)');
        session.up();
      }
      return session;
    },
    node: () => (node ??= env.imageNode()),
    docPath: env.docPath,
    today: new Date().toISOString().slice(0, 10),
  });
  try {
    for (const [i, { phase, word }] of chosen.entries()) {
      const left = chosen.slice(i).reduce((a, c) => a + c.phase.estimateS(opts), 0);
      log(
        `phase ${i + 1}/${chosen.length}: ${phase.what(opts)}; about ${Math.ceil(left / 60)} min left (${Math.round((Date.now() - startedMs) / 1000)} s so far)`,
      );
      results.set(phase.name, await phase.run(context(word)));
      // The cluster goes as soon as no phase left needs it, so that it loads none of the others.
      if (session && !chosen.slice(i + 1).some((c) => c.phase.needsRoot)) {
        session.down();
        session = undefined;
      }
    }
  } finally {
    session?.down();
  }

  if (splice) {
    let doc = readFileSync(env.docPath, 'utf8');
    for (const { phase, word } of chosen) {
      const heading = phase.heading!(opts);
      const later = env.registry.slice(env.registry.indexOf(phase) + 1).flatMap((p) => (p.heading ? [p.heading(opts)] : []));
      doc = spliceSection(doc, heading, phase.section!(results.get(phase.name)!, context(word)), later);
      log(`replaced ${JSON.stringify(heading)} in docs/benchmarks.md`);
    }
    writeFileSync(env.docPath, doc);
  } else if (only !== '' || args.includes('--no-write')) {
    env.stdout(
      chosen
        .map((c) => results.get(c.phase.name)!.markdown)
        .filter(Boolean)
        .join('\n'),
    );
  } else {
    env.stdout(writeFullReport({ results, opts, node: node ?? env.imageNode(), startedMs, docPath: env.docPath, svgPath: env.svgPath }));
    log('wrote docs/benchmarks.md');
  }
  return 0;
}
