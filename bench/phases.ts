/**
 * The registry of the bench's phases, in the order a run takes them; `--only`, `--splice` and
 * `--list` are answered from it alone (bench/main.ts).
 */
import type { BenchOptions, Phase } from './phase.js';
import { kubernetesPhase } from './scenarios/kubernetes.js';
import { sqlitePhase } from './scenarios/sqlite.js';
import { sqliteDiskPhase } from './scenarios/sqlite-disk.js';
import { postgresPhase } from './scenarios/postgres.js';
import { scalePhase } from './scenarios/scale.js';
import { streamsPhase } from './scenarios/streams.js';
import { overlapPhase } from './scenarios/overlap.js';
import { podPhase } from './scenarios/pod-memory.js';
import { clusterPhase } from './scenarios/cluster-figures.js';
import { operatorPhase } from './scenarios/operator-admission.js';
import { admissionPhase } from './scenarios/admission.js';
import { memoryPhase } from './scenarios/memory-breakdown.js';
import { failoverPhase } from './scenarios/failover.js';
import { shardsPhase } from './scenarios/shards.js';
import { fencingPhase } from './scenarios/fencing.js';

export const PHASES: readonly Phase[] = [
  kubernetesPhase,
  sqlitePhase,
  sqliteDiskPhase,
  postgresPhase,
  scalePhase,
  streamsPhase,
  overlapPhase,
  shardsPhase,
  fencingPhase,
  podPhase,
  clusterPhase,
  operatorPhase,
  admissionPhase,
  // After the Kubernetes phase, whose idle standbys it quotes.
  memoryPhase,
  failoverPhase,
];

export interface Chosen {
  phase: Phase;
  /** The `--only` word that chose it ('' in a full run). */
  word: string;
}

export type Choice = { chosen: Chosen[]; skipped: Phase[] } | { error: string };

/**
 * The phases a run takes, in the registry's order: those of a full run when `only` is empty
 * (without the ones that need root, unless `root`), else the comma-separated phases named; or
 * the one line that says which word was wrong and what the rule is.
 */
export function choosePhases(registry: readonly Phase[], only: string, o: { splice: boolean; root: boolean }): Choice {
  if (only === '') {
    if (o.splice) return { error: '--splice needs --only: it replaces the sections of the phases named there' };
    const full = registry.filter((p) => p.inFullRun);
    return { chosen: full.filter((p) => o.root || !p.needsRoot).map((phase) => ({ phase, word: '' })), skipped: full.filter((p) => !o.root && p.needsRoot) };
  }
  const chosen: Chosen[] = [];
  for (const word of only.split(',')) {
    let phase: Phase | undefined;
    try {
      phase = registry.find((p) => p.name === word) ?? registry.find((p) => p.accepts?.(word));
    } catch (e) {
      return { error: (e as Error).message };
    }
    if (!phase) return { error: `--only ${JSON.stringify(word)}: no such phase; the phases are ${knownWords(registry)}` };
    if (chosen.some((c) => c.phase === phase)) return { error: `--only ${only}: the ${phase.name} phase is named twice; a run takes each phase once` };
    if (phase.needsRoot && !o.root) return { error: `--only ${word}: the ${phase.name} phase needs root (it brings up a single-node Kubernetes)` };
    if (o.splice && !(phase.heading && phase.section)) {
      const spliced = registry.filter((p) => p.heading !== undefined && p.section !== undefined).map((p) => p.name);
      return { error: `--splice: the ${phase.name} phase's figures cannot be spliced alone; the phases that can are ${spliced.join(', ')}` };
    }
    chosen.push({ phase, word });
  }
  return { chosen: chosen.sort((a, b) => registry.indexOf(a.phase) - registry.indexOf(b.phase)), skipped: [] };
}

const knownWords = (registry: readonly Phase[]) =>
  [...registry.map((p) => p.name), ...registry.flatMap((p) => (p.otherWords ? [p.otherWords] : []))].join(', ');

/** `--list`: one line per phase, with whether it needs root, its estimate with these options, and its section (* when `--splice` can replace it). */
export function listPhases(registry: readonly Phase[], o: BenchOptions): string {
  const rows = [
    ['phase', 'root', 'estimate', 'full run', 'section in docs/benchmarks.md (* --splice replaces it)'],
    ...registry.map((p) => [
      p.name,
      p.needsRoot ? 'yes' : 'no',
      `${Math.ceil(p.estimateS(o) / 60)} min`,
      p.inFullRun ? 'yes' : 'no',
      p.heading ? `${p.heading(o)}${p.section ? ' *' : ''}` : '-',
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
  const other = registry.filter((p) => p.otherWords).map((p) => `--only ${p.otherWords} (the ${p.name} phase)`);
  return `${[...lines, ...other].join('\n')}\n`;
}
