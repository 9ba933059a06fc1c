/**
 * A leader's `/leader` streams say "not leader" before it releases the lease: with a thousand
 * streams open on the old leader, every one of them has its "not leader" event before the new
 * leader's stream says it leads (real sidecar processes on one SQLite file; arrival compared
 * across the streams of this one reading process). Over a few handoffs, since the race this
 * guards against is lost only some of the time; the sidecar's own log shows the order on each.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus } from '../support/sidecars.js';
import { openStream, spreadAddress, type SseClient } from '../support/sse-client.js';

const T = ['--lease-duration', '6s', '--renew-deadline', '4s', '--retry-period', '1s'];
const STREAMS = 1000;
const HANDOFFS = 3;
/** Opened this many at a time: fast, without a burst the listen backlog would drop. */
const OPENING = 100;

const isLeader = (json: string) => (JSON.parse(json) as { isLeader: boolean }).isLeader;

interface Sidecar {
  id: string;
  statusDir: string;
  proc: Proc;
  port: number;
}

describe('the old leader streams "not leader" before it releases', () => {
  const procs: Proc[] = [];
  const clients: SseClient[] = [];
  const dir = scratchDir(() => {
    for (const c of clients) c.close();
    return procs;
  });

  it(`${STREAMS} streams: each says "not leader" before the new leader's stream says it leads`, { timeout: 240_000 }, async () => {
    const db = join(dir.path, 'leases.db');
    const sidecar = async (id: string): Promise<Sidecar> => {
      const statusDir = join(dir.path, `status-${id}`);
      const proc = startCli(['sidecar', '--db', db, '--lease', 'streams', '--identity', id, '--status-dir', statusDir, '--listen', '127.0.0.1:0', ...T]);
      procs.push(proc);
      const port = Number(await waitFor(`${id}'s address`, () => /"listen":"127\.0\.0\.1:(\d+)"/.exec(proc.stderr())?.[1], 20_000));
      return { id, statusDir, proc, port };
    };
    let leader = await sidecar('a0');
    await waitFor('a first leader', () => leadersByStatus([leader]).length === 1, 20_000);
    for (let round = 1; round <= HANDOFFS; round++) {
      const standby = await sidecar(`${round % 2 ? 'b' : 'a'}${round}`);
      await waitFor(`${standby.id} to see the leader`, () => standby.proc.stderr().includes('"msg":"new leader observed"'), 20_000);
      const old: SseClient[] = [];
      for (let i = 0; i < STREAMS; i += OPENING) {
        old.push(
          ...(await Promise.all(
            Array.from({ length: Math.min(OPENING, STREAMS - i) }, (_, j) => openStream('127.0.0.1', leader.port, { localAddress: spreadAddress(i + j) })),
          )),
        );
      }
      clients.push(...old);
      const next = await openStream('127.0.0.1', standby.port);
      clients.push(next);
      await waitFor('every stream to have its first event', () => next.events.length > 0 && old.every((c) => c.events.length > 0), 30_000);
      assert.ok(
        old.every((c) => isLeader(c.events.at(-1)!)),
        'the old leader streams say it leads',
      );

      leader.proc.kill('SIGTERM');
      await waitFor('the new leader stream to say it leads', () => next.events.some(isLeader), 15_000);
      await waitFor('the old leader streams to end', () => old.every((c) => c.ended()), 15_000);
      const leadsAt = next.arrivals[next.events.findIndex(isLeader)]!;
      const late = old.filter((c) => {
        const i = c.events.findIndex((e) => !isLeader(e));
        return i < 0 || c.arrivals[i]! > leadsAt;
      });
      assert.equal(
        late.length,
        0,
        `handoff ${round}: ${late.length} of ${STREAMS} old leader streams said "not leader" only after the new leader's stream said it leads`,
      );
      // The sidecar's side: every stream took "not leader", none closed, before the release.
      const log = leader.proc.stderr();
      const told = /"msg":"streams told \\"not leader\\""[^\n]*"streams":(\d+),"closed":(\d+)/.exec(log);
      assert.ok(told, `handoff ${round}: no "streams told" line:\n${log.slice(-2000)}`);
      // The last handoff's new leader stream is still open on it: one more.
      assert.deepEqual([Number(told[1]), Number(told[2])], [round === 1 ? STREAMS : STREAMS + 1, 0]);
      assert.ok(told.index < log.indexOf('"msg":"released lease"'), 'the streams were told before the release');
      for (const c of old) c.close();
      await leader.proc.exited;
      leader = standby;
    }
  });
});
