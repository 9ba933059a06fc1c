/**
 * The shard groups' part of `npm run bench` (issues 38 and 43; alone: `--only shards`): real
 * `leasehold sidecar --shards N` processes with the default timings (15 s / 10 s / 2 s), for each
 * N of `--shard-sizes` and M of `--shard-members` on SQLite and on a PostgreSQL server started
 * for the run, and the cases of `--shard-kube-cases` (N = 256 with M = 8 and 32, N = 4096 with
 * M = 2) on a real kube-apiserver (`--shard-stores` chooses among the three). For each case
 * (bench/lib/shard-chain.ts): the store's count of the group's writes per member while idle (on
 * Kubernetes also the API server's count of every request for the group), the members' whole-group
 * reads and records read, CPU and RSS beside a plain leader sidecar's; the time to settle after a
 * join, a graceful leave and a crash, and the shards each moved. The figures and the goals go to
 * docs/benchmarks.md (bench/report/shard-report.ts).
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { CLI, NODE_FLAGS, start, tempDir } from '../../test/support/cli.js';
import { startPostgres } from '../../test/support/postgres.js';
import { startControlPlane } from '../../test/support/control-plane.js';
import { KubeClient } from '../../src/kube/api-client.js';
import { loadConnection } from '../../src/kube/kubeconfig.js';
import { createNamespace } from '../lib/candidates.js';
import { imageNode } from '../lib/image-node.js';
import { auditGroupWrites, postgresGroupWrites, sqliteGroupWrites } from '../lib/group-writes.js';
import { auditGroupRequests } from '../lib/group-requests.js';
import { formatShardCases, KUBE_CASES_DEFAULT, type ShardChainCases } from '../lib/shard-cases.js';
import { shardChain, type ShardCaseResult, type ShardStore } from '../lib/shard-chain.js';
import { shardReport, type ShardStoreRun } from '../report/shard-report.js';
import { measureStoreCalls, storeCallsMarkdown, type StoreCallTimes } from '../lib/shard-store-calls.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import type { GroupStore } from '../../src/backends/group-store.js';
import type { BenchOptions, Phase, PhaseContext } from '../phase.js';

export const SHARD_STORES = ['sqlite', 'postgres', 'kubernetes'] as const;

export interface ShardsBenchResult {
  markdown: string;
  stores: ShardStoreRun[];
  storeCalls: { store: string; load: number; t: StoreCallTimes }[];
}

/** Every sidecar's own flags: HTTP on (as deployed: probes, metrics), info logs. */
const common = (o: { id: string; statusDir: string; group: string; shards?: number }) => [
  'sidecar',
  '--lease',
  o.group,
  '--identity',
  o.id,
  '--status-dir',
  o.statusDir,
  '--listen',
  '127.0.0.1:0',
  '--log-level',
  process.env.BENCH_DEBUG ? 'debug' : 'info',
  ...(o.shards === undefined ? [] : ['--shards', String(o.shards)]),
];

