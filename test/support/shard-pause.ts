/**
 * Issue 41's shard findings on real `leasehold sidecar --shards` processes, one harness for every
 * store (the caller gives the backend's flags): 3 members, each paused (SIGSTOP) in turn a little
 * longer than the lease duration (finding A), while a sampler reads every member's shards.json
 * every 10 ms with the apps' safe reader (`readOwnedShards`: an entry counts only while its
 * validUntil is ahead).
 *
 * The sampler counts two things that must stay at 0:
 * - shards listed by two members at once;
 * - reused tokens: a shard's token seen with two different owners, or a shard listed with a
 *   token lower than one already seen for it (every move gives the shard its token + 1); the
 *   two are kept apart, since a replaced SQLite file (finding B) reuses the first kind without
 *   any overlap (docs/shards.md "Limits").
 *
 * The tiers run a short form (small N, a few pauses); `npm run chaos -- --backend shard-pause-*`
 * runs the issue's set-up (N = 2048, lease 4 s, pauses of 4.0-4.5 s in 50 ms steps).
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCli, type Proc } from './cli.js';
import { settled, type Member } from './shard-scenario.js';
import { readOwnedShards } from '../../src/status/shards-status.js';

export interface ShardTiming {
  leaseMs: number;
  renewDeadlineMs: number;
  retryMs: number;
}

export const SHORT_TIMING: ShardTiming = { leaseMs: 3_000, renewDeadlineMs: 2_000, retryMs: 500 };
export const ISSUE_TIMING: ShardTiming = { leaseMs: 4_000, renewDeadlineMs: 3_000, retryMs: 500 };

export function timingArgs(t: ShardTiming): string[] {
  return ['--lease-duration', `${t.leaseMs}ms`, '--renew-deadline', `${t.renewDeadlineMs}ms`, '--retry-period', `${t.retryMs}ms`];
}

/** Pauses of the lease duration plus 0, step, 2*step ... up to `extraMs`. */
export function pausesPast(leaseMs: number, extraMs: number, stepMs: number): number[] {
  const out: number[] = [];
  for (let extra = 0; extra <= extraMs; extra += stepMs) out.push(leaseMs + extra);
  return out;
}

/** One member with its own timing: `leasehold sidecar --shards N`, its own status dir, no HTTP unless `extra` gives --listen. */
export function startTimedMember(dir: string, id: string, backendArgs: string[], shards: number, timing: ShardTiming, extra: string[] = []): Member {
  const statusDir = join(dir, `status-${id}`);
  const proc = startCli([
    'sidecar',
    ...backendArgs,
    '--shards',
    String(shards),
    '--identity',
    id,
    '--status-dir',
    statusDir,
    // No HTTP unless `extra` asks for it (a drain needs it).
    ...(extra.includes('--listen') ? [] : ['--listen', 'off']),
    ...timingArgs(timing),
    ...extra,
  ]);
  return { id, statusDir, proc };
}

export interface OwnerSample {
  /** Sampling rounds so far. */
  samples: number;
  /** Shards listed by two members at once. */
  shardsTwice: Set<number>;
  /** "shard@token" seen with two different owners (at any times). */
  tokensTwoOwners: Set<string>;
  /** "shard@token" listed after a higher token was seen for the shard. */
  tokensBackwards: Set<string>;
  /** Tokens listed for two different shards (every token comes from the group's high-water blocks). */
  tokensOnTwoShards: Set<number>;
  /** The first few of each kind, for the failure messages. */
  twiceExamples: string[];
  backwardsExamples: string[];
  twoOwnerExamples: string[];
}

/**
 * Every 10 ms, every member's shards.json as the app reads it. `members` is read on each round,
 * so a scenario may add members; `onListed` sees each (member, shard) listed.
 */
