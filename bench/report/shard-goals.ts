/**
 * The shard groups' goals (issues 38 and 43), one row per goal and store, each with the worst case this
 * run measured, where, and whether it met the goal, as handoff-goals.ts does for handoffs. Pure:
 * it formats the figures of bench/lib/shard-chain.ts it is given.
 */
import { quantile } from '../lib/quantile.js';
import { DEFAULT_T, GOALS, type ShardCaseResult } from '../lib/shard-chain.js';
import { totalRequests } from '../lib/group-requests.js';
import { clientGoGroupPerMin } from './client-go-shards.js';

export interface ShardGoalStore {
  store: string;
  results: readonly ShardCaseResult[];
}

export interface ShardGoalRow {
  goal: string;
  store: string;
  /** The worst case, and where (N, M); or why not measured. */
  measured: string;
  target: string;
  verdict: 'met' | 'not met' | '';
}

/** The leave goal: a graceful leave's shards owned by others within this, p95 over its shards. */
export const LEAVE_P95_GOAL_MS = GOALS.leaveP95Ms;
/** A join balanced within 2 s plus the drains (the bench configures none). */
export const JOIN_GOAL_MS = GOALS.joinMs;
/** A crash's shards owned within the lease duration + 1 s. */
export const CRASH_GOAL_MS = GOALS.crashMs;
export const RSS_GOAL_MB = 10;
export const RSS_GOAL_SHARDS = 1024;
/** The member count at which CPU per member is reported (issue 43). */
export const CPU_AT_MEMBERS = 32;

/** Writes per member per minute at the store while idle. */
export const idleWritesPerMin = (r: ShardCaseResult): number => (r.idle.writes / r.members) * (60 / r.idle.seconds);

/**
 * One heartbeat per retry period, and the one more a window's edge can catch: per member, at
 * most floor(window / retryPeriod) + 1 writes in the window (31 in 60 s with the defaults).
 */
export const idleWritesAllowed = (seconds: number): number => Math.floor((seconds * 1000) / DEFAULT_T.retryMs) + 1;

/** Whole-group reads a member may make in a window while idle: one a minute, and the one a window's edge catches. */
export const fullListsAllowed = (seconds: number): number => Math.floor(seconds / 60) + 1;

/**
 * Records a member may read in a window while idle: every member's heartbeats, its own included
 * (a read of changes brings them back too), each as idleWritesAllowed counts them:
 * 31 × (M − 1) + 31 a minute with the defaults.
 */
export const recordsAllowed = (members: number, seconds: number): number => members * idleWritesAllowed(seconds);

/**
 * Whole-group reads in the idle window, every member together: where reads by change come from a
 * watch's copy (Kubernetes), the LISTs the API server counted (the copy's whole-group answers
 * send none); elsewhere the members' own count (lists, and reads by change answered in full).
 */
export const fullLists = (r: ShardCaseResult): number => (r.idle.fromWatch ? (r.idle.apiRequests?.list ?? 0) : r.idle.fullReads);

/**
 * Records read in the idle window, every member together: what their reads brought. From a
 * watch's copy, the records its reads of changes brought (each one a watch event the copy took
 * in) and N + M + 1 per LIST, the copy's whole-group answers being no read of the store.
 */
export const recordsRead = (r: ShardCaseResult): number =>
  r.idle.recordsChanges + (r.idle.fromWatch ? fullLists(r) * (r.shards + r.members + 1) : r.idle.recordsFull);

const perMemberMin = (n: number, r: ShardCaseResult) => (n / r.members) * (60 / r.idle.seconds);
export const fullListsPerMin = (r: ShardCaseResult): number => perMemberMin(fullLists(r), r);
export const recordsReadPerMin = (r: ShardCaseResult): number => perMemberMin(recordsRead(r), r);

/** The API server's requests for the group a minute (Kubernetes; undefined elsewhere). */
export const apiRequestsPerMin = (r: ShardCaseResult): number | undefined =>
  r.idle.apiRequests ? totalRequests(r.idle.apiRequests) * (60 / r.idle.seconds) : undefined;

