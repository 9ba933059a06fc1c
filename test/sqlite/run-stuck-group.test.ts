/**
 * `leasehold run`'s end-of-term gate waits for CMD's whole session, not only for CMD: a
 * process CMD started in its session that the kernel cannot kill at once (in uninterruptible
 * sleep; here held by the cgroup v1 freezer, where a SIGKILL stays pending until the thaw) is
 * the term's work as much as CMD is (docs/drain.md, "leasehold run"). Needs root and the v1
 * freezer.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, pidWritten, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { stopRunners } from '../support/run-session.js';
import { freezer, freezerAvailable, type Freezer } from '../support/freezer.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { startHealthApp } from '../support/health-apps.js';

const T = ['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '300ms', '--grace-period', '500ms'];
/** CMD: a worker in its process group, then CMD itself, which SIGTERM ends at once. */
const CMD = ['sh', '-c', 'sleep 300 & echo $! > worker; while :; do sleep 0.05; done'];

interface Line {
  time: string;
  msg: string;
}

function lines(p: Proc): Line[] {
  return p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

describe(
  'run: a process CMD left in its session that the kernel cannot kill at once',
  { skip: !freezerAvailable() && 'needs root and the cgroup v1 freezer' },
  () => {
    const procs: Proc[] = [];
    const freezers: Freezer[] = [];
    const dir = scratchDir(() => procs);
    const db = join(dir.path, 'leases.db');
    after(async () => {
      for (const f of freezers) await f.remove();
      // A runner that left past the bound left its CMD's cgroup (if it had one) behind.
      await stopRunners(procs);
    });

    /** A runner whose CMD's worker is frozen; resolves with the runner and the worker's PID. */
    async function frozenWorker(name: string): Promise<{ p: Proc; worker: number; frozen: Freezer }> {
      const work = join(dir.path, name);
      mkdirSync(work);
      const p = startCli(['run', '--db', db, '--lease', name, '--identity', name, ...T, '--', ...CMD], {}, work);
      procs.push(p);
      const worker = await waitFor('the worker', () => pidWritten(join(work, 'worker')), 20_000);
      const frozen = freezer(name);
      freezers.push(frozen);
      await frozen.freeze(worker);
      return { p, worker, frozen };
    }

    async function holder(lease: string): Promise<string | undefined> {
      const store = new SqliteLeaseStore(db);
      try {
        return (await store.get(lease))?.record.holderIdentity;
      } finally {
        await store.close();
      }
    }

    it('SIGTERM: CMD exits at once, and the release waits until the worker is gone', { timeout: 60_000 }, async () => {
      const { p, worker, frozen } = await frozenWorker('stuck-briefly');
      p.kill('SIGTERM');
      // CMD is gone; its worker, SIGKILLed, is not. Either the runner says it waits for it, or
      // (the bug) the release has gone out already.
      await waitFor('the wait for the worker, or the release', () => /session still run|"released lease"/.test(p.stderr()), 10_000, 5);
      const releasedWhileAlive = p.stderr().includes('"released lease"') && isAlive(worker);
      assert.equal(releasedWhileAlive, false, `the lease was released while the worker ${worker} of CMD's group was alive:\n${p.stderr()}`);
      assert.equal(await holder('stuck-briefly'), 'stuck-briefly', 'still held while the worker lives');
      const thawedAt = Date.now();
      frozen.thaw();
      const exit = await p.exited;
      assert.equal(exit.code, 143, p.stderr()); // CMD's status: killed by SIGTERM
      assert.equal(isAlive(worker), false);
      const released = lines(p).find((l) => l.msg === 'released lease');
      assert.ok(released, `released once the worker was gone:\n${p.stderr()}`);
      assert.ok(Date.parse(released.time) >= thawedAt - 5, `released at ${released.time}, the worker thawed (and died) at ${new Date(thawedAt).toISOString()}`);
      assert.equal(await holder('stuck-briefly'), '');
    });

    it('the worker still there past the grace period and the kill wait: the lease is left to expire, not released', { timeout: 60_000 }, async () => {
      const { p, worker, frozen } = await frozenWorker('stuck-long');
      p.kill('SIGTERM');
      const exit = await p.exited;
      assert.equal(isAlive(worker), true, 'the worker is still frozen');
      frozen.thaw();
      assert.equal(exit.code, 143, p.stderr()); // CMD's status: killed by SIGTERM
      const msgs = lines(p).map((l) => l.msg);
      assert.ok(msgs.includes('the work did not finish within drainTimeoutMs: the lease is left to expire, not released'), p.stderr());
      assert.equal(msgs.includes('released lease'), false, p.stderr());
      assert.equal(await holder('stuck-long'), 'stuck-long', 'not released: it expires');
    });

    /**
     * CMD itself frozen: past the grace period + 2 s (the bound of every way a term ends) nothing
     * is released, the lease is left to expire, and leasehold exits, 137 (CMD never exited).
     */
    async function frozenCommand(name: string, extra: string[] = []): Promise<{ p: Proc; cmd: number }> {
      const work = join(dir.path, name);
      mkdirSync(work);
      const loop = ['sh', '-c', 'echo $$ > cmd; while :; do sleep 0.05; done'];
      const p = startCli(['run', '--db', db, '--lease', name, '--identity', name, ...T, ...extra, '--', ...loop], {}, work);
      procs.push(p);
      const cmd = await waitFor('CMD', () => pidWritten(join(work, 'cmd')), 20_000);
      const frozen = freezer(name);
      freezers.push(frozen);
      await frozen.freeze(cmd);
      return { p, cmd };
    }

    /** Resolves with leasehold's exit and how long it took, or undefined when it still runs after `ms`. */
    async function exitWithin(p: Proc, ms: number): Promise<{ code: number | null; tookMs: number } | undefined> {
      const began = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const exit = await Promise.race([p.exited, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
      clearTimeout(timer);
      return exit && { code: exit.code, tookMs: Date.now() - began };
    }

    /** Grace 500 ms + 2 s, and 2 s for a busy machine: a leasehold still running past it waits without bound. */
    const BOUND_MS = 500 + 2_000 + 2_000;

    it('SIGTERM with CMD itself frozen: leasehold exits within grace + 2 s and does not release', { timeout: 60_000 }, async () => {
      const { p, cmd } = await frozenCommand('frozen-cmd');
      p.kill('SIGTERM');
      const exit = await exitWithin(p, BOUND_MS);
      assert.ok(exit, `leasehold still runs ${BOUND_MS} ms after SIGTERM (CMD ${cmd} frozen):\n${p.stderr()}`);
      console.log(`SIGTERM, CMD frozen: leasehold exited ${exit.code} after ${exit.tookMs} ms`);
      assert.equal(exit.code, 137, p.stderr());
      const msgs = lines(p).map((l) => l.msg);
      assert.equal(msgs.includes('released lease'), false, p.stderr());
      assert.equal(await holder('frozen-cmd'), 'frozen-cmd', 'not released: it expires');
    });

    it('a health step-down with CMD frozen: leasehold exits within grace + 2 s and does not release', { timeout: 60_000 }, async () => {
      const app = await startHealthApp('flap:60000');
      procs.push(app.proc);
      const health = ['--health-http', app.url, '--health-period', '200ms', '--health-timeout', '150ms'];
      const { p, cmd } = await frozenCommand('frozen-health', health);
      app.proc.kill('SIGUSR2'); // 503 from now on
      await waitFor('the step-down', () => p.stderr().includes('"msg":"stopped leading"') || p.stderr().includes('lost leadership'), 20_000, 5);
      const exit = await exitWithin(p, BOUND_MS);
      assert.ok(exit, `leasehold still runs ${BOUND_MS} ms after its step-down (CMD ${cmd} frozen):\n${p.stderr()}`);
      console.log(`health step-down, CMD frozen: leasehold exited ${exit.code} after ${exit.tookMs} ms`);
      assert.equal(exit.code, 137, p.stderr());
      assert.equal(
        lines(p)
          .map((l) => l.msg)
          .includes('released lease'),
        false,
        p.stderr(),
      );
      assert.equal(await holder('frozen-health'), 'frozen-health', 'not released: it expires');
      app.proc.kill('SIGTERM');
    });
  },
);
