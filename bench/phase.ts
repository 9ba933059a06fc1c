/**
 * What a phase of `npm run bench` declares, so that bench/run.ts needs no per-phase code: the
 * registry (bench/phases.ts) answers `--only`, `--splice` and `--list` from these fields alone.
 */
import type { ClusterSession } from '../test/support/cluster-session.js';
import type { ImageNode } from './lib/image-node.js';
import type { ShardChainCases } from './lib/shard-cases.js';

/** The bench's command-line options, read once (bench/options.ts). */
export interface BenchOptions {
  trials: number;
  /** `--seconds`: each phase that takes it has its own default. */
  seconds: number | undefined;
  idleSeconds: number;
  clusterTrials: number;
  streams: number;
  standbys: number;
  scaleTrials: number;
  scaleSetups: string[];
  operatorPods: number;
  /** Pod creations per second in the operator phase (issue 24's rate). */
  operatorRate: number;
  /** The shards phase: each case's idle window, shard counts N, member counts M (ascending), and the stores (sqlite, postgres, kubernetes). */
  shardIdleSeconds: number;
  shardSizes: number[];
  shardMembers: number[];
  shardStores: string[];
  /** The shards phase on Kubernetes: one chain per N, its member counts ascending (`--shard-kube-cases`). */
  shardKubeCases: ShardChainCases[];
}

/** Every phase's result carries the markdown it contributes; the rest is its own. */
export interface PhaseResult {
  markdown: string;
}

export interface PhaseContext {
  opts: BenchOptions;
  log: (m: string) => void;
  /** The `--only` value as given ('' in a full run), quoted by the notes a splice writes. */
  only: string;
  /** The `--only` word that chose this phase: its name, or e.g. a latency row for kubernetes. */
  word: string;
  /** What the phases before this one in the same run returned, by phase name. */
  results: ReadonlyMap<string, PhaseResult>;
  /** The single-node cluster, brought up on first use and shared by the phases of one run. */
  cluster(): ClusterSession;
  /** The Node the image runs, and its flags. */
  node(): ImageNode;
  /** The docs/benchmarks.md this run reads from and splices into. */
  docPath: string;
  /** YYYY-MM-DD, for the notes a splice writes. */
  today: string;
}

export interface Phase<R extends PhaseResult = PhaseResult> {
  name: string;
  /** One line for the progress log: what the phase measures. */
  what(o: BenchOptions): string;
  /** The phase brings up a kubelet and a CNI bridge; skipped in a full run without root, refused with `--only`. */
  needsRoot: boolean;
  /** Whether the phase runs in a full `npm run bench`; some run only when named with `--only`. */
  inFullRun: boolean;
  /** About how long it takes with these options, in seconds. */
  estimateS(o: BenchOptions): number;
  /** Another `--only` word that chooses the phase; throws with the rule when the word is its but malformed. */
  accepts?(word: string): boolean;
  /** The words `accepts` takes, for `--list` and the refusal of an unknown one. */
  otherWords?: string;
  /**
   * The heading line of the docs/benchmarks.md section the phase produces: the section runs from
   * it to the next heading of its level or above.
   */
  heading?(o: BenchOptions): string;
  /**
   * What `--splice` writes in place of that section: the heading, a note on how and when it was
   * measured, the figures. A phase without it cannot be spliced (others quote its figures).
   */
  section?(result: R, ctx: PhaseContext): string;
  run(ctx: PhaseContext): Promise<R>;
}
