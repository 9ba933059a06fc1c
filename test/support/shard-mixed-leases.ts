/**
 * Issue 41, finding C, on real processes: members with different lease durations. A member on an
 * 8 s lease whose app never confirms a drain leaves (SIGTERM): past its drain timeout it keeps
 * its shards until they could have expired by its own lease (logged with `holdMs`) and releases
 * its member slot. Before 1a3bf32 the others (4 s) counted its session's expiry from their own
 * lease and listed its shards about 3 s before that hold ended. Shared by the SQLite and
 * PostgreSQL tiers.
 *
 * Measured (2-core box shared with other work): with 1a3bf32's change disabled, 21 of 21 shards
 * listed by the others 2,756 ms (SQLite) and 2,635 ms (PostgreSQL) before the hold ended; with
 * it, 0 of 22, the first 1,555 ms (SQLite) and 1,380 ms (PostgreSQL) after.
 */
import assert from 'node:assert/strict';
import { waitFor, type Proc } from './cli.js';
import { settled, type Member } from './shard-scenario.js';
import { ISSUE_TIMING, ownerSampler, startTimedMember, type ShardTiming } from './shard-pause.js';
import { readOwnedShards } from '../../src/status/shards-status.js';

const LONG: ShardTiming = { leaseMs: 8_000, renewDeadlineMs: 6_000, retryMs: 500 };
/** At most renew-deadline/2 − retry-period (2.5 s here): the app never answers, so it runs out. */
const DRAIN_TIMEOUT = '1s';

export interface MixedLeaseReport {
  /** The leaver's shards when it was stopped. */
  leaverShards: number;
  /** When its hold ends (its log line's time + holdMs), ms since the epoch. */
  holdEndsAt: number;
  /** The first time another member listed one of them, ms since the epoch. */
  firstTakenAt: number;
  /** Of its shards, how many another member listed before the hold ended. */
  takenEarly: number;
  shardsTwice: number;
  tokensReused: number;
  examples: string[];
}

export async function leaverOnLongerLease(dir: string, backendArgs: string[], procs: Proc[], say: (l: string) => void = () => {}): Promise<MixedLeaseReport> {
  const N = 64;
  const short = ['m1', 'm2'].map((id) => startTimedMember(dir, id, backendArgs, N, ISSUE_TIMING));
  const leaver = startTimedMember(dir, 'long', backendArgs, N, LONG, ['--drain-timeout', DRAIN_TIMEOUT, '--listen', '127.0.0.1:0']);
  const members: Member[] = [...short, leaver];
  procs.push(...members.map((m) => m.proc));
  const counts = await settled(members, N, `3 members owning ${N} shards`, 120_000);
  say(`settled: ${counts.join(', ')}`);

  const held = new Set(readOwnedShards(leaver.statusDir).owned.map((o) => o.shard));
  assert.ok(held.size > 0, 'the leaver owns shards');
  const firstListedBy = new Map<number, number>();
  const sampler = ownerSampler(
    () => members,
    (id, shard, _token, at) => {
      if (id !== leaver.id && held.has(shard) && !firstListedBy.has(shard)) firstListedBy.set(shard, at);
    },
  );
  let holdEndsAt: number;
  try {
    const stoppedAt = Date.now();
    // Shards it gave up while the others joined were kept the same way: only lines from now count.
    const logged = leaver.proc.stderr().length;
    leaver.proc.kill('SIGTERM');
    // The leaver's one line per kept shard: `time` + holdMs is when the hold ends.
    const kept = await waitFor(
      'the leaver keeping its shards until they could have expired',
      () => /^.*"holdMs":\d+.*$/m.exec(leaver.proc.stderr().slice(logged))?.[0],
      30_000,
      20,
    );
    const line = JSON.parse(kept) as { time: string; holdMs: number };
    holdEndsAt = Date.parse(line.time) + line.holdMs;
    say(`stopped at +0 ms; kept its ${held.size} shards, hold ends at +${holdEndsAt - stoppedAt} ms (holdMs ${line.holdMs})`);
    await waitFor('the others to own every shard', () => firstListedBy.size === held.size, 60_000, 20);
    say(
      `the others listed the first of them at +${Math.min(...firstListedBy.values()) - stoppedAt} ms, the last at +${Math.max(...firstListedBy.values()) - stoppedAt} ms`,
    );
    await settled(short, N, `2 members owning ${N} shards`, 60_000);
  } finally {
    sampler.stop();
  }
  const s = sampler.sample;
  return {
    leaverShards: held.size,
    holdEndsAt,
    firstTakenAt: Math.min(...firstListedBy.values()),
    takenEarly: [...firstListedBy.values()].filter((at) => at < holdEndsAt).length,
    shardsTwice: s.shardsTwice.size,
    tokensReused: s.tokensTwoOwners.size + s.tokensBackwards.size,
    examples: [...s.twiceExamples, ...s.backwardsExamples, ...s.twoOwnerExamples],
  };
}
