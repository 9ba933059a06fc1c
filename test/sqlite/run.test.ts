import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_FLAGS, REPO, isAlive, pidWritten, runCli, runOnce, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { current, exclusiveRunScenario } from '../support/run-scenario.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

const CHILD = join(REPO, 'test/support/exclusive_child.py');
const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];

describe('leasehold run -- CMD', () => {
  const dir = scratchDir(() => procs);
  const procs: Proc[] = [];
  const db = join(dir.path, 'leases.db');

  it('runs the command only while leader across 3 candidates; SIGKILL of leasehold takes its child down too', { timeout: 120_000 }, async () => {
    const tokens = await exclusiveRunScenario(['--db', db, '--lease', 'run-excl'], join(dir.path, 'exclusive'), procs);
    console.log(`sqlite: tokens handed to children: ${tokens.join(' → ')}`);
  });

  it('a child that ignores SIGTERM is killed after the grace period when leadership is lost', { timeout: 60_000 }, async () => {
    const work = join(dir.path, 'stubborn');
    await import('node:fs').then((fs) => fs.mkdirSync(work));
    const p = startCli([
      'run',
      '--db',
      db,
      '--lease',
      'run-stubborn',
      '--identity',
      'stubborn',
      ...T,
      '--grace-period',
      '400ms',
      '--',
      'python3',
      CHILD,
      work,
      '--ignore-term',
    ]);
    procs.push(p);
    const child = await waitFor('the child', () => current(work), 20_000);
    // Take the lease away, as another writer would (compare-and-swap on the real file).
    const store = new SqliteLeaseStore(db);
    const got = (await store.get('run-stubborn'))!;
    await store.update(
      'run-stubborn',
      { ...got.record, holderIdentity: 'intruder', renewTime: new Date(), leaseTransitions: got.record.leaseTransitions + 1 },
      got.version,
    );
    await store.close();
    await waitFor('the stubborn child to be killed', () => !isAlive(child.pid), 10_000, 10);
    await waitFor('the kill to be logged', () => p.stderr().includes('command killed after grace period'), 2_000);
    const lines = p
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { time: string; msg: string; reason?: string; gracePeriodMs?: number; killDueAt?: string; killLateMs?: number });
    const lost = lines.find((l) => l.msg === 'stopped leading')!;
    const killed = lines.find((l) => l.msg === 'command killed after grace period')!;
    assert.match(lost.reason!, /held by intruder/);
    assert.match(killed.reason!, /lost leadership/);
    const waited = Date.parse(killed.time) - Date.parse(lost.time);
    assert.ok(waited >= 380, `SIGKILL came ${waited} ms after the step-down; the grace is 400 ms`);
    assert.ok(waited < 400 + 1_000, `SIGKILL came ${waited} ms after the step-down`);
    // The line says when the SIGKILL was due and how late it went: at most the grace after the step-down.
    const dueAfterMs = Date.parse(killed.killDueAt!) - Date.parse(lost.time);
    assert.ok(dueAfterMs >= 0 && dueAfterMs <= 400 + 1, `SIGKILL due ${dueAfterMs} ms after the step-down; the grace is 400 ms`);
    assert.ok(killed.killLateMs! >= -1, `killLateMs ${killed.killLateMs}`);
    assert.equal(isAlive(p.pid), true, 'leasehold itself keeps campaigning');
  });

  it('--once passes the exit code through and releases the lease', { timeout: 60_000 }, async () => {
    const r = await runOnce(db, 'once', 'one', T, ['sh', '-c', 'echo "token=$LEASEHOLD_FENCING_TOKEN lease=$LEASEHOLD_LEASE id=$LEASEHOLD_IDENTITY"; exit 7']);
    assert.equal(r.code, 7, r.stderr);
    assert.equal(r.stdout, 'token=1 lease=once id=one\n');
    const store = new SqliteLeaseStore(db);
    assert.equal((await store.get('once'))?.record.holderIdentity, '', 'released after the command finished');
    await store.close();
    const ok = await runCli(['run', '--once', '--db', db, '--lease', 'once', ...T, '--', 'true']);
    assert.equal(ok.code, 0);
  });

  it('signals to leasehold are forwarded to the command; the lease is released after it exits', { timeout: 60_000 }, async () => {
    const script = 'trap \'echo "got TERM"; exit 0\' TERM; echo started; while true; do sleep 0.05; done';
    const p = startCli(['run', '--db', db, '--lease', 'forward', '--identity', 'fwd', ...T, '--', 'sh', '-c', script]);
    procs.push(p);
    await waitFor('the command to start', () => p.stdout().includes('started'), 20_000);
    p.kill('SIGTERM');
    const exit = await p.exited;
    assert.equal(exit.code, 0, p.stderr());
    assert.equal(p.stdout(), 'started\ngot TERM\n');
    const log = p.stderr();
    assert.ok(log.indexOf('"command exited"') < log.indexOf('"released lease"'), 'release only after the command exited');
    const store = new SqliteLeaseStore(db);
    assert.equal((await store.get('forward'))?.record.holderIdentity, '');
    await store.close();
  });

  it('re-elected while the old command is inside its grace period: the command runs again for the new term', { timeout: 60_000 }, async () => {
    const work = join(dir.path, 'regrace');
    mkdirSync(work);
    const T3 = ['--lease-duration', '3s', '--renew-deadline', '1s', '--retry-period', '300ms'];
    const p = startCli([
      'run',
      '--db',
      db,
      '--lease',
      'run-regrace',
      '--identity',
      'regrace',
      ...T3,
      '--grace-period',
      '1500ms',
      '--',
      'python3',
      CHILD,
      work,
      '--ignore-term',
    ]);
    procs.push(p);
    const first = await waitFor('the first command', () => current(work), 20_000);
    const store = new SqliteLeaseStore(db);
    // The leader renews between our read and our write now and then (a conflict): read again.
    const { stolen } = await waitFor(
      'the intruder to take the lease',
      async () => {
        const got = (await store.get('run-regrace'))!;
        const stolen = { ...got.record, holderIdentity: 'intruder', renewTime: new Date(), leaseTransitions: got.record.leaseTransitions + 1 };
        try {
          return { stolen, v: await store.update('run-regrace', stolen, got.version) };
        } catch (err) {
          if ((err as { code?: string }).code === 'LEASEHOLD_ERR_CONFLICT') return undefined;
          throw err;
        }
      },
      10_000,
      10,
    );
    await waitFor('the step-down', () => p.stderr().includes('"stopped leading"'), 10_000, 10);
    // The intruder releases at once: leasehold takes the lease again while the ignored SIGTERM's
    // grace runs. The standby may have written its successor claim since the steal (a conflict):
    // release the record as it is now, still the intruder's.
    await waitFor(
      'the intruder to release',
      async () => {
        const got = (await store.get('run-regrace'))!;
        assert.equal(got.record.holderIdentity, 'intruder', 'nobody took the lease from the intruder');
        assert.equal(got.record.leaseTransitions, stolen.leaseTransitions);
        try {
          return await store.update('run-regrace', { ...got.record, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new Date() }, got.version);
        } catch (err) {
          if ((err as { code?: string }).code === 'LEASEHOLD_ERR_CONFLICT') return undefined;
          throw err;
        }
      },
      10_000,
      10,
    );
    await store.close();
    const second = await waitFor(
      'the command for the new term',
      () => {
        const c = current(work);
        return c && c.pid !== first.pid ? c : undefined;
      },
      15_000,
    );
    assert.ok(second.token > first.token + 1, `new term token ${second.token} after ${first.token} and the intruder's`);
    assert.equal(isAlive(first.pid), false, 'the old command was killed first');
    assert.equal(existsSync(join(work, 'violations')), false, 'never two copies at once');
    p.kill('SIGTERM');
    await p.exited;
  });

  it('what the command left running is killed when it exits, before the release, not later by its watcher', { timeout: 60_000 }, async () => {
    const work = join(dir.path, 'leftover');
    mkdirSync(work);
    execFileSync('mkfifo', [join(work, 'go')]);
    // The command starts a worker of its own, then exits once told to: the worker is left behind.
    const script = 'sleep 300 & echo $! > worker; read _ < go; exit 0';
    const p = startCli(['run', '--once', '--db', db, '--lease', 'leftover', '--identity', 'left', ...T, '--', 'sh', '-c', script], {}, work);
    procs.push(p);
    const worker = await waitFor('the worker', () => pidWritten(join(work, 'worker')), 20_000);
    await waitFor('the worker to be sleep', () => (readFileSync(`/proc/${worker}/comm`, 'utf8').trim() === 'sleep' ? true : undefined), 5_000, 10);
    // The command may run before its "started command" line reaches us: wait for the line.
    const group = await waitFor(
      'the started command line',
      () => Number(/"msg":"started command".*?"pid":(\d+)/.exec(p.stderr())?.[1]) || undefined,
      10_000,
      10,
    );
    // The watcher in the command's group (a shell blocked on its pipe) kills leftovers once it
    // runs; stopped here, as on a machine too busy to run it before the release.
    const watcher = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d) && Number(d) !== group)
      .find((d) => {
        try {
          const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
          const [, , ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          return Number(ppid) === group && Number(pgrp) === group && readFileSync(`/proc/${d}/comm`, 'utf8').trim() === 'sh';
        } catch {
          return false;
        }
      });
    assert.ok(watcher, 'the watcher is in the group');
    process.kill(Number(watcher), 'SIGSTOP');
    try {
      writeFileSync(join(work, 'go'), 'now\n');
      const exit = await p.exited;
      assert.equal(exit.code, 0, p.stderr());
      assert.match(p.stderr(), /"msg":"released lease"/);
      assert.equal(isAlive(worker), false, `the worker ${worker} outlived the command and the release`);
    } finally {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  it('a command killed by a signal gives 128 + its number, as a shell does (SIGSEGV: 139)', { timeout: 30_000 }, async () => {
    const r = await runCli(['run', '--once', '--db', db, '--lease', 'segv', ...T, '--', 'sh', '-c', 'kill -SEGV $$']);
    assert.equal(r.code, 139, r.stderr);
  });

  it("a leasehold started inside the command does not campaign as its parent (no second leader on the parent's lease)", { timeout: 60_000 }, async () => {
    const cli = [process.execPath, ...NODE_FLAGS, join(REPO, 'dist/cmd/leasehold.js')].map((a) => JSON.stringify(a)).join(' ');
    const nested = [
      `${cli} status --json --db ${JSON.stringify(db)} --lease "$LEASEHOLD_LEASE"`,
      // A sidecar inside the command, with the inherited LEASEHOLD_LEASE/IDENTITY in its environment
      // (not LEASEHOLD_LISTEN: CMD's environment drops it, so the port is given here, never the
      // default 4040, which another process may hold).
      `(${cli} sidecar --listen 127.0.0.1:0 --db ${JSON.stringify(db)} --lease-duration 2s --renew-deadline 1500ms --retry-period 400ms --log-format json & pid=$!; sleep 3; kill -TERM $pid; wait $pid)`,
    ].join(' && ');
    const r = await runCli(['run', '--once', '--db', db, '--lease', 'nested', '--identity', 'parent', ...T, '--', 'sh', '-c', nested], {
      LEASEHOLD_LISTEN: '127.0.0.1:0',
      LEASEHOLD_ONCE: 'true',
    });
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout.trim().split('\n')[0]!) as { holder: string; fencingToken: number };
    assert.equal(report.holder, 'parent', 'status inside the command works despite the inherited variables');
    const innerLines = r.stderr
      .split('\n')
      .filter((l) => l.includes('"msg":"campaigning"'))
      .map((l) => JSON.parse(l) as { lease: string; identity: string });
    const inner = innerLines.find((l) => l.identity !== 'parent' || l.lease !== 'nested');
    assert.ok(inner, `the nested sidecar campaigned on its own lease and identity: ${JSON.stringify(innerLines)}`);
    assert.equal(innerLines.filter((l) => l.identity === 'parent' && l.lease === 'nested').length, 1, 'only the parent campaigns for "nested" as "parent"');
    const store = new SqliteLeaseStore(db);
    assert.equal((await store.get('nested'))?.record.leaseTransitions, 1, "no second term on the parent's lease");
    await store.close();
  });
});