export function ownerSampler(members: () => Member[], onListed?: (id: string, shard: number, token: number, at: number) => void) {
  const s: OwnerSample = {
    samples: 0,
    shardsTwice: new Set(),
    tokensTwoOwners: new Set(),
    tokensBackwards: new Set(),
    twiceExamples: [],
    backwardsExamples: [],
    twoOwnerExamples: [],
    tokensOnTwoShards: new Set(),
  };
  // An owner is a member process, not its id: a member restarted under the same id (a restart
  // round) that lists a token its earlier process listed has reused it all the same.
  const processOf = new WeakMap<Member, number>();
  let processes = 0;
  const ownerOf = (m: Member): string => {
    if (!processOf.has(m)) processOf.set(m, ++processes);
    return `${m.id} (process ${processOf.get(m)})`;
  };
  const ownerOfToken = new Map<string, string>();
  const shardOfToken = new Map<number, number>();
  const highest = new Map<number, number>();
  const note = (to: string[], line: string) => {
    if (to.length < 8) to.push(line);
  };
  // Each file is judged when it is read (as an app reads it), not at the round's start: a
  // round that a loaded machine stretches would otherwise count a listing that had expired
  // before another member took the shard. And a shard counts as listed twice only when two
  // passes in opposite orders both find it so: a graceful handoff between two reads of one pass
  // (the old owner read before it let go, the new one after it took) is not an overlap, while
  // two members listing at once are found by both passes.
  const pass = (order: Member[], first: boolean): Map<number, { id: string; token: number }[]> => {
    const listedBy = new Map<number, { id: string; token: number }[]>();
    for (const m of order) {
      const readAt = new Date();
      for (const o of readOwnedShards(m.statusDir, readAt).owned) {
        listedBy.set(o.shard, [...(listedBy.get(o.shard) ?? []), { id: m.id, token: o.fencingToken }]);
        if (first) onListed?.(m.id, o.shard, o.fencingToken, readAt.getTime());
        const key = `${o.shard}@${o.fencingToken}`;
        const owner = ownerOf(m);
        const firstOwner = ownerOfToken.get(key);
        if (firstOwner === undefined) ownerOfToken.set(key, owner);
        else if (firstOwner !== owner && !s.tokensTwoOwners.has(key)) {
          s.tokensTwoOwners.add(key);
          note(s.twoOwnerExamples, `shard ${o.shard} token ${o.fencingToken}: listed by ${firstOwner}, then by ${owner}`);
        }
        const shardBefore = shardOfToken.get(o.fencingToken);
        if (shardBefore === undefined) shardOfToken.set(o.fencingToken, o.shard);
        else if (shardBefore !== o.shard && !s.tokensOnTwoShards.has(o.fencingToken)) {
          s.tokensOnTwoShards.add(o.fencingToken);
          note(s.twoOwnerExamples, `token ${o.fencingToken}: listed for shard ${shardBefore}, then for shard ${o.shard} by ${owner}`);
        }
        const h = highest.get(o.shard) ?? 0;
        if (o.fencingToken < h && !s.tokensBackwards.has(key)) {
          s.tokensBackwards.add(key);
          note(s.backwardsExamples, `shard ${o.shard}: ${m.id} lists token ${o.fencingToken} after ${h} was seen`);
        }
        highest.set(o.shard, Math.max(h, o.fencingToken));
      }
    }
    return listedBy;
  };
  const timer = setInterval(() => {
    s.samples++;
    const order = members();
    const forward = pass(order, true);
    const backward = pass([...order].reverse(), false);
    for (const [shard, owners] of forward) {
      if (owners.length < 2 || (backward.get(shard)?.length ?? 0) < 2) continue;
      if (!s.shardsTwice.has(shard)) note(s.twiceExamples, `shard ${shard} listed twice: ${owners.map((o) => `${o.id} token ${o.token}`).join(', ')}`);
      s.shardsTwice.add(shard);
    }
  }, 10);
  return { sample: s, stop: () => clearInterval(timer) };
}

