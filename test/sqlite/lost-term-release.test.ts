/**
 * The lost-term rule on a real file (docs/design.md, "The end-of-term gate"): a leader whose
 * store stops answering (a neighbour holds the SQLite file's write lock open) steps down at the
 * renew deadline, its CMD is stopped (the term's drain), and once the store answers again its
 * term is released, keeping its token, before the lease could have expired: the next leader
 * need not wait out the rest of a lease nobody works under. Before issue 43 a lost term was
 * never released and the record stayed until it expired. And a term given up on a locked file:
 * its first release round waits out the busy timeout at most once. A shard member follows the
 * same rule: its session lost to a locked file, it waits out the busy timeout at most once in a
 * row, and tells its unanswered releases in one line a turn.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { rmSync, writeFileSync } from 'node:fs';
import { startCli, tempDir, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { holdWriteLock } from '../support/run-session.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { freePort } from '../support/control-plane.js';

const LEASE_MS = 12_000;
const T = ['--lease-duration', `${LEASE_MS}ms`, '--renew-deadline', '4s', '--retry-period', '500ms'];

interface LogLine {
  time: string;
  msg: string;
  token?: number;
}

/**
 * How many of a sidecar's store requests so far took over half a second, by its own
 * leasehold_backend_request_duration_seconds (every get and write, timed around the store): a
 * wait on another's lock is the busy timeout, 1 s here, and nothing else the store does on a
 * local file comes near half of it.
 */
async function slowStoreRequests(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let all = 0;
  let fast = 0;
  for (const line of text.split('\n')) {
    const m = /^leasehold_backend_request_duration_seconds_(count|bucket)\{([^}]*)\} (\d+)$/.exec(line);
    if (m?.[1] === 'count') all += Number(m[3]);
    else if (m && /\ble="0\.5"/.test(m[2]!)) fast += Number(m[3]);
  }
  return all - fast;
}

