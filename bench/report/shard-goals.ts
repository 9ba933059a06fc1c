/**
 * The shard groups' goals (issue 38), one row per goal and store, each with the worst case this
 * run measured, where, and whether it met the goal, as handoff-goals.ts does for handoffs. Pure:
 * it formats the figures of bench/lib/shard-chain.ts it is given.
 */
import { quantile } from '../lib/quantile.js';
import { DEFAULT_T, GOALS, type ShardCaseResult } from '../lib/shard-chain.js';

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

/** Writes per member per minute at the store while idle. */
export const idleWritesPerMin = (r: ShardCaseResult): number => (r.idle.writes / r.members) * (60 / r.idle.seconds);

/**
 * One heartbeat per retry period, and the one more a window's edge can catch: per member, at
 * most floor(window / retryPeriod) + 1 writes in the window (31 in 60 s with the defaults).
 */
export const idleWritesAllowed = (seconds: number): number => Math.floor((seconds * 1000) / DEFAULT_T.retryMs) + 1;

/** A graceful leave's p95 over the leaver's shards of the time each was owned again (0 when it owned none). */
export const leaveP95 = (r: ShardCaseResult): number => (r.leave.perShardMs?.length ? quantile(r.leave.perShardMs, 0.95) : 0);

/** The largest member's RSS over the plain sidecar's, MiB. */
export const rssOverPlain = (r: ShardCaseResult): number => Math.max(...r.idle.rssMB) - r.idle.plainRssMB;

const where = (r: ShardCaseResult) => `N = ${r.shards}, M = ${r.members}`;
const f1 = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

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
    ) => {
      if (cases.length === 0) {
        rows.push({ goal, store, measured: 'not measured in this run', target, verdict: '' });
        return;
      }
      const w = cases.reduce((a, b) => (value(b) > value(a) ? b : a));
      const failed = cases.filter((r) => !ok(r));
      const also = failed.length > 1 ? `; ${failed.length} of ${cases.length} cases over` : '';
      rows.push({ goal, store, measured: `${fmt(w)} (${where(w)}${also})`, target, verdict: failed.length === 0 ? 'met' : 'not met' });
    };
    worst(
      'store writes per member per minute while idle, at every N',
      `one heartbeat per retry period, and the one a window's edge catches: ≤ ${allowed} in ${idleSeconds} s (${f1((allowed * 60) / idleSeconds)} a minute)`,
      results,
      (r) => r.idle.writes / r.members / idleWritesAllowed(r.idle.seconds),
      (r) => idleWritesPerMin(r).toFixed(1),
      (r) => r.idle.writes / r.members <= idleWritesAllowed(r.idle.seconds),
    );
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