export async function benchShards(o: {
  sizes: readonly number[];
  memberCounts: readonly number[];
  stores: readonly string[];
  /** On Kubernetes: one chain per N, its member counts ascending. */
  kubeCases: readonly ShardChainCases[];
  idleSeconds: number;
  log: (m: string) => void;
}): Promise<ShardsBenchResult> {
  const node = imageNode();
  const onImageNode = (args: string[]) => start(node.bin, [...node.flags, CLI, ...args]);
  const imageRuntime = `Node ${node.version} \`node ${node.flags.join(' ')}\` (the image's)`;
  const runs: ShardStoreRun[] = [];
  const storeCalls: ShardsBenchResult['storeCalls'] = [];
  const dir = tempDir('leasehold-bench-shards-');
  /** The store calls alone at each N, before the members start (nothing else of this bench runs then). */
  const measureCalls = async (name: string, open: () => Promise<GroupStore & { close(): Promise<void> }>) => {
    const store = await open();
    try {
      for (const N of o.sizes) {
        const load = loadavg()[0]!;
        const t = await measureStoreCalls(store, `store-calls-${N}`, N);
        o.log(
          `${name} N=${N}: store calls: batch of 256 ${t.batchMs.median.toFixed(1)} ms, heartbeat during a pass of ${t.passRows} ${t.heartbeatDuringPassMs.max.toFixed(1)} ms at most`,
        );
        storeCalls.push({ store: name, load, t });
      }
    } finally {
      await store.close();
    }
  };
  /** One store: a plain leader sidecar started first, then one chain per N. */
  const runStore = async (name: string, runtime: string, how: string, store: ShardStore, chains: readonly ShardChainCases[]) => {
    const loadBefore = loadavg()[0]!;
    const started = Date.now();
    const plain = store.start({ id: 'plain', statusDir: join(dir.path, `${name}-plain`), group: 'plain' });
    const results: ShardCaseResult[] = [];
    try {
      for (const c of chains)
        results.push(...(await shardChain({ store, shards: c.shards, memberCounts: c.members, idleSeconds: o.idleSeconds, dir: dir.path, plain, log: o.log })));
    } finally {
      plain.kill('SIGTERM');
      await plain.exited;
    }
    runs.push({ store: name, runtime, how, results, load: [loadBefore, loadavg()[0]!], minutes: (Date.now() - started) / 60_000 });
  };
  /** The SQL stores' chains: every N of --shard-sizes through every M of --shard-members. */
  const grid = o.sizes.map((shards) => ({ shards, members: [...o.memberCounts] }));
  try {
    if (o.stores.includes('sqlite')) {
      // Local mode runs on the Node running the bench (better-sqlite3's addon in node_modules is
      // built for it), with the tests' flags and the image's memory ones, which cap the young
      // generation: without them a member that lists often grows it and its RSS says so, not the
      // member's own memory. Members and the plain sidecar alike.
      const db = (group: string) => join(dir.path, `${group}.db`);
      await measureCalls('SQLite', async () => new SqliteLeaseStore(db('store-calls')));
      const flags = [...new Set([...NODE_FLAGS, ...node.flags.filter((f) => f !== '--jitless')])];
      const store: ShardStore = {
        name: 'SQLite',
        start: (c) => start(process.execPath, [...flags, CLI, ...common(c), '--db', db(c.group)]),
        writes: (group) => sqliteGroupWrites(db(group)),
      };
      const runtime = `Node ${process.versions.node} \`node ${flags.join(' ')}\` (the one running the bench, whose better-sqlite3 addon is built for it, with the image's memory flags)`;
      await runStore('SQLite', runtime, store.writes('shards').how, store, grid);
    }
    if (o.stores.includes('postgres')) {
      const pg = await startPostgres();
      try {
        await measureCalls(`PostgreSQL ${pg.version}`, () => PostgresLeaseStore.open({ url: pg.url() }));
        const counter = postgresGroupWrites(pg);
        const store: ShardStore = {
          name: 'PostgreSQL',
          start: (c) => onImageNode([...common(c), '--backend', 'postgres', '--postgres-url', pg.url()]),
          writes: () => counter,
        };
        await runStore(`PostgreSQL ${pg.version}`, imageRuntime, counter.how, store, grid);
      } finally {
        await pg.stop();
      }
    }
    if (o.stores.includes('kubernetes')) {
      const users = ['plain', ...Array.from({ length: kubeUsersNeeded(o.kubeCases) }, (_, i) => `m${i}`)].map((id) => `shard-${id}`);
      const cp = await startControlPlane({ audit: true, extraUsers: users });
      const admin = new KubeClient(loadConnection(cp.adminKubeconfig));
      try {
        const ns = 'shards';
        await createNamespace(admin, ns);
        const isMember = (u: string) => u.startsWith('shard-m');
        const counter = auditGroupWrites(cp.auditLog!, isMember);
        const requests = auditGroupRequests(cp.auditLog!, isMember);
        const store: ShardStore = {
          name: 'Kubernetes',
          start: (c) => onImageNode([...common(c), '--backend', 'kubernetes', '--kubeconfig', cp.userKubeconfigs[`shard-${c.id}`]!, '--namespace', ns]),
          writes: () => counter,
          requests: () => requests,
          readsFromWatch: true,
        };
        await runStore('Kubernetes', imageRuntime, `${counter.how}; every request for the group counted by ${requests.how}`, store, o.kubeCases);
      } finally {
        admin.close();
        await cp.stop();
      }
    }
  } finally {
    dir.cleanup();
  }
  return { markdown: [shardReport(runs, o.idleSeconds), storeCallsMarkdown(storeCalls)].filter(Boolean).join('\n'), stores: runs, storeCalls };
}

