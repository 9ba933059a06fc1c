/**
 * Issue 41, finding B's equivalent on the stores without a file to replace: a running shard
 * group's shard records deleted by hand (PostgreSQL: DELETE FROM its rows; Kubernetes: its shard
 * Leases deleted through the API), which the docs forbid (docs/shards.md "Limits") but an operator
 * may do. The issue saw it on PostgreSQL with a member paused (2 of 3 runs gave two owners).
 *
 * 3 members; each round deletes every shard record of the group once the group has settled,
 * either with every member running or while one member is stopped (SIGSTOP) for `pauseMs`: that
 * member cannot write back the records it holds (src/shards/vanished-shards.ts) until it wakes.
 * A last round (`restartRound`) stops every member (SIGTERM: each releases its shards), deletes
 * the free records, and starts the members again: no process saw the tokens, only the group
 * header's highWater holds them (src/shards/token-blocks.ts); without it every shard starts
 * again from token 1.
 * The sampler of test/support/shard-pause.ts reads every shards.json every 10 ms: no shard
 * listed by two members at once, no token listed by another owner, none below one listed before.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Proc } from './cli.js';
import { settled } from './shard-scenario.js';
import { ownerSampler, startTimedMember, type ShardTiming } from './shard-pause.js';

export interface DeletionOptions {
  dir: string;
  backendArgs: string[];
  shards: number;
  timing: ShardTiming;
  /** Per round: 0 deletes with every member running; a length pauses a member that long, deleting just after the stop. */
  roundsPauseMs: number[];
  /** Deletes the group's shard records; returns how many went. */
  deleteShardRecords: () => Promise<number>;
  /** How many shard records the group has in the store now. */
  countShardRecords: () => Promise<number>;
  /** After the rounds: every member stopped, the free records deleted, the members started again. */
  restartRound?: boolean;
  /** Every process started, for the caller's teardown. */
  procs: Proc[];
  settleMs?: number;
  say?: (line: string) => void;
}

export interface DeletionReport {
  /** Rounds run, the restart round included. */
  rounds: number;
  /** Records deleted per round. */
  deleted: number[];
  samples: number;
  shardsTwice: number;
  /** "shard@token" listed by another owner than its first. */
  tokensTwoOwners: number;
  /** "shard@token" listed after a higher token for the shard. */
  tokensBackwards: number;
  /** Tokens listed for two different shards: the group's tokens are unique while its header stays. */
  tokensOnTwoShards: number;
  examples: string[];
  totalMs: number;
  /** Members that exited during the run (with the end of their stderr). */
  exited: string[];
}

/** How long after a SIGSTOP the records go: the stopped member's last turn has surely ended. */
const AFTER_STOP_MS = 100;

async function waitForAsync(what: string, done: () => Promise<boolean>, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50); // a poll interval, not a wait for a condition
  }
}

