/**
 * The bound of `leasehold run`'s end-of-term gate on the paths run-stuck-group.test.ts leaves
 * out: CMD held in the kernel (the cgroup v1 freezer: a SIGKILL stays pending until the thaw)
 * when SIGINT or SIGHUP reaches leasehold, at the renew deadline (another process holds the
 * file's write lock), when another writer takes the lease or deletes its record; and a worker of
 * CMD's session held so when CMD fails and `--give-up-after` gives the lease up. Each time
 * leasehold exits within the grace period + 2 s of the term's end and sends no release: the
 * lease is left to expire. Needs root and the v1 freezer.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pidWritten, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { freezer, freezerAvailable, type Freezer } from '../support/freezer.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { deleteRecord, holdWriteLock, takeLease, stopRunners } from '../support/run-session.js';

const GRACE_MS = 500;
const T = ['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '300ms', '--grace-period', `${GRACE_MS}ms`];
/** Grace + 2 s, and 2 s for a busy machine: a leasehold still running past it waits without bound. */
const BOUND_MS = GRACE_MS + 2_000 + 2_000;

/** CMD writes its PID to `cmd` and loops; the freezer holds it. */
const LOOP = ['sh', '-c', 'echo $$ > cmd; while :; do sleep 0.05; done'];
/** give-up: CMD starts a worker (frozen by the test), then fails once told to. */
const FAILS = ['sh', '-c', 'sleep 300 & echo $! > cmd; while [ ! -e fail-now ]; do sleep 0.05; done; exit 3'];

const ENDINGS = ['SIGINT', 'SIGHUP', 'renew deadline', 'lease taken', 'record deleted', 'give-up'] as const;
type Ending = (typeof ENDINGS)[number];

function lines(p: Proc): Array<{ time: string; msg: string }> {
  return p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { time: string; msg: string });
}

describe(
  'run: CMD, or a worker of its session, the kernel cannot kill, on every way a term ends',
  { skip: !freezerAvailable() && 'needs root and the cgroup v1 freezer' },
  () => {
    const procs: Proc[] = [];
    const freezers: Freezer[] = [];
    const dir = scratchDir(() => procs);
    const db = join(dir.path, 'leases.db');
    after(async () => {
      for (const f of freezers) await f.remove();
      await stopRunners(procs);
    });

    async function holder(lease: string): Promise<string | undefined> {
      const store = new SqliteLeaseStore(db);
      try {
        return (await store.get(lease))?.record.holderIdentity;
      } finally {
        await store.close();
      }
    }

    async function scenario(ending: Ending): Promise<void> {
      const lease = `stuck-${ending.replace(/\W+/g, '-').toLowerCase()}`;
      const work = join(dir.path, lease);
      mkdirSync(work);
      const giveUp = ending === 'give-up';
      const cmd = giveUp ? ['--give-up-after', '1', '--', ...FAILS] : ['--', ...LOOP];
      const p = startCli(['run', '--db', db, '--lease', lease, '--identity', 'a', ...T, ...cmd], {}, work);
      procs.push(p);
      const frozenPid = await waitFor('CMD', () => pidWritten(join(work, 'cmd')), 20_000);
      const frozen = freezer(lease);
      freezers.push(frozen);
      await frozen.freeze(frozenPid);

      // When the term began to end: the signal, or the line that says it stopped leading.
      let endedAt: number | undefined;
      let lock: Proc | undefined;
      if (ending === 'SIGINT' || ending === 'SIGHUP') {
        endedAt = Date.now();
        p.kill(ending);
      } else if (ending === 'give-up') mkdirSync(join(work, 'fail-now'));
      else if (ending === 'lease taken') await takeLease(db, lease);
      else if (ending === 'record deleted') await deleteRecord(db, lease);
      else {
        lock = holdWriteLock(db);
        procs.push(lock);
        await waitFor('the neighbour to hold the write lock', () => lock!.stdout().includes('locked'), 10_000);
      }
      if (endedAt === undefined) {
        const stopped = await waitFor('A to stop leading', () => lines(p).find((l) => l.msg === 'stopped leading'), 20_000, 5);
        endedAt = Date.parse(stopped.time);
      }
      let timer: NodeJS.Timeout | undefined;
      const exit = await Promise.race([p.exited, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), BOUND_MS)))]);
      clearTimeout(timer);
      const tookMs = Date.now() - endedAt;
      if (lock) {
        lock.kill('SIGKILL');
        await lock.exited;
      }
      frozen.thaw();
      assert.ok(exit, `leasehold still runs ${BOUND_MS} ms after its term began to end (${ending}, pid ${frozenPid} frozen):\n${p.stderr()}`);
      console.log(`${ending}, ${giveUp ? "a worker of CMD's session" : 'CMD'} frozen: leasehold exited ${exit.code} ${tookMs} ms after the term began to end`);
      assert.ok(tookMs <= BOUND_MS, `exited ${tookMs} ms after the term began to end`);
      // CMD's status when it exited (give-up: 3), else 137: as if the SIGKILL sent had ended it.
      assert.equal(exit.code, giveUp ? 3 : 137, p.stderr());
      const msgs = lines(p).map((l) => l.msg);
      assert.equal(msgs.includes('released lease'), false, p.stderr());
      // Once the gate gave up on the work, the candidate neither leads again nor tries to.
      const afterGate = msgs.slice(msgs.indexOf('stopped leading'));
      assert.equal(afterGate.includes('became leader'), false, `no new term:\n${p.stderr()}`);
      assert.equal(afterGate.includes('acquire attempt failed'), false, `no attempt to take the lease again:\n${p.stderr()}`);
      const expected = ending === 'lease taken' ? 'intruder' : ending === 'record deleted' ? undefined : 'a';
      assert.equal(await holder(lease), expected, 'not released: it expires');
    }

    for (const ending of ENDINGS) it(`${ending}: leasehold exits within grace + 2 s and does not release`, { timeout: 60_000 }, () => scenario(ending));
  },
);
