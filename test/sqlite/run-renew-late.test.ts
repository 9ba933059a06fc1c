/**
 * `leasehold run`'s kill when a renewal waits on a locked file (its write lock, here `BEGIN
 * IMMEDIATE` held open by another process). SQLite's own busy handler waits synchronously,
 * holding leasehold's event loop and its timers: the step-down came up to the busy timeout after
 * the renew deadline, and past it under load (the handler counts the sleeps it asked for, not the
 * time that passed). The store now waits on its own timers, so the step-down comes at the
 * deadline; the wait is still bounded by what lies between the renew deadline and the lease's
 * expiry less the clock margin (storeTimeouts, src/config/election-options.ts): with the fixed
 * 1 s it was, the step-down came 810-900 ms late and CMD was gone 330-350 ms after the lease
 * could have expired. One `leasehold run` with the default grace period; its CMD a worker that
 * ignores SIGTERM and holds an exclusive flock for its life; an observer blocked on that flock
 * notes when the worker is gone. Printed each round: how late the step-down was heard, and how
 * long before the lease could expire (its last renewal's renewTime plus the lease duration) the
 * worker was gone (docs/guarantees.md, "Clocks and timers"). Judged: the rounds this machine kept
 * its timers on time (test/support/kill-margin.ts), every one of them, until three such rounds ran.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { WORKER, holdWriteLock, stopRunners } from '../support/run-session.js';
import { JUDGED_LATENESS_MS, judgeKillRounds, killLogged, realtime, startObserver, startTimerProbe, type KillRound } from '../support/kill-margin.js';
import { clockMarginMs, storeTimeouts } from '../../src/config/election-options.js';

const LEASE_MS = 2_000;
const T = ['--lease-duration', `${LEASE_MS}ms`, '--renew-deadline', '1500ms', '--retry-period', '300ms'];
/** Rounds judged (the machine's timers on time: test/support/kill-margin.ts) wanted, and rounds tried at most. */
const JUDGED_WANTED = 3;
const MAX_ROUNDS = 8;
const GRACE_MS = LEASE_MS - 1500 - clockMarginMs(LEASE_MS);
const BUSY_MS = storeTimeouts({ leaseDurationMs: LEASE_MS, renewDeadlineMs: 1500, retryPeriodMs: 300 }).busyTimeoutMs;
/** What a busy machine may add to the wait before a late timer runs: scheduling, not the store. */
const SCHEDULING_MS = 200;

describe('leasehold run: the renew deadline heard late (a locked SQLite file), CMD killed at once', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');
  after(async () => {
    await stopRunners(procs);
  });

  const probe = startTimerProbe();
  procs.push(probe);

  async function round(i: number): Promise<KillRound & { afterStepDownMs: number; lateMs: number }> {
    const lease = `margin-${i}`;
    const work = join(dir.path, lease);
    mkdirSync(work);
    const a = startCli(['run', '--db', db, '--lease', lease, '--identity', 'a', ...T, '--', ...realtime(['python3', WORKER, work, 'a'])]);
    procs.push(a);
    const observer = startObserver(work);
    procs.push(observer);
    await waitFor('the observer to wait on the worker', () => observer.waiting(), 30_000);
    // A moment into the renewal cycle that differs each round.
    await new Promise((resolve) => setTimeout(resolve, 500 + i * 70));
    // Opened before the lock (its set-up writes); its reads pass the write lock (WAL).
    const store = new SqliteLeaseStore(db);
    const lock = holdWriteLock(db);
    procs.push(lock);
    await waitFor('the neighbour to hold the write lock', () => lock.stdout().includes('locked'), 10_000);
    const freedAt = await waitFor('the worker to be gone', () => observer.freedAt(), 20_000, 5);
    // The record as A last renewed it.
    const record = (await store.get(lease))!.record;
    await store.close();
    lock.kill('SIGKILL');
    await lock.exited;
    assert.equal(record.holderIdentity, 'a');
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
    // The runner's own account of its SIGKILL: due the whole clock margin before the expiry,
    // whatever the machine did. How late it went is printed, not an excuse: a runner that hears
    // its step-down late (a store holding its event loop) is what this test is for.
    const killed = await waitFor('the kill to be logged', () => killLogged(a.stderr()), 10_000);
    const dueMarginMs = Math.round(renewedAt + LEASE_MS - Date.parse(killed.killDueAt));
    assert.ok(dueMarginMs >= clockMarginMs(LEASE_MS) - 1, `the SIGKILL was due ${dueMarginMs} ms before the lease could expire, less than the clock margin`);
    const probeLateMs = await probe.latenessIn(renewedAt + 1500, freedAt);
    const latenessMs = probeLateMs;
    console.log(
      `round ${i}: step-down ${lateMs} ms after the renew deadline; the worker gone ${afterStepDownMs} ms after it, ${marginMs} ms before the lease could expire (the SIGKILL due ${dueMarginMs} ms before, sent ${killed.killLateMs} ms late); a timer beside it at most ${probeLateMs} ms late${latenessMs > JUDGED_LATENESS_MS ? ' (not judged)' : ''}`,
    );
    a.kill('SIGTERM');
    await a.exited;
    return { marginMs, afterStepDownMs, lateMs, latenessMs };
  }

  it(
    `${JUDGED_WANTED} rounds on time: the step-down waits at most the bounded busy timeout, and CMD is gone before the lease could expire`,
    { timeout: 240_000 },
    async () => {
      assert.ok(BUSY_MS < GRACE_MS + 1, `the busy timeout ${BUSY_MS} ms fits in the grace period ${GRACE_MS} ms`);
      await waitFor('the timer probe to tick', () => probe.ticking(), 30_000);
      const rounds = [];
      for (let i = 0; i < MAX_ROUNDS && judgeKillRounds(rounds).judged.length < JUDGED_WANTED; i++) rounds.push(await round(i));
      const { judged, worstMs } = judgeKillRounds(rounds);
      // A late timer on a busy machine delays the deadline's timer as it does the kill's.
      for (const r of judged)
        assert.ok(
          r.lateMs <= BUSY_MS + SCHEDULING_MS,
          `a step-down came ${r.lateMs} ms after the renew deadline (busy timeout ${BUSY_MS} ms): ${JSON.stringify(judged)}`,
        );
      assert.ok(worstMs !== null, `no round had this machine's timers within ${JUDGED_LATENESS_MS} ms, none could be judged: ${JSON.stringify(rounds)}`);
      assert.ok(worstMs > 0, `the worker outlived the lease in a judged round: ${JSON.stringify(judged)}`);
    },
  );
});
