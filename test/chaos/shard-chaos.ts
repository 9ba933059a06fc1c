/**
 * Shard chaos with fenced writes (issue 42): a group of `leasehold sidecar --shards` members
 * (test/support/shard-scenario.ts's startMember), each beside an app writing every shard it owns
 * through the fence (test/chaos/shard-chaos-app.ts), on SQLite or PostgreSQL. Faults, from a
 * seeded schedule: a member frozen whole (sidecar and app SIGSTOPped) until the other members
 * have taken every shard it owned and written to each with a newer token (or FREEZE_CAP_MS), then
 * resumed: its app wakes mid-loop with the old tokens and writes, as a paused worker does.
 *
 * Judged on the resource's rows (test/support/fenced-writes-judge.ts): per shard key no accepted
 * token below an earlier one; every write an app was told accepted is there, none it was told
 * refused. Refused stale writes are counted: a run that produced none showed nothing, so the freezes
 * go on past the run's seconds until one was refused (up to three times as long).
 */
import { join } from 'node:path';
import { REPO, start, waitFor, type Proc } from '../support/cli.js';
import { ownedNow, readShards, settled, startMember, type Member } from '../support/shard-scenario.js';
import { judgeFencedWrites, type FencedWritesVerdict, type WriteAttempt } from '../support/fenced-writes-judge.js';
import { prng } from '../support/prng.js';
import { shardFenceKey } from '../../src/fencing/claim.js';
import { openFencedWrites, RESOURCE } from './fenced-writes.js';

export interface ShardChaosOptions {
  store: 'sqlite' | 'postgres';
  /** The sidecars' store flags (`--db ...` or `--backend postgres --postgres-url ...`) and `--lease`. */
  backendArgs: string[];
  /** The resource: an SQLite file, or a PostgreSQL URL. */
  target: string;
  dir: string;
  seed: number;
  seconds: number;
  members?: number;
  shards?: number;
  /** Every process started is pushed here, so the caller's teardown can reach it even on failure. */
  procs: Proc[];
  log?: (line: string) => void;
}

export interface ShardChaosReport {
  store: string;
  seed: number;
  members: number;
  shards: number;
  freezes: number;
  /** Freezes resumed at FREEZE_CAP_MS before every shard of the frozen member had a newer write. */
  freezesCapped: number;
  verdict: FencedWritesVerdict;
}

const APP = join(REPO, 'test/chaos/shard-chaos-app.ts');
/** A freeze lasts until the others wrote every shard it owned, or this long (a frozen app may hold a lock). */
const FREEZE_CAP_MS = 10_000;

interface Worker {
  member: Member;
  app: Proc;
}

export async function runShardChaos(o: ShardChaosOptions): Promise<ShardChaosReport> {
  const rand = prng(o.seed);
  const say = o.log ?? (() => {});
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const shards = o.shards ?? 32;
  const count = o.members ?? 3;
  const resource = await openFencedWrites(o.store, o.target, true);
  const workers: Worker[] = [];
  let freezes = 0;
  let freezesCapped = 0;
  try {
    for (let i = 1; i <= count; i++) {
      const member = startMember(o.dir, `m${i}`, o.backendArgs, shards);
      o.procs.push(member.proc);
      const app = start(process.execPath, ['--import', 'tsx', APP, member.statusDir, o.store, o.target, member.id]);
      o.procs.push(app);
      workers.push({ member, app });
    }
    const members = workers.map((w) => w.member);
    await settled(members, shards, `${count} members sharing ${shards} shards`, 60_000);
    await waitFor('a write to every shard', async () => (await resource.highest()).size === shards, 30_000, 100);
    say(`${o.store}: ${count} members own ${shards} shards, each written; seed ${o.seed}, ${o.seconds} s of freezes`);

    // A freeze shows nothing when it ends capped (the frozen app held a fence row's lock, so the
    // others could not overtake it) or when it caught the app between loops (it resumes reading a
    // shards.json already out of date, and writes nothing). So the run goes on past its seconds
    // until some app was refused a stale write, up to three times as long.
    const deadline = Date.now() + o.seconds * 1000;
    const lastChance = Date.now() + 3 * o.seconds * 1000;
    const refusedStale = () => workers.some((w) => w.app.stdout().includes('"outcome":"stale"'));
    while (Date.now() < deadline || (Date.now() < lastChance && !refusedStale())) {
      await sleep(500 + rand() * 1_000);
      const victim = workers[Math.floor(rand() * workers.length)]!;
      const held = ownedNow(readShards(victim.member.statusDir));
      if (held.length === 0) continue;
      victim.member.proc.kill('SIGSTOP');
      victim.app.kill('SIGSTOP');
      freezes++;
      const t0 = Date.now();
      const overtaken = async () => {
        const highest = await resource.highest();
        return held.every((h) => (highest.get(shardFenceKey(RESOURCE, h.shard)) ?? 0) > h.fencingToken);
      };
      const done = await waitFor(`newer writes to the ${held.length} shards ${victim.member.id} held`, overtaken, FREEZE_CAP_MS, 100).catch(() => false);
      if (!done) freezesCapped++;
      victim.member.proc.kill('SIGCONT');
      victim.app.kill('SIGCONT');
      say(`froze ${victim.member.id} (${held.length} shards) for ${Date.now() - t0} ms${done ? '' : ' (capped)'}`);
      await settled(members, shards, 'the group whole again after a freeze', 60_000);
    }
  } finally {
    for (const w of workers) {
      w.app.kill('SIGCONT');
      w.app.kill('SIGTERM');
    }
    await Promise.all(workers.map((w) => w.app.exited));
    for (const w of workers) w.member.proc.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.member.proc.exited));
  }
  const attempts = workers.flatMap((w) =>
    w.app
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as WriteAttempt),
  );
  const verdict = judgeFencedWrites(await resource.rows(), attempts);
  await resource.close();
  return { store: o.store, seed: o.seed, members: count, shards, freezes, freezesCapped, verdict };
}

export function formatShardChaosReport(r: ShardChaosReport): string {
  const v = r.verdict;
  return [
    `shard chaos on ${r.store} (seed ${r.seed}): ${r.members} members, ${r.shards} shards, ${r.freezes} freezes (${r.freezesCapped} capped)`,
    `  writes: ${v.accepted} accepted, ${v.stale} stale refused, ${v.errors} other errors; ${v.keysHandedOver} shard keys handed over`,
    `  violations: ${v.violations.length === 0 ? 'none' : v.violations.slice(0, 10).join('; ')}`,
  ].join('\n');
}
