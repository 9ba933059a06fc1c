/**
 * The bench's options, read once from its command line: every phase takes what it needs from
 * here. The parsing itself is bench/cli-args.ts's.
 */
import { choicesOption, countsOption, numberOption, option } from './cli-args.js';
import { EXIT_USAGE } from '../cmd/cli-errors.js';
import { CASE_BOUNDS, KUBE_CASES_DEFAULT, parseShardCases, type ShardChainCases } from './lib/shard-cases.js';
import type { BenchOptions } from './phase.js';

export function benchOptions(args: string[]): BenchOptions {
  const n = (name: Parameters<typeof numberOption>[0], dflt: number) => numberOption(name, dflt, args);
  // Left out, each phase takes its own window; given, it is checked as every other number is.
  const seconds = option('seconds', '', args) === '' ? undefined : n('seconds', 3);
  return {
    trials: n('trials', 20),
    seconds,
    idleSeconds: n('idle-seconds', 60),
    clusterTrials: n('cluster-trials', 10),
    streams: n('streams', 1000),
    standbys: n('standbys', 100),
    scaleTrials: n('scale-trials', 6),
    scaleSetups: option('scale-setups', 'sqlite,leasehold,client-go', args).split(','),
    // At least 600 of each kind for a p99.
    operatorPods: n('operator-pods', 1000),
    operatorRate: 20,
    // Issue 43's cases (bench/lib/shard-cases.ts has the Kubernetes ones).
    // 27 cases: a minute each would take the phase past an hour on 2 cores.
    shardIdleSeconds: n('shard-idle-seconds', 30),
    shardSizes: countsOption('shard-sizes', [16, 256, 1024, 4096], 1, 4096, args),
    shardMembers: countsOption('shard-members', [2, 8, 32], 2, 60, args),
    shardStores: choicesOption('shard-stores', ['sqlite', 'postgres', 'kubernetes'], args),
    shardKubeCases: kubeCases(args),
  };
}

function kubeCases(args: string[]): ShardChainCases[] {
  const text = option('shard-kube-cases', KUBE_CASES_DEFAULT, args);
  const cases = parseShardCases(text);
  if (cases) return cases;
  const [n, m] = [CASE_BOUNDS.shards, CASE_BOUNDS.members];
  process.stderr.write(
    `bench: invalid --shard-kube-cases ${JSON.stringify(text)}: must be NxM pairs (N shards from ${n[0]} to ${n[1]}, M members from ${m[0]} to ${m[1]}), each once, comma-separated, such as ${KUBE_CASES_DEFAULT}\n`,
  );
  process.exit(EXIT_USAGE);
}
