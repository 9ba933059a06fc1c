/**
 * The shard groups' section of docs/benchmarks.md (bench/scenarios/shards.ts): how it was
 * measured, the goals (shard-goals.ts), the idle figures beside client-go's way computed, and
 * the changes. Pure: it formats the figures it is given.
 */
import { quantile } from '../lib/quantile.js';
import { DEFAULT_T, type ShardCaseResult } from '../lib/shard-chain.js';
import { idleWritesPerMin, leaveP95, shardGoalsMarkdown } from './shard-goals.js';

export interface ShardStoreRun {
  /** e.g. "SQLite", "PostgreSQL 15.14", "Kubernetes". */
  store: string;
  /** The Node and flags the sidecars ran on. */
  runtime: string;
  /** How the store's writes were counted. */
  how: string;
  results: ShardCaseResult[];
  /** The 1-minute load average when the store's cases began and ended. */
  load: [number, number];
  minutes: number;
}

/** client-go's way (one Lease per shard, renewed by its owner every retry period, as Knative's buckets): writes a minute for the group. */
export const clientGoGroupPerMin = (shards: number): number => shards * (60_000 / DEFAULT_T.retryMs);

const f1 = (n: number) => n.toFixed(1);
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const perMin = (n: number, r: ShardCaseResult) => (n / r.members) * (60 / r.idle.seconds);

export function shardReport(runs: readonly ShardStoreRun[], idleSeconds: number): string {
  const idleRows = runs.flatMap((run) =>
    run.results.map((r) => {
      const rss = r.idle.rssMB;
      const cg = clientGoGroupPerMin(r.shards);
      return `| ${run.store} | ${r.shards} | ${r.members} | ${f1(idleWritesPerMin(r))} | ${f1(perMin(r.idle.ownWrites, r))} | ${f1(perMin(r.idle.lists, r))} | ${r.idle.conflicts} | ${f1(r.idle.cpuPct)} | ${f1(quantile(rss, 0.5))} / ${f1(Math.max(...rss))} | ${f1(r.idle.plainRssMB)} | ${int(cg)} / ${f1(cg / r.members)} |`;
    }),
  );
  const changeRows = runs.flatMap((run) =>
    run.results.map((r) => {
      const l = r.leave;
      const c = r.crash;
      return `| ${run.store} | ${r.shards} | ${r.members} | ${r.join.ms} | ${r.join.moved} (${r.join.fewest}) | ${l.perShardMs?.length ? quantile(l.perShardMs, 0.5) : 0} / ${leaveP95(r)} / ${l.ms} | ${l.balancedMs} | ${l.moved} (${l.fewest}) | ${c.ms} | ${c.moved} (${c.fewest}) | ${f1(r.growMs / 1000)} s |`;
    }),
  );
  const stores = runs
    .map(
      (run) =>
        `- ${run.store}: the sidecars on ${run.runtime}; writes counted by ${run.how}. ${f1(run.minutes)} min; the 1-minute load average was ${f1(run.load[0])} when it began and ${f1(run.load[1])} when it ended.`,
    )
    .join('\n');
  return `Real \`leasehold sidecar --shards N\` processes with the default timings (${DEFAULT_T.leaseMs / 1000} s / ${DEFAULT_T.deadlineMs / 1000} s / ${DEFAULT_T.retryMs / 1000} s),
each with its HTTP listener on (probes, metrics) and a status directory, every member and the
bench on this machine's cores. One group per N and store (a new group waits a lease duration
before it creates shards never seen), grown through the member counts M in turn; at each M, once
the group is balanced (every shard owned once, each member floor(N/M) or ceil(N/M)): an idle
window of ${idleSeconds} s, then one member joins, the oldest leaves (SIGTERM), the next oldest crashes
(SIGKILL), each change awaited before the next (\`bench/lib/shard-chain.ts\`). Times come from the
members' own \`shards.json\` (their \`updatedAt\`, read every 5 ms), the app's view: a shard counts
as owned once a member's file lists it. No drain is configured (no \`--drain-timeout\`).

${stores}

### Goals

${shardGoalsMarkdown(runs.map((r) => ({ store: r.store, results: r.results })))}

### Idle: the store's writes, lists, CPU and memory per member

Over the idle window: writes per member per minute as the store counted them, and as the members
counted their own (their \`/metrics\`: creates and updates that succeeded); lists per member per
minute (each member lists the group when the store hints at a change, at most every 50 ms, and
at least once per retry period); writes that lost their compare-and-swap (all members); CPU as the
mean share of one core per member; RSS per member sampled every 5 s (the median member's median
/ the largest member's), beside a plain leader sidecar's, started with the same flags on its own
lease in the same store. client-go's way, computed: one Lease per shard renewed by its owner every
retry period (as Knative's buckets are), N × ${60_000 / DEFAULT_T.retryMs} writes a minute for the group and N/M × ${60_000 / DEFAULT_T.retryMs}
per member.

| store | N | M | writes/min per member (store) | (members' count) | lists/min per member | conflicts | CPU % per member | RSS MiB per member | plain sidecar RSS MiB | client-go's way: writes/min, group / per member |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${idleRows.join('\n')}

### Join, graceful leave, crash

In ms. Join: from the newcomer's first \`shards.json\` (its start-up done, about to join) until the
M + 1 members are balanced. Leave: from SIGTERM to the oldest member until each of its shards is
listed by another member, median / p95 over its shards / the last; then until the M members are
balanced. Crash: from SIGKILL to the next oldest until the last of its shards is listed by
another. Moved: the shards whose owner changed, from the members' files before and after (in
brackets the fewest a change can move: the newcomer's share, or the shards of the one gone).
Growth: how long the members added before the case took to balance the group (the first M: with
the new group's wait of a lease duration).

| store | N | M | join: balanced | join: moved | leave: owned again, median / p95 / last | leave: balanced | leave: moved | crash: owned again | crash: moved | growth |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${changeRows.join('\n')}
`;
}
