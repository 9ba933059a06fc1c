/**
 * `leasehold run`'s end-of-term gate on the paths run-session.test.ts leaves out: SIGINT and
 * SIGHUP to leasehold, `--give-up-after`, the renew deadline (renewals refused: another process
 * holds the SQLite file's write lock), the lease taken by another writer, and the lease's record
 * deleted. Each with the workers that leave CMD's process group (session_worker.py ignores
 * SIGTERM, SIGINT and SIGHUP and holds an exclusive flock for its life): the next term's worker
 * must find the lock free, 0 ms of two workers.
 *
 * The matrix: every ending with `timeout` and `os.setpgid(0, 0)` (the workers that escaped the
 * gate before: issue 41), and the other CMDs each on a few endings, rotated, so each ending and
 * each CMD is seen and the file stays near two minutes (the full product is 30 scenarios).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { COMMANDS, SETSID, cgroupAvailable, deleteRecord, holdWriteLock, holder, takeLease, workerPid, stopRunners } from '../support/run-session.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '300ms', '--grace-period', '300ms'];
const CGROUP = cgroupAvailable();

export const ENDINGS = ['SIGINT', 'SIGHUP', 'give-up', 'renew deadline', 'lease taken', 'record deleted'] as const;
type Ending = (typeof ENDINGS)[number];

const ALWAYS = ["sh -c 'timeout 60 worker'", 'os.setpgid(0, 0)'];
/** The rest, each on every other ending (offset by its place), so each ending has one or two. */
function inMatrix(command: string, ending: Ending): boolean {
  if (ALWAYS.includes(command)) return true;
  const i = Object.keys(COMMANDS).indexOf(command);
  return (ENDINGS.indexOf(ending) + i) % 2 === 0;
}

describe("leasehold run: every way a term ends waits for the workers that left CMD's process group", () => {
  const procs: Proc[] = [];
  const workers: number[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');
  after(async () => {
    await stopRunners(procs);
    // A worker that escaped (a bug) is killed by PID.
    for (const pid of workers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  });

  async function scenario(command: string, ending: Ending): Promise<void> {
    const lease = `${Object.keys(COMMANDS).indexOf(command)}-${ending.replace(/\W+/g, '-').toLowerCase()}`;
    const work = join(dir.path, lease);
    const bStatus = join(work, 'b-status');
    mkdirSync(bStatus, { recursive: true });
    const cmd = COMMANDS[command]!;
    const failNow = join(work, 'fail-now');
    // give-up: CMD runs its worker, then fails once told to; one failure is enough to give up.
    const aCmd =
      ending === 'give-up'
        ? ['sh', '-c', 'f=$1; shift; "$@" & while [ ! -e "$f" ]; do sleep 0.05; done; exit 3', 'sh', failNow, ...cmd(work, 'a')]
        : cmd(work, 'a');
    const giveUp = ending === 'give-up' ? ['--give-up-after', '1'] : [];
    const a = startCli(['run', '--db', db, '--lease', lease, '--identity', 'a', ...T, ...giveUp, '--', ...aCmd]);
    procs.push(a);
    if (command === SETSID) await waitFor('A to say it tracks a cgroup', () => a.stderr().includes('"tracking":"cgroup"'), 30_000);
    await waitFor("A's worker to hold the lock", () => existsSync(join(work, 'held-a')), 30_000).catch((err: Error) => {
      throw new Error(`${err.message}:\n${a.stderr()}`);
    });
    const aWorker = workerPid(work, 'a')!;
    workers.push(aWorker);
    const b = startCli(['run', '--db', db, '--lease', lease, '--identity', 'b', ...T, '--status-dir', bStatus, '--', ...cmd(work, 'b')]);
    procs.push(b);
    await waitFor('B to follow A', () => holder(bStatus) === 'a', 20_000);
    // The next term may be A's own (a deleted record: nobody else may create it for a lease
    // duration, but the sitting leader recreates it at once; a lease taken or unrenewable: A may
    // win the next race), and its worker must wait for the old one as well as B's would.
    rmSync(join(work, 'worker-a'));
    rmSync(join(work, 'held-a'));

    if (ending === 'SIGINT' || ending === 'SIGHUP') a.kill(ending);
    else if (ending === 'give-up') mkdirSync(failNow);
    else if (ending === 'lease taken') await takeLease(db, lease);
    else if (ending === 'record deleted') await deleteRecord(db, lease);
    else {
      const lock = holdWriteLock(db);
      procs.push(lock);
      await waitFor('the neighbour to hold the write lock', () => lock.stdout().includes('locked'), 10_000);
      // Renewals are refused until the renew deadline ends A's term; then the lock goes, before
      // the lease could expire, so B takes over at the earliest moment it may.
      await waitFor('A to stop leading', () => a.stderr().includes('"msg":"stopped leading"'), 20_000, 5);
      lock.kill('SIGKILL');
      await lock.exited;
    }

    const [next, nextWorker] = await waitFor(
      "the next term's worker to start",
      () => (['a', 'b'] as const).map((n) => [n, workerPid(work, n)] as const).find(([, pid]) => pid !== undefined),
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}:\nA: ${a.stderr()}\nB: ${b.stderr()}`);
    });
    workers.push(nextWorker!);
    const aWorkerLivedOn = isAlive(aWorker);
    // A worker that lived on never dies by itself: kill it, so the next measures how long the two overlapped.
    if (aWorkerLivedOn) process.kill(aWorker, 'SIGKILL');
    await waitFor(`${next}'s worker to hold the lock`, () => existsSync(join(work, `held-${next}`)), 10_000);
    const overlaps = existsSync(join(work, 'overlaps')) ? readFileSync(join(work, 'overlaps'), 'utf8') : '';
    console.log(`${command}, ${ending}, next term ${next}'s: ${overlaps ? `two workers at once: ${overlaps.trim()} ms` : '0 ms of two workers'}`);
    assert.equal(aWorkerLivedOn, false, `A's worker ${aWorker} still ran when ${next}'s started:\n${a.stderr()}`);
    assert.equal(overlaps, '', 'two workers ran at once');
    a.kill('SIGTERM'); // still running unless a signal ended it
    await a.exited;
    b.kill('SIGTERM');
    await b.exited;
  }

  for (const command of Object.keys(COMMANDS)) {
    for (const ending of ENDINGS) {
      if (!inMatrix(command, ending)) continue;
      const skip = command === SETSID && !CGROUP && 'needs a writable cgroup v2 (root, or a delegated subtree)';
      it(`${command}: ${ending} ends A's term`, { timeout: 90_000, skip }, () => scenario(command, ending));
    }
  }
});