export async function deletedRecordsScenario(o: DeletionOptions): Promise<DeletionReport> {
  const say = o.say ?? (() => {});
  const settleMs = o.settleMs ?? 120_000;
  const started = Date.now();
  const start = (id: string) => startTimedMember(o.dir, id, o.backendArgs, o.shards, o.timing);
  const members = ['m1', 'm2', 'm3'].map(start);
  o.procs.push(...members.map((m) => m.proc));
  const counts = await settled(members, o.shards, `3 members owning ${o.shards} shards`, settleMs);
  say(`settled: ${counts.join(', ')} after ${Date.now() - started} ms`);

  const sampler = ownerSampler(() => members);
  const deleted: number[] = [];
  try {
    for (const [i, pauseMs] of o.roundsPauseMs.entries()) {
      const m = members[i % members.length]!;
      const before = sampler.sample.shardsTwice.size;
      const reusedBefore = sampler.sample.tokensTwoOwners.size + sampler.sample.tokensBackwards.size;
      if (pauseMs > 0) {
        m.proc.kill('SIGSTOP');
        try {
          await sleep(AFTER_STOP_MS); // the stop's timing is the fault under test
          deleted.push(await o.deleteShardRecords());
          await sleep(Math.max(0, pauseMs - AFTER_STOP_MS));
        } finally {
          m.proc.kill('SIGCONT');
        }
      } else {
        deleted.push(await o.deleteShardRecords());
      }
      const t = Date.now();
      // Every record back in the store (written back by its holder, or created again) before the
      // members' lists count: until then a shards.json may still be the one from before.
      await waitForAsync(`round ${i + 1}: ${o.shards} shard records back in the store`, async () => (await o.countShardRecords()) === o.shards, settleMs);
      const after = await settled(members, o.shards, `round ${i + 1}: the group to settle after the deletion`, settleMs);
      const how = pauseMs > 0 ? `while ${m.id} was stopped for ${pauseMs} ms` : 'with every member running';
      say(
        `round ${i + 1}: ${deleted.at(-1)} records deleted ${how}; settled ${after.join(', ')} after ${Date.now() - t} ms; shards listed twice: ${sampler.sample.shardsTwice.size - before}, tokens reused: ${sampler.sample.tokensTwoOwners.size + sampler.sample.tokensBackwards.size - reusedBefore}`,
      );
    }
    if (o.restartRound) {
      const reusedBefore = sampler.sample.tokensTwoOwners.size + sampler.sample.tokensBackwards.size;
      const exited = await Promise.all(
        members.map((m) => {
          m.proc.kill('SIGTERM');
          return m.proc.exited;
        }),
      );
      say(`restart round: every member stopped (${exited.map((e) => e.signal ?? `exit ${e.code}`).join(', ')})`);
      deleted.push(await o.deleteShardRecords());
      members.splice(0, members.length, ...['m1', 'm2', 'm3'].map(start));
      o.procs.push(...members.map((m) => m.proc));
      const t = Date.now();
      const after = await settled(members, o.shards, 'the restarted members to settle after the deletion', settleMs);
      say(
        `restart round: ${deleted.at(-1)} free records deleted with every member stopped; settled ${after.join(', ')} after ${Date.now() - t} ms; tokens reused: ${sampler.sample.tokensTwoOwners.size + sampler.sample.tokensBackwards.size - reusedBefore}`,
      );
    }
  } finally {
    sampler.stop();
    // The members' logs outlive the scratch dir only when asked: PREFIX-m1.log ... for a failed run.
    const logs = process.env.LEASEHOLD_SHARD_DELETE_LOGS;
    if (logs) for (const m of members) writeFileSync(`${logs}-${m.id}.log`, m.proc.stderr());
  }
  const s = sampler.sample;
  return {
    rounds: o.roundsPauseMs.length + (o.restartRound ? 1 : 0),
    deleted,
    samples: s.samples,
    shardsTwice: s.shardsTwice.size,
    tokensTwoOwners: s.tokensTwoOwners.size,
    tokensBackwards: s.tokensBackwards.size,
    tokensOnTwoShards: s.tokensOnTwoShards.size,
    examples: [...s.twiceExamples, ...s.backwardsExamples, ...s.twoOwnerExamples],
    totalMs: Date.now() - started,
    exited: members.filter((m) => m.proc.child.exitCode !== null).map((m) => `${m.id}: ${m.proc.stderr().slice(-500)}`),
  };
}

export function formatDeletionReport(store: string, shards: number, r: DeletionReport): string {
  return [
    `${store}: 3 members, N = ${shards}, ${r.rounds} deletions (records: ${r.deleted.join(', ')}), ${r.totalMs} ms, ${r.samples} samples`,
    `  shards listed by two members: ${r.shardsTwice}; tokens listed by another owner: ${r.tokensTwoOwners}; below one listed before: ${r.tokensBackwards}; on two shards: ${r.tokensOnTwoShards}`,
    ...r.examples.map((e) => `  ${e}`),
    ...r.exited.map((e) => `  exited: ${e}`),
  ].join('\n');
}

/**
 * What every store's deletion test asserts of its report: the sampler ran, every round deleted
 * records (`what`: rows, Leases), no shard was listed by two members at once, and no token came
 * back: every token comes from a block raised past the group header's highWater, so a record
 * deleted before the other members listed it (the CI run of 2026-12-06 saw 'shard 255 token 1:
 * listed by m1, then by m2') or deleted with nobody running never brings its token back.
 */
export function assertNothingReused(r: DeletionReport, what: string): void {
  assert.ok(r.samples > 100, 'the sampler ran');
  assert.ok(
    r.deleted.every((n) => n > 0),
    `every round deleted ${what}: ${r.deleted.join(', ')}`,
  );
  assert.equal(r.shardsTwice, 0, `shards listed by two members at once: ${r.examples.join('; ')}`);
  assert.equal(r.tokensTwoOwners, 0, `tokens listed by another owner: ${r.examples.join('; ')}`);
  assert.equal(r.tokensBackwards, 0, `tokens listed after a higher one: ${r.examples.join('; ')}`);
  assert.equal(r.tokensOnTwoShards, 0, `tokens listed for two shards (the header is never deleted here): ${r.examples.join('; ')}`);
  assert.deepEqual(r.exited, [], 'every member still runs');
}