function logLines(p: Proc): LogLine[] {
  return p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

describe('a term lost to a locked SQLite file', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  after(async () => {
    for (const p of procs) {
      p.kill('SIGKILL');
      await p.exited;
    }
  });

  it('is released once the file is unlocked, after CMD stopped, before the lease could have expired', { timeout: 120_000 }, async () => {
    const db = join(dir.path, 'leases.db');
    // A released lease, so a leads at once (an absent one is waited out a lease duration first).
    const seed = new SqliteLeaseStore(db);
    await seed.create('lost', { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: new Date(), leaseTransitions: 0 });
    await seed.close();
    const a = startCli(['run', '--db', db, '--lease', 'lost', '--identity', 'a', ...T, '--', 'sleep', '600']);
    procs.push(a);
    await waitFor('a to lead', () => logLines(a).some((l) => l.msg === 'became leader'), 30_000);
    // Opened before the lock (its set-up writes); its reads pass the write lock (WAL).
    const store = new SqliteLeaseStore(db);
    try {
      const lock = holdWriteLock(db);
      procs.push(lock);
      await waitFor('the neighbour to hold the write lock', () => lock.stdout().includes('locked'), 10_000);
      await waitFor('CMD to be stopped after the step-down', () => logLines(a).some((l) => l.msg === 'command stopped'), 20_000);
      // The record as a last renewed it: the lease could expire for others LEASE_MS after its renewTime.
      const last = (await store.get('lost'))!.record;
      assert.equal(last.holderIdentity, 'a');
      const expiresAt = last.renewTime!.getTime() + LEASE_MS;
      await waitFor('a release tried while the file is locked', () => logLines(a).some((l) => l.msg === 'release failed'), 10_000);
      lock.kill('SIGKILL');
      await lock.exited;
      const released = await waitFor('the release', () => logLines(a).find((l) => l.msg === 'released lease'), 10_000);
      assert.equal(released.token, last.leaseTransitions, 'the lost term is released with its own token');
      const stepDown = logLines(a).find((l) => l.msg === 'stopped leading')!;
      const cmdStopped = logLines(a).find((l) => l.msg === 'command stopped')!;
      assert.ok(Date.parse(cmdStopped.time) <= Date.parse(released.time), 'CMD stopped before the release');
      const marginMs = expiresAt - Date.parse(released.time);
      console.log(`released ${Date.parse(released.time) - Date.parse(stepDown.time)} ms after the step-down, ${marginMs} ms before the lease could expire`);
      assert.ok(marginMs > 0, `released ${-marginMs} ms after the lease could have expired`);
      // Nothing but the release came between: the record is free, or a's next term took it past the token.
      const now = (await store.get('lost'))!.record;
      assert.ok(now.holderIdentity === '' || now.leaseTransitions > last.leaseTransitions, JSON.stringify(now));
    } finally {
      await store.close();
    }
    a.kill('SIGTERM');
    await a.exited;
  });

  it('a sidecar retrying the release on a file still locked answers its HTTP requests at once meanwhile', { timeout: 120_000 }, async () => {
    // Issue 43's revert (050f554): each retry of the release waited out the busy timeout
    // synchronously, several per round, and a sidecar retrying for the rest of its lease answered
    // its /metrics scrapes too late for the chart's LeaseholdRenewalsFailing alert. A retried
    // release never waits on the lock now (releaseWaitsForLock): the busy timeout here is 1 s
    // (lease 12 s, renew deadline 4 s). That is judged on the sidecar's own store timings (no
    // request over half a second meanwhile), not on how long a scrape took: a CI run saw one
    // scrape take 691 ms, and a run beside two busy loops one take 3,006 ms, with no store request
    // of the sidecar's waiting meanwhile (its writes answered in 0 ms, traced): the time was this
    // process's first fetch(), which loads Node's fetch client, stalled 2,485 ms on the loaded
    // machine. So the client is warmed first, and the scrapes' bound is only a coarse one.
    const db = join(dir.path, 'sidecar.db');
    const seed = new SqliteLeaseStore(db);
    await seed.create('lost', { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: new Date(), leaseTransitions: 0 });
    await seed.close();
    const port = await freePort();
    const a = startCli(['sidecar', '--db', db, '--lease', 'lost', '--identity', 'a', '--listen', `127.0.0.1:${port}`, ...T]);
    procs.push(a);
    const url = `http://127.0.0.1:${port}`;
    await waitFor('a to lead', () => logLines(a).some((l) => l.msg === 'became leader'), 30_000);
    // This process's first fetch(), before anything is timed: it loads the fetch client.
    await (await fetch(`${url}/metrics`)).text();
    const lock = holdWriteLock(db);
    procs.push(lock);
    await waitFor('the neighbour to hold the write lock', () => lock.stdout().includes('locked'), 10_000);
    await waitFor('a to step down', () => logLines(a).some((l) => l.msg === 'stopped leading'), 20_000);
    await waitFor('a release tried while the file is locked', () => logLines(a).some((l) => l.msg === 'release failed'), 10_000);
    // Its renewals waited on the lock until the step-down; from here on nothing may.
    const slowBefore = await slowStoreRequests(url);
    assert.ok(slowBefore >= 1, `the renewals waited on the lock before the step-down: ${slowBefore} slow store requests`);
    // Scrapes for 3 s (six retry periods, six rounds of the release) while the lock stays held.
    const slowest: number[] = [];
    for (const until = Date.now() + 3_000; Date.now() < until;) {
      const started = performance.now();
      const res = await fetch(`${url}/metrics`);
      await res.text();
      assert.equal(res.status, 200);
      slowest.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
    const rounds = logLines(a).filter((l) => l.msg === 'release failed').length;
    const slowAfter = await slowStoreRequests(url);
    assert.ok(rounds >= 3, `the release was retried meanwhile: ${rounds} attempts`);
    const worst = Math.max(...slowest);
    console.log(
      `${slowest.length} scrapes during ${rounds} release attempts on a locked file: slowest ${Math.round(worst)} ms; ` +
        `store requests over 0.5 s: ${slowBefore} before, ${slowAfter - slowBefore} meanwhile`,
    );
    assert.equal(slowAfter - slowBefore, 0, 'no store request waited on the lock while the release was retried');
    // Coarse (see above): the reverted retries, several waits in a row, gave 4,109 ms.
    assert.ok(worst < 1_500, `a scrape waited ${Math.round(worst)} ms: writes waited on the lock back to back`);
    assert.equal(logLines(a).filter((l) => l.msg === 'released lease').length, 0, 'nothing released while the file is locked');
    lock.kill('SIGKILL');
    await lock.exited;
    await waitFor('the release once the lock goes', () => logLines(a).find((l) => l.msg === 'released lease'), 10_000);
    a.kill('SIGTERM');
    await a.exited;
  });
});

describe('a term given up on a locked SQLite file', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  after(async () => {
    for (const p of procs) {
      p.kill('SIGKILL');
      await p.exited;
    }
  });

  it('its first release round stalls the sidecar no longer than one busy timeout', { timeout: 120_000 }, async () => {
    // The first round of a term given up may wait on the lock (releaseWaitsForLock), but it ends
    // at its first unanswered write: it once sent five, each waiting out the busy timeout
    // synchronously, and /metrics went unanswered about 5 s. The busy timeout here is 1 s (lease
    // 12 s, renew deadline 4 s: its cap, storeTimeouts).
    const busyMs = 1_000;
    const db = join(dir.path, 'given-up.db');
    const healthy = join(dir.path, 'healthy');
    writeFileSync(healthy, '');
    const seed = new SqliteLeaseStore(db);
    await seed.create('gu', { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: new Date(), leaseTransitions: 0 });
    await seed.close();
    const port = await freePort();
    const health = [
      '--health-exec',
      `test -f ${healthy}`,
      '--health-period',
      '300ms',
      '--health-timeout',
      '300ms',
      '--health-initial-delay',
      '0s',
      '--health-failure-threshold',
      '1',
    ];
    const a = startCli(['sidecar', '--db', db, '--lease', 'gu', '--identity', 'a', '--listen', `127.0.0.1:${port}`, ...health, ...T]);
    procs.push(a);
    await waitFor('a to lead', () => logLines(a).some((l) => l.msg === 'became leader'), 30_000);
    // Run alone, this is the process's first fetch(): it loads the fetch client before any is timed.
    await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const lock = holdWriteLock(db);
    procs.push(lock);
    await waitFor('the neighbour to hold the write lock', () => lock.stdout().includes('locked'), 10_000);
    // The app fails its probe: the leader gives its term up, well before the 4 s renew deadline.
    rmSync(healthy);
    const scrapes: number[] = [];
    for (const until = Date.now() + 7_000; Date.now() < until;) {
      const started = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      await res.text();
      scrapes.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(
      logLines(a).some((l) => l.msg === 'stopped leading'),
      'stepped down',
    );
    const failed = logLines(a).filter((l) => l.msg === 'release failed').length;
    assert.ok(failed >= 1, 'a release was tried while the file was locked');
    const worst = Math.round(Math.max(...scrapes));
    console.log(`${scrapes.length} scrapes, ${failed} release writes refused on the locked file: slowest ${worst} ms`);
    assert.ok(worst < 2 * busyMs, `a scrape waited ${worst} ms (release writes each waited the ${busyMs} ms busy timeout in one round)`);
    lock.kill('SIGKILL');
    await lock.exited;
    a.kill('SIGTERM');
    await a.exited;
  });
});

describe('a shard session lost to a locked SQLite file', () => {
  const dir = tempDir('leasehold-shard-lock-');
  const procs: Proc[] = [];
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    dir.cleanup();
  });

  it('answers /metrics within about one busy timeout, and tells its unanswered releases in one line a turn', { timeout: 120_000 }, async () => {
    // Once, at the session's loss, the last heartbeat and two takes of a member slot each waited
    // out the busy timeout back to back (about 3 s unanswered), and every round of releases
    // logged a line per shard (320 lines in 10 s for 64 shards). The busy timeout is 1 s here.
    const busyMs = 1_000;
    const shards = 64;
    const windowMs = 10_000;
    const db = join(dir.path, 'leases.db');
    const args = ['sidecar', '--shards', String(shards), '--lease', 'w', '--db', db, '--identity', 'a'];
    const a = startCli([...args, '--status-dir', join(dir.path, 'status'), '--listen', '127.0.0.1:0', ...T]);
    procs.push(a);
    const address = await waitFor('the listen address', () => /"listen":"([\d.:]+)"/.exec(a.stderr())?.[1], 20_000);
    const url = `http://${address}`;
    await waitFor(
      `a to own ${shards} shards`,
      async () => (await (await fetch(`${url}/metrics`)).text()).includes(`leasehold_shards_owned{group="w"} ${shards}`),
      60_000,
    );
    const lock = holdWriteLock(db);
    procs.push(lock);
    await waitFor('the neighbour to hold the write lock', () => lock.stdout().includes('locked'), 10_000);
    const logged = a.stderr().length;
    const scrapes: number[] = [];
    for (const until = Date.now() + windowMs; Date.now() < until;) {
      const started = performance.now();
      await (await fetch(`${url}/metrics`)).text();
      scrapes.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
    const lines = a
      .stderr()
      .slice(logged)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; count?: number });
    assert.ok(
      lines.some((l) => l.msg === 'lost the shard group session'),
      'the session was lost while the file was locked',
    );
    const worst = Math.round(Math.max(...scrapes));
    const told = lines.filter((l) => l.msg.startsWith('releasing a shard failed') || l.msg.startsWith('releasing shards failed'));
    const releasesTold = told.reduce((n, l) => n + (l.count ?? 1), 0);
    console.log(`${scrapes.length} scrapes, slowest ${worst} ms; ${told.length} lines told ${releasesTold} unanswered releases in ${windowMs / 1000} s`);
    assert.ok(worst < 2 * busyMs, `a scrape waited ${worst} ms (busy timeout ${busyMs} ms): waits on the lock back to back`);
    assert.ok(releasesTold >= shards, `every shard's unanswered release is told: ${releasesTold}`);
    // A turn each retryPeriod (500 ms), a few more on wake-ups: a line per shard would be hundreds.
    assert.ok(told.length <= (2 * windowMs) / 500, `${told.length} lines for the unanswered releases of ${shards} shards in ${windowMs / 1000} s`);
  });
});
