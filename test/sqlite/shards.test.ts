/**
 * Shard groups on real `leasehold sidecar --shards` processes sharing one SQLite file: the
 * issue's scenario (test/support/shard-scenario.ts), and a member whose app turns unhealthy.
 */
import { describe, it } from 'node:test';
import { join } from 'node:path';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { membersComeAndGo, readShards, settled, shardSampler, startMember, ownedNow, type Member } from '../support/shard-scenario.js';
import { startHealthApp } from '../support/health-apps.js';
import assert from 'node:assert/strict';

describe('shard groups on SQLite, real processes', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it(
    '64 shards, members 1 -> 4 -> 3 (graceful) -> 4 -> 3 (killed): 64, 16, 21 or 22; never a shard owned twice, tokens only grow',
    { timeout: 180_000 },
    async () => {
      await membersComeAndGo(dir.path, ['--db', join(dir.path, 'leases.db'), '--lease', 'workers'], procs, (l) => console.log(`sqlite: ${l}`));
    },
  );

  it(
    "a member whose app turns unhealthy: its shards are owned by the others within the probe's failure time plus a second, released, never twice",
    { timeout: 120_000 },
    async () => {
      const PERIOD_MS = 300;
      const FAILURES = 2;
      const health = [
        '--health-period',
        `${PERIOD_MS}ms`,
        '--health-timeout',
        '250ms',
        '--health-failure-threshold',
        String(FAILURES),
        '--health-hold-down',
        '0s',
      ];
      const members: Member[] = [];
      const apps = [];
      for (const id of ['h1', 'h2', 'h3']) {
        const app = await startHealthApp('ok');
        procs.push(app.proc);
        apps.push(app);
        const m = startMember(dir.path, id, ['--db', join(dir.path, 'health.db'), '--lease', 'healthy-workers'], 30, [...health, '--health-http', app.url]);
        procs.push(m.proc);
        members.push(m);
      }
      const sampler = shardSampler(() => members);
      try {
        assert.deepEqual(await settled(members, 30, 'three members, 10 each'), [10, 10, 10]);
        const sick = members[0]!;
        const had = ownedNow(readShards(sick.statusDir)).map((o) => o.shard);
        const killedAt = Date.now();
        apps[0]!.proc.kill('SIGKILL');
        const rest = members.slice(1);
        await settled(rest, 30, 'the two healthy members own every shard, 15 each', 20_000);
        const tookMs = Date.now() - killedAt;
        // Handed over by releases, not by the session's expiry: a member that kept its shards would
        // let them go only a lease duration (3 s) after its last heartbeat. The time is printed
        // against the goal (failure time + 1 s), not asserted to the millisecond.
        assert.ok(tookMs < 3_000, `owned by the others ${tookMs} ms after the app died: released, not expired`);
        assert.deepEqual(ownedNow(readShards(sick.statusDir)), [], 'the unhealthy member owns nothing');
        for (const s of had)
          assert.ok(
            rest.some((m) => ownedNow(readShards(m.statusDir)).some((o) => o.shard === s)),
            `shard ${s} has a new owner`,
          );
        console.log(`sqlite: an unhealthy member's ${had.length} shards owned by the others ${tookMs} ms after its app died`);
      } finally {
        sampler.stop();
      }
      assert.deepEqual(sampler.violations.slice(0, 5), [], 'never one shard owned twice, never a token going back');
    },
  );
});
