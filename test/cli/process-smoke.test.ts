/**
 * What only a real process shows of the CLI; every kind of bad input is refused in-process by
 * cmd/bad-input.test.ts (main() with captured io). Here, the built bin: its exit codes as the
 * shell sees them, what goes to stdout and what to stderr, a refusal before anything is written
 * (no database, no status directory, the command not run), a variable read from the process's
 * environment, and a second signal during shutdown ending the process at once.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { runCli, startCli, tempDir, waitFor, type Proc } from '../support/cli.js';

/** Short timings: a lease never seen is created after one lease duration. */
const FAST = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];

/** A port another listener holds (port 0: whatever is free). */
const holder = createServer();
await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
const BUSY = `127.0.0.1:${(holder.address() as { port: number }).port}`;

describe('the bin as a process', () => {
  const dir = tempDir();
  const procs: Proc[] = [];
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    holder.close();
    dir.cleanup();
  });
  /** A directory of its own for a case, empty. */
  const cwdFor = (name: string) => {
    const cwd = join(dir.path, name);
    mkdirSync(cwd);
    return cwd;
  };

  it('bad input: exit 2, one line on stderr, nothing on stdout, no database nor status directory', async () => {
    const cwd = cwdFor('refused');
    const r = await runCli(['sidecar', '--listen', BUSY, '--status-dir', 'status'], {}, cwd);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.signal, null);
    assert.match(r.stderr, /^leasehold: invalid --listen "127\.0\.0\.1:\d+": cannot listen there: the address is in use by another process .*\n$/);
    assert.equal(r.stderr.split('\n').length, 2, 'one line');
    assert.equal(r.stdout, '');
    assert.deepEqual(readdirSync(cwd), [], 'no ./.leasehold/leases.db, no status directory');
  });

  it("a refused run never starts its command; the refusal names the process's variable", async () => {
    const cwd = cwdFor('run-refused');
    const r = await runCli(['run', '--', 'sh', '-c', 'touch ran'], { LEASEHOLD_LISTEN: BUSY }, cwd);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^leasehold: invalid LEASEHOLD_LISTEN "127\.0\.0\.1:\d+" \(for --listen\): cannot listen there/);
    assert.equal(r.stdout, '');
    assert.deepEqual(readdirSync(cwd), [], 'the command did not run, and no database was made');
  });

  it('an unknown command is exit 2 on stderr; --help and --version are exit 0 on stdout', async () => {
    const unknown = await runCli(['sidecars']);
    assert.deepEqual([unknown.code, unknown.stdout], [2, '']);
    assert.match(unknown.stderr, /^leasehold: unknown command "sidecars": the commands are sidecar, status, run and operator\n$/);
    for (const args of [['--help'], ['status', '--help'], ['--version']]) {
      const r = await runCli(args);
      assert.deepEqual([r.code, r.stderr], [0, ''], args.join(' '));
      assert.notEqual(r.stdout, '', args.join(' '));
    }
  });

  it('status: no such lease is exit 1 with its report on stdout and nothing on stderr; a lease found is exit 0', async () => {
    const cwd = cwdFor('status');
    await new SqliteLeaseStore(join(cwd, 'leases.db')).close();
    const absent = await runCli(['status', '--db', 'leases.db', '--lease', 'nobody'], {}, cwd);
    assert.equal(absent.code, 1, absent.stderr);
    assert.equal(absent.stderr, '');
    assert.match(absent.stdout, /^lease nobody not found in sqlite store leases\.db\n$/);
    const once = await runCli(['run', '--once', '--db', 'leases.db', '--lease', 'once', ...FAST, '--', 'true'], {}, cwd);
    assert.equal(once.code, 0, once.stderr);
    const found = await runCli(['status', '--json', '--db', 'leases.db', '--lease', 'once'], {}, cwd);
    assert.equal(found.code, 0, found.stderr);
    assert.equal((JSON.parse(found.stdout) as { found: boolean }).found, true);
  });

  it('a second signal while run shuts down ends the process at once: 128 + its number', { timeout: 60_000 }, async () => {
    const cwd = cwdFor('second-signal');
    // A released lease is taken at once (a lease never seen only after a lease duration).
    const made = await runCli(['run', '--once', '--db', 'leases.db', '--lease', 'stubborn', ...FAST, '--', 'true'], {}, cwd);
    assert.equal(made.code, 0, made.stderr);
    // The command ignores SIGTERM, so run waits out its grace period: the second signal ends that wait.
    const script = 'trap "" TERM; touch started; while :; do sleep 0.1; done';
    const long = ['--lease-duration', '60s', '--renew-deadline', '20s', '--contention-window', '0s', '--grace-period', '39s'];
    const p = startCli(['run', '--db', 'leases.db', '--lease', 'stubborn', ...long, '--', 'sh', '-c', script], {}, cwd);
    procs.push(p);
    await waitFor(`the command to start (${p.stderr()})`, () => existsSync(join(cwd, 'started')), 30_000);
    p.kill('SIGTERM');
    await waitFor('the signal forwarded', () => p.stderr().includes('"forwarding signal to command"'), 10_000);
    p.kill('SIGTERM');
    const exited = await p.exited;
    assert.deepEqual(exited, { code: 128 + 15, signal: null }, p.stderr());
  });
});