/** A graceful leave's p95 over the leaver's shards of the time each was owned again (0 when it owned none). */
export const leaveP95 = (r: ShardCaseResult): number => (r.leave.perShardMs?.length ? quantile(r.leave.perShardMs, 0.95) : 0);

/** The largest member's RSS over the plain sidecar's, MiB. */
export const rssOverPlain = (r: ShardCaseResult): number => Math.max(...r.idle.rssMB) - r.idle.plainRssMB;

const where = (r: ShardCaseResult) => `N = ${r.shards}, M = ${r.members}`;
const f1 = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
const int = (n: number) => Math.round(n).toLocaleString('en-US');

/** `idleSeconds`: the idle window the cases were given, for the target's wording (each case is judged on its own window). */
export function shardGoalRows(stores: readonly ShardGoalStore[], idleSeconds: number): ShardGoalRow[] {
  const rows: ShardGoalRow[] = [];
  const allowed = idleWritesAllowed(idleSeconds);
  for (const { store, results } of stores) {
    /** The case with the highest `value`, shown with `fmt`, against `ok`. */
    const worst = (
      goal: string,
      target: string,
      cases: readonly ShardCaseResult[],
      value: (r: ShardCaseResult) => number,
      fmt: (r: ShardCaseResult) => string,
      ok: (r: ShardCaseResult) => boolean,
      unjudged?: { when: (r: ShardCaseResult) => boolean; why: string },
    ) => {
      if (cases.length === 0) {
        rows.push({ goal, store, measured: 'not measured in this run', target, verdict: '' });
        return;
      }
      const w = cases.reduce((a, b) => (value(b) > value(a) ? b : a));
      const open = cases.filter((r) => unjudged?.when(r) === true);
      const failed = cases.filter((r) => !open.includes(r) && !ok(r));
      const also = failed.length > 1 ? `; ${failed.length} of ${cases.length} cases over` : '';
      const notJudged = open.length > 0 ? `; ${open.length} of ${cases.length} cases not judged: ${unjudged!.why}` : '';
      // A case that cannot be judged never makes the row "met": only the measured ones can.
      const verdict = failed.length > 0 ? 'not met' : open.length > 0 ? '' : 'met';
      rows.push({ goal, store, measured: `${fmt(w)} (${where(w)}${also}${notJudged})`, target, verdict });
    };
    worst(
      'store writes per member per minute while idle, at every N',
      `one heartbeat per retry period, and the one a window's edge catches: ≤ ${allowed} in ${idleSeconds} s (${f1((allowed * 60) / idleSeconds)} a minute)`,
      results,
      (r) => r.idle.writes / r.members / idleWritesAllowed(r.idle.seconds),
      (r) => idleWritesPerMin(r).toFixed(1),
      (r) => r.idle.writes / r.members <= idleWritesAllowed(r.idle.seconds),
    );
    const k8s = results.some((r) => r.idle.fromWatch);
    worst(
      k8s ? "LISTs per member per minute while idle (the API server's count)" : 'whole-group reads per member per minute while idle',
      k8s ? 'none while the watch lasts' : `one a minute, and the one a window's edge catches: ≤ ${fullListsAllowed(idleSeconds)} in ${idleSeconds} s`,
      results,
      (r) => fullLists(r) / r.members / fullListsAllowed(r.idle.seconds),
      (r) => fullListsPerMin(r).toFixed(1),
      (r) => (r.idle.fromWatch ? fullLists(r) === 0 : fullLists(r) / r.members <= fullListsAllowed(r.idle.seconds)),
      // A window under a minute that caught a member's minute read cannot tell one a minute from
      // several (1 in 10 s would pass for 6 a minute): not judged. None at all passes any window.
      {
        when: (r) => !r.idle.fromWatch && r.idle.seconds < 60 && fullLists(r) > 0,
        why: 'a window under a minute caught a whole-group read (judge with --shard-idle-seconds 60 or more)',
      },
    );
    worst(
      'records read per member per minute while idle',
      `every member's heartbeats: ≤ 31 × (M − 1) + 31 a minute, ≤ M × ${allowed} in ${idleSeconds} s`,
      results,
      (r) => recordsRead(r) / r.members / recordsAllowed(r.members, r.idle.seconds),
      (r) =>
        `${recordsReadPerMin(r).toFixed(1)} of ${f1((recordsAllowed(r.members, r.idle.seconds) * 60) / r.idle.seconds)} allowed, ${perMemberMin(r.idle.recordsChanges, r).toFixed(1)} by change`,
      (r) => recordsRead(r) / r.members <= recordsAllowed(r.members, r.idle.seconds),
    );
    if (results.some((r) => r.idle.apiRequests))
      worst(
        "the API server's requests for the whole group per minute while idle (audit log), beside client-go's way",
        "fewer than client-go's way for the same N and M (N × 30 × M: its model below)",
        results.filter((r) => r.idle.apiRequests),
        (r) => apiRequestsPerMin(r)! / clientGoGroupPerMin(r.shards, r.members).requests,
        (r) => `${int(apiRequestsPerMin(r)!)} vs ${int(clientGoGroupPerMin(r.shards, r.members).requests)}`,
        (r) => apiRequestsPerMin(r)! < clientGoGroupPerMin(r.shards, r.members).requests,
      );
    // Issue 43 asks for CPU per member at M = 32 beside the rest, with no bound: reported, not judged.
    const cpuCases = results.filter((r) => r.members === CPU_AT_MEMBERS);
    const cpuWorst = cpuCases.length ? cpuCases.reduce((a, b) => (b.idle.cpuPct > a.idle.cpuPct ? b : a)) : undefined;
    rows.push({
      goal: `CPU per member at M = ${CPU_AT_MEMBERS}, % of one core`,
      store,
      measured: cpuWorst ? `${cpuWorst.idle.cpuPct.toFixed(1)} (${where(cpuWorst)})` : 'not measured in this run',
      target: 'reported',
      verdict: '',
    });
    worst(
      'a graceful leave (SIGTERM): its shards owned by others, p95 over its shards',
      `≤ ${LEAVE_P95_GOAL_MS} ms`,
      results,
      leaveP95,
      (r) => `${leaveP95(r)} ms`,
      (r) => leaveP95(r) <= LEAVE_P95_GOAL_MS,
    );
    worst(
      'a join balanced (no drain configured)',
      `≤ ${JOIN_GOAL_MS} ms + the drains`,
      results,
      (r) => r.join.ms,
      (r) => `${r.join.ms} ms`,
      (r) => r.join.ms <= JOIN_GOAL_MS,
    );
    worst(
      'a crash (SIGKILL): its shards owned by others',
      `≤ lease duration + 1 s = ${CRASH_GOAL_MS} ms`,
      results,
      (r) => r.crash.ms,
      (r) => `${r.crash.ms} ms`,
      (r) => r.crash.ms <= CRASH_GOAL_MS,
    );
    worst(
      `RSS per member at N = ${RSS_GOAL_SHARDS} (the largest member) over a plain leader sidecar's`,
      `≤ ${RSS_GOAL_MB} MiB`,
      results.filter((r) => r.shards === RSS_GOAL_SHARDS),
      rssOverPlain,
      (r) => `+${rssOverPlain(r).toFixed(1)} MiB (${Math.max(...r.idle.rssMB).toFixed(1)} vs ${r.idle.plainRssMB.toFixed(1)})`,
      (r) => rssOverPlain(r) <= RSS_GOAL_MB,
    );
  }
  return rows;
}

export function shardGoalsMarkdown(stores: readonly ShardGoalStore[], idleSeconds: number): string {
  const rows = shardGoalRows(stores, idleSeconds);
  const verdict = (v: ShardGoalRow['verdict']) => (v === 'not met' ? '**not met**' : v);
  return [
    '| goal | store | worst case measured (where) | target | |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.goal} | ${r.store} | ${r.measured} | ${r.target} | ${verdict(r.verdict)} |`),
  ].join('\n');
}
