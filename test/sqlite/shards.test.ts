/**
 * Shard groups on real `leasehold sidecar --shards` processes sharing one SQLite file: the
 * issue's scenario (test/support/shard-scenario.ts), and a member whose app turns unhealthy.
 */
import { describe, it } from 'node:test';
import { join } from 'node:path';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { membersComeAndGo } from '../support/shard-scenario.js';

describe('shard groups on SQLite, real processes', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it('64 shards, members 1 -> 4 -> 3 (graceful) -> 4 -> 3 (killed): 64, 16, 21 or 22; never a shard owned twice, tokens only grow', { timeout: 180_000 }, async () => {
    await membersComeAndGo(dir.path, ['--db', join(dir.path, 'leases.db'), '--lease', 'workers'], procs, (l) => console.log(`sqlite: ${l}`));
  });
});
