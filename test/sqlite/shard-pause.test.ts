/**
 * Issue 41, finding A, on real processes: a shard member paused (SIGSTOP) a little longer than
 * the lease duration must not wake up and heartbeat its expired session back to life. Before
 * 9871a9c it did on SQLite (better-sqlite3 answers synchronously, so the woken member's overdue
 * turn wrote its untouched slot before its overdue session deadline fired) and republished its
 * old shards with their old tokens and a fresh validUntil while another member was taking them.
 *
 * 3 `leasehold sidecar --shards N` members on one SQLite file (lease 3 s, renew deadline 2 s,
 * retry 500 ms: SHARD_TIMING). Once settled, each pause stops one member (in turn) for the lease
 * duration plus 0 to 500 ms, resumes it and waits until the group settles again. All along a
 * sampler reads every member's shards.json every 10 ms with the apps' safe reader (an entry
 * counts only while its validUntil is ahead) and collects shards listed by two members at once,
 * and (shard, token) pairs listed by two members. Both must stay empty.
 *
 * Measured (N = 1024, 6 pauses of 3.0-3.5 s in 100 ms steps, a 2-core box shared with other
 * work): with 9871a9c's src change reverted, 3 of 3 runs failed; of the two counted, one had 5 of
 * 6 pauses with double owners (208, 212, 71, 26, 37, 0 shards: 554 in all) and the other 3 of 6
 * (116, 224, 43, 0, 0, 0: 383), e.g. shard 152 listed by m1 with token 2 and by m3 with token 1;
 * 0 (shard, token) pairs reused (the taker's token is always higher); about 41 s each. With the
 * fix: 0 shards and 0 pairs listed twice in 2 of 2 runs, 34 s and 44 s.
 * LEASEHOLD_SHARD_PAUSE_N sets N.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { settled, startMember, type Member } from '../support/shard-scenario.js';
import { readOwnedShards } from '../../src/status/shards-status.js';

const N = Number(process.env.LEASEHOLD_SHARD_PAUSE_N ?? 1024);
const LEASE_MS = 3_000; // SHARD_TIMING's --lease-duration
const PAUSES_MS = [0, 100, 200, 300, 400, 500].map((extra) => LEASE_MS + extra);

/** Every 10 ms, every member's shards.json as the app reads it: shards and (shard, token) pairs listed twice at once. */
function doubleOwnerSampler(members: Member[]) {
  const shardsTwice = new Set<number>();
  const tokensTwice = new Set<string>();
  const examples: string[] = [];
  let samples = 0;
  const timer = setInterval(() => {
    samples++;
    const now = new Date();
    const listedBy = new Map<number, { id: string; token: number }[]>();
    for (const m of members) {
      for (const o of readOwnedShards(m.statusDir, now).owned) listedBy.set(o.shard, [...(listedBy.get(o.shard) ?? []), { id: m.id, token: o.fencingToken }]);
    }
    for (const [shard, owners] of listedBy) {
      if (owners.length < 2) continue;
      if (!shardsTwice.has(shard) && examples.length < 5) examples.push(`shard ${shard}: ${owners.map((o) => `${o.id} token ${o.token}`).join(', ')}`);
      shardsTwice.add(shard);
      const tokens = owners.map((o) => o.token);
      for (const t of tokens) if (tokens.indexOf(t) !== tokens.lastIndexOf(t)) tokensTwice.add(`${shard}@${t}`);
    }
  }, 10);
  return { shardsTwice, tokensTwice, examples, samples: () => samples, stop: () => clearInterval(timer) };
}

describe('a shard member paused a little longer than the lease (SQLite)', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-pause-');

  it(
    `3 members, ${N} shards, pauses of ${PAUSES_MS[0]}-${PAUSES_MS.at(-1)} ms: no shard and no token listed by two members`,
    { timeout: 300_000 },
    async () => {
      const started = Date.now();
      const backend = ['--db', join(dir.path, 'leases.db'), '--lease', 'workers'];
      const members = ['m1', 'm2', 'm3'].map((id) => startMember(dir.path, id, backend, N));
      procs.push(...members.map((m) => m.proc));
      console.log(`settled: ${(await settled(members, N, `3 members owning ${N} shards`, 60_000)).join(', ')} after ${Date.now() - started} ms`);

      const sampler = doubleOwnerSampler(members);
      try {
        for (const [i, pauseMs] of PAUSES_MS.entries()) {
          const m = members[i % members.length]!;
          const before = sampler.shardsTwice.size;
          m.proc.kill('SIGSTOP');
          try {
            await sleep(pauseMs); // the pause itself is the fault under test
          } finally {
            m.proc.kill('SIGCONT');
          }
          const t = Date.now();
          const counts = await settled(members, N, `the group to settle after ${m.id}'s pause of ${pauseMs} ms`, 60_000);
          console.log(
            `${m.id} paused ${pauseMs} ms: settled ${counts.join(', ')} after ${Date.now() - t} ms; shards listed twice during it: ${sampler.shardsTwice.size - before}`,
          );
        }
      } finally {
        sampler.stop();
      }
      console.log(
        `${PAUSES_MS.length} pauses, ${sampler.samples()} samples: ${sampler.shardsTwice.size} shards listed by two members, ${sampler.tokensTwice.size} (shard, token) pairs listed twice; ${Date.now() - started} ms in all`,
      );
      assert.ok(sampler.samples() > 100, 'the sampler ran');
      assert.deepEqual(sampler.examples, [], 'no shard listed by two members at once');
      assert.equal(sampler.shardsTwice.size, 0, 'shards listed by two members at once');
      assert.equal(sampler.tokensTwice.size, 0, '(shard, token) pairs listed by two members');
      for (const m of members) assert.equal(m.proc.child.exitCode, null, `${m.id} still runs: ${m.proc.stderr().slice(-500)}`);
    },
  );
});
