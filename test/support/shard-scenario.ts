/**
 * The shard groups' scenario on real `leasehold sidecar --shards` processes (issue 38): 64
 * shards, members going 1 -> 4 -> 3 (one stopped gracefully) -> 4 -> 3 (one killed). After each
 * step settles, every member owns 64, then 16, then 21 or 22, and so on; all along, a sampler
 * reads every member's shards.json every 10 ms and checks that no shard is owned twice (by
 * entries still inside their validUntil) and that every shard's token only grows. Shared by the
 * SQLite and PostgreSQL tiers (and the cluster tier reads the same files in pods).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCli, waitFor, type Proc } from './cli.js';

export interface ShardsFile {
  group: string;
  shards: number;
  members: number;
  identity: string;
  owned: { shard: number; fencingToken: number }[];
  validUntil: string | null;
  updatedAt: string;
}

export interface Member {
  id: string;
  statusDir: string;
  proc: Proc;
}

export const SHARD_TIMING = ['--lease-duration', '3s', '--renew-deadline', '2s', '--retry-period', '500ms'];

/** A member's shards.json, or undefined before it is written (or while it is being replaced: never half, it is renamed into place). */
export function readShards(statusDir: string): ShardsFile | undefined {
  try {
    return JSON.parse(readFileSync(join(statusDir, 'shards.json'), 'utf8')) as ShardsFile;
  } catch {
    return undefined;
  }
}

/** The shards a member owns by the app's rule: listed, and validUntil still ahead. */
export function ownedNow(f: ShardsFile | undefined, now = Date.now()): { shard: number; fencingToken: number }[] {
  if (!f || f.validUntil === null || Date.parse(f.validUntil) <= now) return [];
  return f.owned;
}

/**
 * Reads every member's shards.json every 10 ms: a shard listed by two members at once (both
 * within validUntil), or a shard's token lower than one seen before, is a violation.
 */
export function shardSampler(members: () => Member[]) {
  const violations: string[] = [];
  const highest = new Map<number, number>();
  let samples = 0;
  const timer = setInterval(() => {
    samples++;
    const now = Date.now();
    const by = new Map<number, string[]>();
    for (const m of members()) {
      for (const o of ownedNow(readShards(m.statusDir), now)) {
        by.set(o.shard, [...(by.get(o.shard) ?? []), `${m.id}@${o.fencingToken}`]);
        const h = highest.get(o.shard) ?? 0;
        if (o.fencingToken < h) violations.push(`shard ${o.shard}: ${m.id} lists token ${o.fencingToken} after ${h} was seen`);
        highest.set(o.shard, Math.max(h, o.fencingToken));
      }
    }
    for (const [s, owners] of by) if (owners.length > 1) violations.push(`shard ${s} owned twice: ${owners.join(', ')}`);
  }, 10);
  return {
    violations,
    samples: () => samples,
    stop: () => clearInterval(timer),
  };
}

/** Starts one member: `leasehold sidecar --shards N` on the group `lease`, with its own status dir and no HTTP. */
export function startMember(dir: string, id: string, backendArgs: string[], shards: number, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Member {
  const statusDir = join(dir, `status-${id}`);
  const proc = startCli(
    ['sidecar', ...backendArgs, '--shards', String(shards), '--identity', id, '--status-dir', statusDir, '--listen', 'off', ...SHARD_TIMING, ...extra],
    env,
  );
  return { id, statusDir, proc };
}

/** Waits until the live members own every shard once, each floor(N/M) or ceil(N/M); returns their counts. */
export async function settled(members: Member[], shards: number, what: string, ms = 30_000): Promise<number[]> {
  const lo = Math.floor(shards / members.length);
  const hi = Math.ceil(shards / members.length);
  return waitFor(
    what,
    () => {
      const now = Date.now();
      const counts = members.map((m) => ownedNow(readShards(m.statusDir), now).length);
      const all = new Set(members.flatMap((m) => ownedNow(readShards(m.statusDir), now).map((o) => o.shard)));
      return all.size === shards && counts.every((c) => c === lo || c === hi) ? counts : undefined;
    },
    ms,
    20,
  );
}

/**
 * The scenario: 1 -> 4 -> 3 (graceful) -> 4 -> 3 (killed), 64 shards, with the sampler on
 * throughout. Returns what it saw, for the test to print.
 */
export async function membersComeAndGo(dir: string, backendArgs: string[], procs: Proc[], say: (line: string) => void = () => {}): Promise<void> {
  const N = 64;
  const members: Member[] = [];
  const add = (id: string) => {
    const m = startMember(dir, id, backendArgs, N);
    procs.push(m.proc);
    members.push(m);
    return m;
  };
  const sampler = shardSampler(() => members);
  try {
    const t0 = Date.now();
    add('m1');
    assert.deepEqual(await settled(members, N, 'one member owning all 64 shards'), [64]);
    say(`1 member: 64 shards after ${Date.now() - t0} ms (a new group waits a lease duration for shards never seen)`);

    let t = Date.now();
    add('m2');
    add('m3');
    add('m4');
    assert.deepEqual(await settled(members, N, 'four members, 16 each'), [16, 16, 16, 16]);
    say(`4 members: 16 each after ${Date.now() - t} ms`);

    t = Date.now();
    const graceful = members[1]!;
    graceful.proc.kill('SIGTERM');
    const exit = await graceful.proc.exited;
    assert.equal(exit.code, 0, graceful.proc.stderr());
    members.splice(1, 1);
    const three = await settled(members, N, 'three members after a graceful stop, 21 or 22 each');
    say(`3 members after a graceful stop: ${three.join(', ')} after ${Date.now() - t} ms`);

    t = Date.now();
    add('m5');
    assert.deepEqual(await settled(members, N, 'four members again, 16 each'), [16, 16, 16, 16]);
    say(`4 members again: 16 each after ${Date.now() - t} ms`);

    t = Date.now();
    const killed = members[0]!;
    killed.proc.kill('SIGKILL');
    await killed.proc.exited;
    members.splice(0, 1);
    const after = await settled(members, N, 'three members after a crash, 21 or 22 each');
    say(`3 members after a crash: ${after.join(', ')} after ${Date.now() - t} ms (its shards wait out the lease duration)`);
  } finally {
    sampler.stop();
  }
  say(`sampler: ${sampler.samples()} samples of every member's shards.json`);
  assert.deepEqual(sampler.violations.slice(0, 5), [], 'never one shard owned twice, never a token going back');
  assert.ok(sampler.samples() > 100, 'the sampler ran');
}
