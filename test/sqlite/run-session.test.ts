/**
 * `leasehold run` waits for every process of CMD's session, not only its process group: a worker
 * that left CMD's group by setpgid (GNU `timeout`, a helper calling os.setpgid(0, 0)) is the
 * term's work as much as CMD is. Two real `leasehold run` candidates on one SQLite lease; each
 * CMD starts a worker (session_worker.py) that ignores SIGTERM and holds an exclusive flock for
 * as long as it lives. A's term ends (SIGTERM to leasehold, a health step-down, `kill -9` of
 * leasehold); B's worker, started once B leads, must find the lock free: 0 ms of two workers.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startHealthApp } from '../support/health-apps.js';
import { COMMANDS, SETSID, cgroupAvailable, holder, workerPid, stopRunners } from '../support/run-session.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '300ms', '--grace-period', '300ms'];
const CGROUP = cgroupAvailable();

type Ending = 'SIGTERM' | 'health step-down' | 'kill -9';

describe("leasehold run: a worker that left CMD's process group is still waited for (its session)", () => {
  const procs: Proc[] = [];
  const workers: number[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');
  after(async () => {
    // A leasehold killed by kill -9 leaves its CMD's cgroup behind, emptied by its watcher.
    await stopRunners(procs);
    // A worker that escaped (the bug) is killed by PID.
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
    const health: string[] = [];
    let app: Awaited<ReturnType<typeof startHealthApp>> | undefined;
    if (ending === 'health step-down') {
      // 200 until SIGUSR2, then 503 for a minute.
      app = await startHealthApp('flap:60000');
      procs.push(app.proc);
      health.push('--health-http', app.url, '--health-period', '200ms', '--health-timeout', '150ms');
    }
    const a = startCli(['run', '--db', db, '--lease', lease, '--identity', 'a', ...T, ...health, '--', ...cmd(work, 'a')]);
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

    if (ending === 'SIGTERM') a.kill('SIGTERM');
    else if (ending === 'kill -9') a.kill('SIGKILL');
    else app!.proc.kill('SIGUSR2');

    const bWorker = await waitFor("B's worker to start", () => workerPid(work, 'b'), 30_000);
    workers.push(bWorker);
    const aWorkerLivedOn = isAlive(aWorker);
    // The bug's worker never dies by itself: kill it, so B's measures how long the two overlapped.
    if (aWorkerLivedOn) process.kill(aWorker, 'SIGKILL');
    await waitFor("B's worker to hold the lock", () => existsSync(join(work, 'held-b')), 10_000);
    const overlaps = existsSync(join(work, 'overlaps')) ? readFileSync(join(work, 'overlaps'), 'utf8') : '';
    console.log(`${command}, ${ending}: ${overlaps ? `two workers at once: ${overlaps.trim()} ms` : '0 ms of two workers'}`);
    assert.equal(aWorkerLivedOn, false, `A's worker ${aWorker} still ran when B's started:\n${a.stderr()}`);
    assert.equal(overlaps, '', 'two workers ran at once');
    if (ending !== 'kill -9') a.kill('SIGTERM'); // after a step-down, A is a standby
    await a.exited;
    b.kill('SIGTERM');
    await b.exited;
    app?.proc.kill('SIGTERM');
  }

  for (const command of Object.keys(COMMANDS)) {
    for (const ending of ['SIGTERM', 'health step-down', 'kill -9'] as const) {
      const skip = command === SETSID && !CGROUP && 'needs a writable cgroup v2 (root, or a delegated subtree)';
      it(`${command}: ${ending} of A's term`, { timeout: 90_000, skip }, () => scenario(command, ending));
    }
  }
});
