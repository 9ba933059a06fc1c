/**
 * The kubelet's probes of the sidecar itself: its liveness (/healthz) and readiness (/readyz)
 * verdicts, from the elector's snapshot. Not the app's health, which is src/health/.
 */
import type { Timings } from '../config/election-options.js';
import type { CandidateSnapshot } from '../election/candidate-loop.js';
import type { LeaseStore } from '../backends/lease-store.js';
import type { ShardMemberSnapshot } from '../shards/shard-member.js';
import type { Eligibility } from '../health/eligibility.js';
import { escapeForTerminal } from '../util/escape-control.js';

const READY_WHEN = ['leader', 'elected-any'] as const;
export type ReadyWhen = (typeof READY_WHEN)[number];

export function isReadyWhen(v: string): v is ReadyWhen {
  return (READY_WHEN as readonly string[]).includes(v);
}

export interface Verdict {
  ok: boolean;
  reason: string;
}

/** How late the loop may be past its own schedule before it counts as stuck. */
const LOOP_SLACK_MS = 5_000;

/**
 * Liveness, as client-go's HealthzAdaptor plus a loop check: unhealthy when the loop has
 * stopped, when it is more than LOOP_SLACK_MS past the moment it should have made progress
 * (the end of its wait or of its attempt: a standby relying on its watch legitimately waits
 * up to a minute), or when it still claims leadership without a renewal for a whole lease
 * duration (it should have stepped down at renewDeadline: something is stuck).
 * `nowMono` is the elector clock's monotonic time.
 */
export function liveness(s: CandidateSnapshot, t: Timings, nowMono: number): Verdict {
  if (!s.running) return { ok: false, reason: 'election loop is not running' };
  if (s.isLeader && s.lastRenewMonotonic !== null && nowMono - s.lastRenewMonotonic > t.leaseDurationMs) {
    return { ok: false, reason: `leader has not renewed for ${Math.round(nowMono - s.lastRenewMonotonic)} ms (lease duration ${t.leaseDurationMs} ms)` };
  }
  if (s.loopDueMonotonic !== null && nowMono - s.loopDueMonotonic > LOOP_SLACK_MS) {
    return { ok: false, reason: `election loop is ${Math.round(nowMono - s.loopDueMonotonic)} ms behind its schedule` };
  }
  return { ok: true, reason: 'ok' };
}

/**
 * Readiness. "leader" (default): ready only while leading, so a Service routes to the leader.
 * "elected-any": ready once any holder has been seen, and stays so: pods of a rolling update
 * become ready although the old leader keeps the lease, so the rollout cannot deadlock.
 */
export class Readiness {
  private seenLeader = false;
  constructor(readonly mode: ReadyWhen) {}

  check(s: CandidateSnapshot): Verdict {
    if (s.holder) this.seenLeader = true;
    if (this.mode === 'leader') {
      // The holder is the store's: escaped, so the body cannot move the cursor of whoever prints it.
      return s.isLeader ? { ok: true, reason: 'leader' } : { ok: false, reason: `not leader (holder: ${s.holder ? escapeForTerminal(s.holder) : 'none'})` };
    }
    return this.seenLeader ? { ok: true, reason: 'a leader has been elected' } : { ok: false, reason: 'no leader seen yet' };
  }
}

/**
 * A shard group member's liveness: unhealthy when its loop has stopped, or has begun no turn
 * for a lease duration and LOOP_SLACK_MS (a turn begins at least every retry period, and each
 * of its store calls is bounded by the request timeout: a loop this late is stuck).
 */
export function shardLiveness(s: ShardMemberSnapshot, t: Timings, nowMono: number): Verdict {
  if (!s.running) return { ok: false, reason: 'shard member loop is not running' };
  if (s.lastTurnMonotonic !== null && nowMono - s.lastTurnMonotonic > t.leaseDurationMs + LOOP_SLACK_MS) {
    return { ok: false, reason: `shard member loop has begun no turn for ${Math.round(nowMono - s.lastTurnMonotonic)} ms` };
  }
  return { ok: true, reason: 'ok' };
}

/**
 * A shard group member's readiness: ready while it holds a session in the group (a member slot
 * it heartbeats) as an active member, which it is only while its app is eligible. Owning a shard
 * is not asked: with more members than shards, a ready member may own none, and a new pod of a
 * rollout is ready once it has joined.
 */
export function shardReadiness(s: ShardMemberSnapshot): Verdict {
  // A loop that ended (the group was recreated with another count) never joins again: not "not yet".
  if (!s.running) return { ok: false, reason: 'shard member loop is not running' };
  if (s.standingAside) return { ok: false, reason: `not taking shards: ${escapeForTerminal(s.standingAside.reason)}` };
  if (!s.session) return { ok: false, reason: `not a member of shard group ${s.group} yet (no member slot)` };
  if (s.state !== 'active') return { ok: false, reason: `leaving shard group ${s.group}` };
  return { ok: true, reason: `member of shard group ${s.group} (slot ${s.session.slot}), owns ${s.owned.length} of ${s.shards} shards` };
}

/**
 * A store that cannot work until a person acts (PostgreSQL: the lease table was dropped) makes
 * both checks fail with its reason: nobody can lead, and a restart recreates the table when the
 * role may (or stops with the SQL to run, exit 2).
 */
export function withStoreProblem(store: Pick<LeaseStore, 'problem'>, v: Verdict): Verdict {
  const problem = store.problem?.() ?? null;
  return problem === null ? v : { ok: false, reason: `store: ${escapeForTerminal(problem)}` };
}

/**
 * A status directory that takes no writes (StatusWritable) makes readiness fail with its reason,
 * whatever the mode: this candidate neither holds nor takes anything its app could read.
 */
export function withStatusProblem(writable: Pick<Eligibility, 'standAside'> | null, v: Verdict): Verdict {
  const aside = writable?.standAside() ?? null;
  return aside === null ? v : { ok: false, reason: `status files: ${escapeForTerminal(aside.reason)}` };
}
