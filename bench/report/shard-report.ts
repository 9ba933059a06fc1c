/**
 * The shard groups' section of docs/benchmarks.md (bench/scenarios/shards.ts): how it was
 * measured, the goals (shard-goals.ts), the idle figures beside client-go's way computed, and
 * the changes. Pure: it formats the figures it is given.
 */
import { quantile } from '../lib/quantile.js';
import { DEFAULT_T, type ShardCaseResult } from '../lib/shard-chain.js';
import { idleWritesPerMin, leaveP95, shardGoalRows, shardGoalsMarkdown } from './shard-goals.js';

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

/**
 * Why a change of many shards takes longer than its goal, printed under the goals while one of
 * them is not met: what the time is made of, from the member's code. No figures: the tables
 * have them.
 */
export const SHARD_MOVE_NOTE = [
  '**Why a change of many shards misses its goal.** Each shard that changes owner costs two',
  "compare-and-swaps of its own: the old owner's release once the shard has passed its gate, and",
  "the new owner's take after it lists the group on the store's hint; each is its own commit",
  '(an fsync on SQLite and PostgreSQL, one request on Kubernetes), 16 at a time per member.',
  '`shards.json` is written once per pass of the member, whatever it gained or lost in it. A',
  'leave of N/M shards is N/M releases in the leaver and N/M takes spread over the others; after',
  'a crash the N/M takes wait out the lease duration and then come the same way; a join moves',
  "the newcomer's share alike. At M = 32 every member also lists the whole group on each of the",
  "others' heartbeats (the idle table's lists), and the sidecars run interpreted (`--jitless`, as",
  'the image runs them) on the two cores they share with the store and the bench, so the time',
  "grows with N/M and with the load. Writing a member's releases or takes in one transaction",
  '(SQLite, PostgreSQL) is the next step; the goals hold where N/M is small.',
].join('\n');

/**
 * Each member lists the group on every hint of a change, at most every 50 ms, and every store
 * hints at every write, heartbeats included: about one list per other member's heartbeat.
 */
const LISTS_NOTE = [
  "A member lists the group whenever its store hints at a change (SQLite's change counter polled",
  'every 50 ms, a PostgreSQL NOTIFY, a Kubernetes watch event), at most every 50 ms, and at least',
  "once per retry period. Every write is such a hint, the other members' heartbeats included, so",
  "a member's lists grow with M (about M − 1 per retry period while they fit in 50 ms apart)",
  'although its writes do not.',
].join('\n');

/** Heartbeats this much below one per retry period mean the members' turns waited for a core. */
const LATE_BELOW_PER_MIN = 29;

export function shardReport(runs: readonly ShardStoreRun[], idleSeconds: number): string {
  const idleRows = runs.flatMap((run) =>
    run.results.map((r) => {
      const rss = r.idle.rssMB;
      const cg = clientGoGroupPerMin(r.shards);
      return `| ${run.store} | ${r.shards} | ${r.members} | ${f1(idleWritesPerMin(r))} | ${f1(perMin(r.idle.ownWrites, r))} | ${f1(perMin(r.idle.lists, r))} | ${r.idle.conflicts} | ${f1(r.idle.cpuPct)} | ${f1(quantile(rss, 0.5))} / ${f1(Math.max(...rss))} | ${f1(r.idle.plainRssMB)} | ${int(cg)} / ${f1(cg / r.members)} | ${f1(r.idle.load)} |`;
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
  const rows = runs.flatMap((run) => run.results.map((r) => ({ store: run.store, r })));
  const late = rows.filter(({ r }) => idleWritesPerMin(r) < LATE_BELOW_PER_MIN);
  const lateNote = late.length
    ? `\n\nIn ${late.map(({ store, r }) => `${store} N = ${r.shards}, M = ${r.members} (${f1(idleWritesPerMin(r))}, load ${f1(r.idle.load)})`).join('; ')} the store counted fewer than ${LATE_BELOW_PER_MIN} writes a minute per member: heartbeats came later than every retry period, the members' turns waiting for a core. That many members, on this machine with its other work, is past what it carries at the timings' pace.`
    : '';
  const goals = shardGoalRows(
    runs.map((r) => ({ store: r.store, results: r.results })),
    idleSeconds,
  );
  const moveNote = goals.some((g) => g.verdict === 'not met' && /leave|join|crash/.test(g.goal)) ? `\n\n${SHARD_MOVE_NOTE}` : '';
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

${shardGoalsMarkdown(
  runs.map((r) => ({ store: r.store, results: r.results })),
  idleSeconds,
)}${moveNote}

### Idle: the store's writes, lists, CPU and memory per member

Over the idle window: writes per member per minute as the store counted them, and as the members
counted their own (their \`/metrics\`: creates and updates that succeeded, read just after the
window opened and just before it closed); lists per member per
minute; writes that lost their compare-and-swap (all members); CPU as the mean share of one core
per member; RSS per member sampled every 5 s (the median member's median / the largest
member's), beside a plain leader sidecar's, started with the same flags on its own lease in the
same store; the machine's 1-minute load average as the window opened. client-go's way,
computed: one Lease per shard renewed by its owner every retry period (as Knative's buckets
are), N × ${60_000 / DEFAULT_T.retryMs} writes a minute for the group and N/M × ${60_000 / DEFAULT_T.retryMs} per member.

| store | N | M | writes/min per member (store) | (members' count) | lists/min per member | conflicts | CPU % per member | RSS MiB per member | plain sidecar RSS MiB | client-go's way: writes/min, group / per member | load |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${idleRows.join('\n')}

${LISTS_NOTE}${lateNote}

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