/**
 * The members' users one Kubernetes run needs: a chain names its members m0, m1, … as it adds
 * them, and adds its largest M, one joiner per M, and one to replace each of the two that leave
 * before the next M; a few more for slack.
 */
export const kubeUsersNeeded = (chains: readonly ShardChainCases[]): number =>
  Math.max(...chains.map((c) => Math.max(...c.members) + 3 * c.members.length)) + 4;

export const SHARDS_HEADING = '## Shard groups';

/** The options of this phase that differ from their defaults, as given on the command line, for the note a splice writes. */
export function shardsOptions(o: BenchOptions): string {
  const d = { sizes: '16,256,1024,4096', members: '2,8,32', stores: SHARD_STORES.join(','), kube: KUBE_CASES_DEFAULT };
  return [
    o.shardIdleSeconds !== 30 ? `--shard-idle-seconds ${o.shardIdleSeconds}` : '',
    o.shardSizes.join(',') !== d.sizes ? `--shard-sizes ${o.shardSizes.join(',')}` : '',
    o.shardMembers.join(',') !== d.members ? `--shard-members ${o.shardMembers.join(',')}` : '',
    o.shardStores.join(',') !== d.stores ? `--shard-stores ${o.shardStores.join(',')}` : '',
    formatShardCases(o.shardKubeCases) !== d.kube ? `--shard-kube-cases ${formatShardCases(o.shardKubeCases)}` : '',
  ]
    .filter(Boolean)
    .join(' ');
}

/** About how long: per case the idle window, the changes (the crash waits a lease duration) and the growth; a new group per N and store. */
export function shardsEstimateS(o: BenchOptions): number {
  // Per case: the idle window, the quiet after each change, a join and a leave, the crash's lease duration.
  const perCase = o.shardIdleSeconds + 35;
  // A new group's wait, and the members started in batches.
  const chain = (members: readonly number[]) => 25 + members.length * perCase + Math.max(...members);
  const sql = o.shardStores.filter((s) => s !== 'kubernetes').length * o.shardSizes.length * chain(o.shardMembers);
  const kube = o.shardStores.includes('kubernetes') ? 60 + o.shardKubeCases.reduce((a, c) => a + chain(c.members), 0) : 0;
  return sql + kube;
}

export const shardsPhase: Phase<ShardsBenchResult> = {
  name: 'shards',
  what: (o) =>
    `shard groups (${o.shardSizes.join(', ')} shards; ${o.shardMembers.join(', ')} members; ${o.shardStores.join(', ')}${o.shardStores.includes('kubernetes') ? `, Kubernetes ${formatShardCases(o.shardKubeCases)}` : ''}): join, leave, crash, idle writes and reads, RSS`,
  needsRoot: false,
  inFullRun: true,
  estimateS: shardsEstimateS,
  heading: () => SHARDS_HEADING,
  section: (r, ctx: PhaseContext) => {
    const opts = shardsOptions(ctx.opts);
    return `${SHARDS_HEADING}\n\n_This section was measured by \`npm run bench -- --only shards${opts ? ` ${opts}` : ''} --splice\` on ${ctx.today}, apart from the full run._\n\n${r.markdown}\n`;
  },
  run: (ctx) =>
    benchShards({
      sizes: ctx.opts.shardSizes,
      memberCounts: ctx.opts.shardMembers,
      stores: ctx.opts.shardStores,
      kubeCases: ctx.opts.shardKubeCases,
      idleSeconds: ctx.opts.shardIdleSeconds,
      log: ctx.log,
    }),
};
