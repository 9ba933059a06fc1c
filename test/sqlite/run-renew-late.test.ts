/**
 * `leasehold run`'s kill when the renew deadline is heard late. better-sqlite3's calls are
 * synchronous: a renewal waiting on a file another process holds locked (its write lock, here
 * `BEGIN IMMEDIATE` held open) holds leasehold's event loop, and its timers, for up to the
 * store's busy timeout, so the step-down comes after the renew deadline. The SIGKILL is due at
 * the last renewal's renew deadline plus the grace period, not a grace period after the late
 * step-down: once heard that late, CMD is killed at once. One `leasehold run` with the default
 * grace period; its CMD a worker that ignores SIGTERM and holds an exclusive flock for its life;
 * an observer blocked on that flock notes when the worker is gone. Printed each round: how long
 * after the step-down, and how long before (or after) the lease could expire, the last renewal's
 * renewTime plus the lease duration: the part of the busy wait the kill cannot make up for
 * (docs/guarantees.md, "Clocks and timers").
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { start, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { removeStaleCgroups } from '../../src/run/command-cgroup.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { WORKER, holdWriteLock } from '../support/run-session.js';
import { clockMarginMs } from '../../src/config/election-options.js';

const LEASE_MS = 2_000;
const T = ['--lease-duration', `${LEASE_MS}ms`, '--renew-deadline', '1500ms', '--retry-period', '300ms'];
const ROUNDS = 3;
const GRACE_MS = LEASE_MS - 1500 - clockMarginMs(LEASE_MS);
/** How soon after the late step-down the worker must be gone: the kill's own latency on a busy machine. */
const AT_ONCE_MS = 200;

/** Blocks on DIR/worker.lock once the worker holds it, then prints the wall time it got it (ms). */
const OBSERVER = [
  'import fcntl, os, sys, time',
  'work = sys.argv[1]',
  "while not os.path.exists(os.path.join(work, 'held-a')): time.sleep(0.01)",
  "fd = os.open(os.path.join(work, 'worker.lock'), os.O_RDWR)",
  "print('waiting', flush=True)",
  'fcntl.flock(fd, fcntl.LOCK_EX)',
  "print('free', time.time() * 1000, flush=True)",
].join('\n');

describe('leasehold run: the renew deadline heard late (a locked SQLite file), CMD killed at once', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');
  after(async () => {
    for (const p of procs) {
      p.kill('SIGKILL');
      await p.exited;
    }
    await waitFor('the cgroups of runners gone to be removed', () => removeStaleCgroups() === 0, 10_000, 20);
  });

  async function round(i: number): Promise<{ marginMs: number; afterStepDownMs: number; lateMs: number }> {
    const lease = `margin-${i}`;
    const work = join(dir.path, lease);
    mkdirSync(work);
    const a = startCli(['run', '--db', db, '--lease', lease, '--identity', 'a', ...T, '--', 'python3', WORKER, work, 'a']);
    procs.push(a);
    const observer = start('python3', ['-c', OBSERVER, work]);
    procs.push(observer);
    await waitFor('the observer to wait on the worker', () => observer.stdout().includes('waiting'), 30_000);
    // A moment into the renewal cycle that differs each round.
    await new Promise((resolve) => setTimeout(resolve, 500 + i * 70));
    // Opened before the lock (its set-up writes); its reads pass the write lock (WAL).
    const store = new SqliteLeaseStore(db);
    const lock = holdWriteLock(db);
    procs.push(lock);
    await waitFor('the neighbour to hold the write lock', () => lock.stdout().includes('locked'), 10_000);
    const freed = await waitFor('the worker to be gone', () => /free ([\d.]+)/.exec(observer.stdout())?.[1], 20_000, 5);
    // The record as A last renewed it.
    const record = (await store.get(lease))!.record;
    await store.close();
    lock.kill('SIGKILL');
    await lock.exited;
    assert.equal(record.holderIdentity, 'a');
    const freedAt = Number(freed);
    const stopped = a
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"msg":"stopped leading"'))
      .map((l) => JSON.parse(l) as { time: string; reason: string })[0];
    assert.match(stopped?.reason ?? '', /no successful renewal within renewDeadline/, a.stderr());
    const renewedAt = record.renewTime!.getTime();
    const marginMs = Math.round(renewedAt + LEASE_MS - freedAt);
    const afterStepDownMs = Math.round(freedAt - Date.parse(stopped!.time));
    // How much later than the renew deadline the step-down was heard.
    const lateMs = Date.parse(stopped!.time) - (renewedAt + 1500);
    console.log(
      `round ${i}: step-down ${lateMs} ms after the renew deadline; the worker gone ${afterStepDownMs} ms after it, ${marginMs} ms before the lease could expire`,
    );
    a.kill('SIGTERM');
    await a.exited;
    return { marginMs, afterStepDownMs, lateMs };
  }

  it(`${ROUNDS} rounds: a step-down heard past the grace period kills CMD at once`, { timeout: 180_000 }, async () => {
    const rounds = [];
    for (let i = 0; i < ROUNDS; i++) rounds.push(await round(i));
    const late = rounds.filter((r) => r.lateMs > GRACE_MS);
    assert.ok(late.length > 0, `no step-down came later than the grace period: ${JSON.stringify(rounds)}`);
    for (const r of late)
      assert.ok(r.afterStepDownMs <= AT_ONCE_MS, `the worker outlived a late step-down by ${r.afterStepDownMs} ms: ${JSON.stringify(rounds)}`);
  });
});
