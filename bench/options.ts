/**
 * The bench's options, read once from its command line: every phase takes what it needs from
 * here. The parsing itself is bench/cli-args.ts's.
 */
import { choicesOption, countsOption, numberOption, option } from './cli-args.js';
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
    // Issue 38's cases; the Kubernetes case is fixed (bench/scenarios/shards.ts KUBE_CASE).
    // 19 cases: a minute each would take the phase past half an hour on 2 cores.
    shardIdleSeconds: n('shard-idle-seconds', 30),
    shardSizes: countsOption('shard-sizes', [16, 256, 1024], 1, 4096, args),
    shardMembers: countsOption('shard-members', [2, 8, 32], 2, 60, args),
    shardStores: choicesOption('shard-stores', ['sqlite', 'postgres', 'kubernetes'], args),
  };
}
