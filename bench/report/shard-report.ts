/**
 * The shard groups' section of docs/benchmarks.md (bench/scenarios/shards.ts): how it was
 * measured, the goals (shard-goals.ts), the idle figures beside client-go's way computed, and
 * the changes. Pure: it formats the figures it is given.
 */
import { quantile } from '../lib/quantile.js';
import { DEFAULT_T, type ShardCaseResult } from '../lib/shard-chain.js';
import { apiRequestsPerMin, fullListsPerMin, idleWritesPerMin, leaveP95, recordsRead, shardGoalRows, shardGoalsMarkdown } from './shard-goals.js';
import { CLIENT_GO_MODEL, clientGoGroupPerMin, RETRIES_PER_MIN } from './client-go-shards.js';

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

const f1 = (n: number) => n.toFixed(1);
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const perMin = (n: number, r: ShardCaseResult) => (n / r.members) * (60 / r.idle.seconds);
const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] as const;

/**
 * Why a change of many shards takes longer than its goal, printed under the goals while one of
 * them is not met: what the time is made of, from the member's code. No figures: the tables
 * have them.
 */
export const SHARD_MOVE_NOTE = [
  '**Why a change of many shards misses its goal.** Each shard that changes owner costs two',
  "compare-and-swaps of its own: the old owner's release once the shard has passed its gate, and",
  "the new owner's take after it reads the group on the store's hint. A member's releases, and",
  'its takes, go to the store in batches ([design](design.md#writes-in-batches)): one transaction',
  'of at most 256 rows on SQLite and PostgreSQL, 5 requests in flight on Kubernetes.',
  '`shards.json` is written once per pass of the member, whatever it gained or lost in it. A',
  'leave of N/M shards is N/M releases in the leaver and N/M takes spread over the others; after',
  'a crash the N/M takes wait out the lease duration and then come the same way; a join moves',
  "the newcomer's share alike. The sidecars run interpreted (`--jitless`, as the image runs",
  'them) on the two cores they share with the store and the bench, so the time grows with N/M',
  'and with the load (the load column of the idle table).',
].join('\n');

/**
 * What a member reads while idle, on each store (docs/design.md, "Shard reads by change"): reads
 * of changes on every hint; a whole-group read on the SQL stores only on evidence (a deletion, a
 * refused write), none by the clock; none on Kubernetes.
 */
const READS_NOTE = [
  "A member reads the group whenever its store hints at a change (SQLite's change counter polled",
  'every 50 ms, a PostgreSQL NOTIFY, a Kubernetes watch event), at most every 50 ms, and at least',
  "once per retry period. Every write is such a hint, the other members' heartbeats included, so",
  "a member's reads grow with M (about M − 1 per retry period while they fit in 50 ms apart)",
  'although its writes do not. Each is a read of what changed since its last (on SQLite and',
  "PostgreSQL one query; on Kubernetes an answer from the copy the store's watch keeps, which sends",
  'no request), so it brings the heartbeats written since, its own included, not N + M + 1',
  'records. A whole-group read comes at start, when the group holds fewer records than the copy',
  '(a deletion), and on SQLite and PostgreSQL when a write the store refused shows the copy stale',
  '(a version written by hand below the cursor), never by the clock; on Kubernetes it is the',
  "copy's own answer, no request. On Kubernetes a LIST is sent only to fill the copy (at start, and",
  'when the watch cannot resume) and before a take that rests on time passing (after a crash).',
].join('\n');

/**
 * Why the records goal is missed where a case's whole-group reads bring more records than the
 * heartbeats leave room for, printed while it is: one such read is N + M + 1 records, more than
 * the M × 31 the goal allows a minute once N passes about 30 M.
 */
export const RECORDS_NOTE = [
  "**Why records read can miss their goal.** The goal allows every member's heartbeats (31 × M a",
  "minute). A member's reads of changes bring those (the idle table's first figure); a whole-group",
  'read in the window (the second figure: a deletion, or a refused write that showed the copy',
  'stale) brings N + M + 1 records more, and with N past about 30 × M that read alone is over. The',
  'stores read the whole group by the clock no more (issue 43: it was once a minute).',
].join('\n');

/** Heartbeats this much below one per retry period mean the members' turns waited for a core. */
const LATE_BELOW_PER_MIN = 29;

