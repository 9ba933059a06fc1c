/**
 * npm run bench [-- --list] [--only PHASE[,PHASE...] [--splice]] [--no-write]
 *                 [--trials N] [--seconds S] [--idle-seconds S] [--cluster-trials N] [--streams N]
 *                 [--standbys N] [--scale-trials N] [--scale-setups sqlite,leasehold,client-go] [--operator-pods N]
 *                 [--shard-idle-seconds S] [--shard-sizes 16,256,1024,4096] [--shard-members 2,8,32] [--shard-stores sqlite,postgres,kubernetes]
 *
 * Runs the phases of the registry (bench/phases.ts; `--list` prints them: name, whether they
 * need root, an estimate, their section of docs/benchmarks.md) and rewrites docs/benchmarks.md
 * and its latency chart. The phases that need root (pod, cluster, operator: one single-node
 * Kubernetes brought up for them) are left out without it. `--only` runs the phases named and
 * writes nothing but their figures to stdout (`--only leasehold:SIGTERM:3` runs one Kubernetes
 * latency row, `--only failover` every handoff and failover row with the goals table);
 * `--only ... --splice` replaces those phases' sections of docs/benchmarks.md and says so there.
 * BENCH_DEBUG=1 gives the sidecars' debug logs.
 */
import { join } from 'node:path';
import { ClusterSession } from '../test/support/cluster-session.js';
import { REPO } from '../test/support/cli.js';
import { imageNode } from './lib/image-node.js';
import { main } from './main.js';
import { PHASES } from './phases.js';

process.exitCode = await main(process.argv.slice(2), {
  registry: PHASES,
  docPath: join(REPO, 'docs/benchmarks.md'),
  svgPath: join(REPO, 'docs/benchmarks-latency.svg'),
  root: process.getuid?.() === 0,
  stdout: (text) => process.stdout.write(text),
  stderr: (line) => process.stderr.write(`${line}\n`),
  newCluster: () => new ClusterSession(),
  imageNode,
});
