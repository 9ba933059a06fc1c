/**
 * The short version of `npm run chaos -- --backend shards-sqlite`: 3 members over 32 shards on
 * one SQLite file, each app writing every shard it owns through withSqliteFence, members frozen
 * (SIGSTOP) until the others wrote their shards. 0 stale writes accepted, and some refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { formatShardChaosReport, runShardChaos } from '../chaos/shard-chaos.js';

const SEED = Number(process.env.LEASEHOLD_CHAOS_SEED ?? Date.now() % 1_000_000);

describe('shard chaos with fenced writes on SQLite (short)', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-chaos-');

  it(`3 members, 32 shards, freezes: no stale write accepted, stale writes refused (seed ${SEED})`, { timeout: 240_000 }, async () => {
    const r = await runShardChaos({
      store: 'sqlite',
      backendArgs: ['--db', join(dir.path, 'leases.db'), '--lease', 'workers'],
      target: join(dir.path, 'resource.db'),
      dir: dir.path,
      seed: SEED,
      seconds: 20,
      procs,
      log: (l) => console.log(l),
    });
    console.log(formatShardChaosReport(r));
    assert.deepEqual(r.verdict.violations, [], `replay with LEASEHOLD_CHAOS_SEED=${SEED}`);
    assert.ok(r.freezes > 0, 'members were frozen');
    assert.ok(r.verdict.stale > 0, 'the freezes produced stale writes, and the fence refused them');
    assert.ok(r.verdict.keysHandedOver > 0, 'shards changed hands and the new owners wrote');
  });
});
