/**
 * A full run's docs/benchmarks.md and docs/benchmarks-latency.svg, from the results of its
 * phases. The sections `--splice` replaces start with the phases' own headings, so that a later
 * splice finds them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../../test/support/cli.js';
import type { ImageNode } from '../lib/image-node.js';
import type { BenchOptions, PhaseResult } from '../phase.js';
import { FAST_T, KUBERNETES_HEADING, type KubernetesBenchResult } from '../scenarios/kubernetes.js';
import type { MemoryResult } from '../scenarios/memory-breakdown.js';
import type { SqliteBenchResult } from '../scenarios/sqlite.js';
import { POSTGRES_HEADING, type PostgresBenchResult } from '../scenarios/postgres.js';
import type { ScaleBenchResult } from '../scenarios/scale.js';
import type { PodMemoryResult } from '../scenarios/pod-memory.js';
import { STREAMS_HEADING } from '../scenarios/streams.js';
import { OVERLAP_HEADING } from '../scenarios/overlap.js';
import { SHARDS_HEADING } from '../scenarios/shards.js';
import { FENCING_HEADING } from '../scenarios/fencing.js';
import { POD_HEADING } from '../scenarios/pod-memory.js';
import { CLUSTER_HEADING } from '../scenarios/cluster-figures.js';
import { OPERATOR_HEADING } from '../scenarios/operator-admission.js';
import { SQLITE_HEADING } from '../scenarios/sqlite.js';
import { scaleHeading } from '../scenarios/scale.js';
import { handoffGoalsMarkdown } from './handoff-goals.js';
import { latencyChart } from './latency-chart.js';
import { summaryTable } from './summary-table.js';

export interface FullRun {
  results: ReadonlyMap<string, PhaseResult>;
  opts: BenchOptions;
  node: ImageNode;
  startedMs: number;
  docPath: string;
  svgPath: string;
}

/** Writes both files and returns the markdown. */
export function writeFullReport(run: FullRun): string {
  const md = benchmarksDoc(run);
  writeFileSync(run.docPath, md);
  writeFileSync(run.svgPath, latencySvg(run.results.get('kubernetes') as KubernetesBenchResult, run.opts.trials));
  return md;
}

const notMeasured = (phase: string) => `Not measured in this run: the ${phase} phase needs root (it brings up a kubelet and a CNI bridge).\n`;

function benchmarksDoc({ results, opts, node, startedMs }: FullRun): string {
  const get = <R extends PhaseResult>(name: string) => results.get(name) as R | undefined;
  const kube = get<KubernetesBenchResult>('kubernetes')!;
  const sqlite = get<SqliteBenchResult>('sqlite')!;
  const postgres = get<PostgresBenchResult>('postgres')!;
  const scale = get<ScaleBenchResult>('scale')!;
  const memory = get<MemoryResult>('memory')!;
  const pod = get<PodMemoryResult>('pod') ?? null;
  const cluster = get('cluster');
  const operator = get('operator');
  const version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
  return `# Benchmarks

Produced by \`npm run bench\` (\`bench/run.ts\`), which rewrites this file; nothing here was
typed by hand. Re-run it to check the figures on your machine (it builds or reuses the
control plane and the client-go peer in ~/.cache/leasehold, like the tests).

- leasehold ${version}, Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB
- date ${new Date().toISOString().slice(0, 10)}; the whole run took ${Math.round((Date.now() - startedMs) / 60_000)} min

## leasehold and client-go's leader election, side by side

${summaryTable(kube, memory.emptyNodeMB, memory.emptyNodeFlagsMB, node, pod)}

${handoffGoalsMarkdown({ sqlite, postgres, kube, scale: scale.rows, standbys: opts.standbys })}

${memory.markdown}
${KUBERNETES_HEADING}

Both implementations run against the same API server, one after the other: leasehold
sidecars, and client-go v0.37.2's \`tools/leaderelection\` (the Go peer in
\`test/interop/go-candidate\`, the same one the interop test uses).

${kube.markdown}
${SQLITE_HEADING}

${sqlite.markdown}
${POSTGRES_HEADING}

${postgres.markdown}
${scaleHeading(opts)}

${scale.markdown}
${STREAMS_HEADING}

${get('streams')!.markdown}
${OVERLAP_HEADING}

${get('overlap')!.markdown}
${SHARDS_HEADING}

${get('shards')!.markdown}
${FENCING_HEADING}

${get('fencing')!.markdown}
${POD_HEADING}

${pod ? pod.markdown : notMeasured('pod')}
${CLUSTER_HEADING}

${cluster ? `${opts.clusterTrials} trials per row (\`--cluster-trials\`).\n\n${cluster.markdown}` : notMeasured('cluster')}
${OPERATOR_HEADING}

${operator ? `${opts.operatorPods} pods of each kind (\`--operator-pods\`).\n\n${operator.markdown}` : notMeasured('operator')}`;
}

function latencySvg(kube: KubernetesBenchResult, trials: number): string {
  const l = kube.latency;
  return latencyChart(`Kubernetes handoff and failover, ${trials} trials each (timings ${FAST_T.lease} / ${FAST_T.deadline} / ${FAST_T.retry})`, [
    { label: 'leasehold, graceful (SIGTERM)', ...l['leasehold SIGTERM']!, color: '#1b6ac9' },
    { label: 'client-go, graceful (SIGTERM)', ...l['client-go SIGTERM']!, color: '#d9622b' },
    { label: 'leasehold, crash (SIGKILL)', ...l['leasehold SIGKILL']!, color: '#1b6ac9' },
    { label: 'client-go, crash (SIGKILL)', ...l['client-go SIGKILL']!, color: '#d9622b' },
    { label: 'leasehold, crash, after expiry', ...kube.afterExpiry['leasehold']!, color: '#1b6ac9' },
    { label: 'client-go, crash, after expiry', ...kube.afterExpiry['client-go']!, color: '#d9622b' },
  ]);
}