export interface PauseOptions {
  dir: string;
  backendArgs: string[];
  shards: number;
  timing: ShardTiming;
  pausesMs: number[];
  /** Every process started, for the caller's teardown. */
  procs: Proc[];
  /** How long the group may take to settle (a first settle at large N on Kubernetes is slow). */
  settleMs?: number;
  say?: (line: string) => void;
}

export interface PauseReport {
  store: string;
  shards: number;
  leaseMs: number;
  pausesMs: number[];
  /** Shards listed twice during each pause and its settling. */
  twicePerPause: number[];
  samples: number;
  shardsTwice: number;
  /** Tokens seen with two owners, or after a higher one. */
  tokensReused: number;
  examples: string[];
  firstSettleMs: number;
  totalMs: number;
  /** Members that exited during the run (with the end of their stderr). */
  exited: string[];
}

/** Finding A: 3 members, each paused in turn for `pausesMs[i]`, the group settled after each. */
export async function pauseScenario(o: PauseOptions): Promise<PauseReport> {
  const say = o.say ?? (() => {});
  const settleMs = o.settleMs ?? 120_000;
  const started = Date.now();
  const members = ['m1', 'm2', 'm3'].map((id) => startTimedMember(o.dir, id, o.backendArgs, o.shards, o.timing));
  o.procs.push(...members.map((m) => m.proc));
  const counts = await settled(members, o.shards, `3 members owning ${o.shards} shards`, settleMs);
  const firstSettleMs = Date.now() - started;
  say(`settled: ${counts.join(', ')} after ${firstSettleMs} ms`);

  const sampler = ownerSampler(() => members);
  const twicePerPause: number[] = [];
  try {
    for (const [i, pauseMs] of o.pausesMs.entries()) {
      const m = members[i % members.length]!;
      const before = sampler.sample.shardsTwice.size;
      m.proc.kill('SIGSTOP');
      try {
        await sleep(pauseMs); // the pause itself is the fault under test
      } finally {
        m.proc.kill('SIGCONT');
      }
      const t = Date.now();
      const after = await settled(members, o.shards, `the group to settle after ${m.id}'s pause of ${pauseMs} ms`, settleMs);
      twicePerPause.push(sampler.sample.shardsTwice.size - before);
      say(`${m.id} paused ${pauseMs} ms: settled ${after.join(', ')} after ${Date.now() - t} ms; shards listed twice: ${twicePerPause.at(-1)}`);
    }
  } finally {
    sampler.stop();
  }
  const s = sampler.sample;
  return {
    store: storeOf(o.backendArgs),
    shards: o.shards,
    leaseMs: o.timing.leaseMs,
    pausesMs: o.pausesMs,
    twicePerPause,
    samples: s.samples,
    shardsTwice: s.shardsTwice.size,
    tokensReused: new Set([...s.tokensTwoOwners, ...s.tokensBackwards]).size,
    examples: [...s.twiceExamples, ...s.backwardsExamples, ...s.twoOwnerExamples],
    firstSettleMs,
    totalMs: Date.now() - started,
    exited: members.filter((m) => m.proc.child.exitCode !== null).map((m) => `${m.id}: ${m.proc.stderr().slice(-500)}`),
  };
}

export function storeOf(backendArgs: string[]): string {
  const i = backendArgs.indexOf('--backend');
  return i >= 0 ? backendArgs[i + 1]! : 'sqlite';
}

export function formatPauseReport(r: PauseReport): string {
  return [
    `${r.store}: 3 members, N = ${r.shards}, lease ${r.leaseMs} ms, ${r.pausesMs.length} pauses of ${r.pausesMs[0]}-${r.pausesMs.at(-1)} ms`,
    `  first settle ${r.firstSettleMs} ms, ${r.totalMs} ms in all, ${r.samples} samples`,
    `  shards listed by two members: ${r.shardsTwice} (per pause: ${r.twicePerPause.join(', ')}); tokens reused: ${r.tokensReused}`,
    ...r.examples.map((e) => `  ${e}`),
    ...r.exited.map((e) => `  exited: ${e}`),
  ].join('\n');
}