export function shardReport(runs: readonly ShardStoreRun[], idleSeconds: number): string {
  const idleRows = runs.flatMap((run) =>
    run.results.map((r) => {
      const rss = r.idle.rssMB;
      const cg = clientGoGroupPerMin(r.shards, r.members).updates;
      const whole = `${f1(fullListsPerMin(r))}${r.idle.fromWatch ? ` (${f1(perMin(r.idle.fullReads, r))} from its copy)` : ''}`;
      const records = `${f1(perMin(r.idle.recordsChanges, r))} + ${f1(perMin(recordsRead(r) - r.idle.recordsChanges, r))}`;
      return `| ${run.store} | ${r.shards} | ${r.members} | ${f1(idleWritesPerMin(r))} | ${f1(perMin(r.idle.ownWrites, r))} | ${whole} | ${f1(perMin(r.idle.changeReads, r))} | ${records} | ${r.idle.conflicts} | ${f1(r.idle.cpuPct)} | ${f1(quantile(rss, 0.5))} / ${f1(Math.max(...rss))} | ${f1(r.idle.plainRssMB)} | ${int(cg)} / ${f1(cg / r.members)} | ${f1(r.idle.load)} |`;
    }),
  );
  const apiRows = runs.flatMap((run) =>
    run.results
      .filter((r) => r.idle.apiRequests)
      .map((r) => {
        const a = r.idle.apiRequests!;
        const verbs = VERBS.map((v) => f1(((a[v] ?? 0) * 60) / r.idle.seconds)).join(' / ');
        const all = apiRequestsPerMin(r)!;
        const cg = clientGoGroupPerMin(r.shards, r.members);
        return `| ${run.store} | ${r.shards} | ${r.members} | ${verbs} | ${int(all)} | ${f1(all / r.members)} | ${int(cg.requests)} (${int(cg.updates)} + ${int(cg.gets)}) / ${int(cg.requests / r.members)} | ${f1((100 * all) / cg.requests)} % |`;
      }),
  );
  const apiSection = apiRows.length
    ? `

### Idle: the API server's requests for the group, beside client-go's way

Every request on Leases by the members' users over the idle window, from the API server's audit
log (any answer, lost compare-and-swaps included; a watch counted once, when it starts), a minute
for the whole group, by verb; and every verb together, for the group and per member. Beside it
${CLIENT_GO_MODEL}

| store | N | M | requests/min for the group: get / list / watch / create / update / patch / delete | all | per member | client-go's way: requests/min for the group (UPDATEs + GETs) / per member | share of client-go's |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${apiRows.join('\n')}`
    : '';
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
  const recordsMissed =
    rows.some(({ r }) => !r.idle.fromWatch && r.idle.recordsFull > 0) && goals.some((g) => g.verdict === 'not met' && g.goal.startsWith('records read'));
  const recordsNote = recordsMissed ? `\n\n${RECORDS_NOTE}` : '';
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
)}${moveNote}${recordsNote}

### Idle: the store's writes, reads, CPU and memory per member

Over the idle window, per member per minute: writes as the store counted them, and as the members
counted their own (their \`/metrics\`: creates and updates that succeeded, read just after the
window opened and just before it closed); whole-group reads (the members' count,
\`leasehold_shard_group_reads_total{read="full"}\`; on Kubernetes the LISTs the API server
counted, and in brackets the whole-group answers of the watch's copy, which sent none); reads of
changes; records read (\`leasehold_shard_group_records_read_total\`), by change + in whole-group
reads (on Kubernetes N + M + 1 per LIST, the copy's answers being no read of the store); then
writes that lost their compare-and-swap (all members); CPU as the mean share of one core
per member; RSS per member sampled every 5 s (the median member's median / the largest
member's), beside a plain leader sidecar's, started with the same flags on its own lease in the
same store; the machine's 1-minute load average as the window opened. client-go's way,
computed: one Lease per shard renewed by its owner every retry period (as Knative's buckets
are), N × ${RETRIES_PER_MIN} writes a minute for the group and N/M × ${RETRIES_PER_MIN} per member.

| store | N | M | writes/min per member (store) | (members' count) | whole-group reads/min per member | reads of changes/min per member | records read/min per member: by change + whole | conflicts | CPU % per member | RSS MiB per member | plain sidecar RSS MiB | client-go's way: writes/min, group / per member | load |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${idleRows.join('\n')}

${READS_NOTE}${lateNote}${apiSection}

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
