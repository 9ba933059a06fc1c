/**
 * Shard groups on real `leasehold sidecar --shards` processes sharing one PostgreSQL table (a
 * server started for the test): the scenario (test/support/shard-scenario.ts).
 */
import { describe, it, before, after } from 'node:test';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import assert from 'node:assert/strict';
import { membersComeAndGo, settled, startMember } from '../support/shard-scenario.js';

describe('shard groups on PostgreSQL, real processes', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  let pg: PostgresServer;
  before(async () => {
    pg = await startPostgres();
  });
  after(async () => {
    await pg?.stop();
  });

  it("a member's stderr is JSON lines only: no driver warning among them (one statement at a time on its connection)", { timeout: 90_000 }, async () => {
    const backend = ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'quiet', '--log-format', 'json'];
    const members = ['q1', 'q2'].map((id) => startMember(dir.path, id, backend, 8));
    procs.push(...members.map((m) => m.proc));
    await settled(members, 8, 'two members owning 8 shards');
    for (const m of members) m.proc.kill('SIGTERM');
    for (const m of members) assert.equal((await m.proc.exited).code, 0, m.proc.stderr());
    for (const m of members) {
      const lines = m.proc.stderr().split('\n').filter(Boolean);
      assert.ok(lines.length > 0, `${m.id} logged`);
      for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `${m.id}: not a JSON line: ${line}`);
    }
  });

  it(
    '64 shards, members 1 -> 4 -> 3 (graceful) -> 4 -> 3 (killed): 64, 16, 21 or 22; never a shard owned twice, tokens only grow',
    { timeout: 180_000 },
    async () => {
      await membersComeAndGo(dir.path, ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'workers'], procs, (l) =>
        console.log(`postgres: ${l}`),
      );
    },
  );
});
