/** `leasehold status --watch` on SQLite (test/postgres and test/kubernetes run the same scenario there). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { runCli, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { watchScenario } from '../support/watch-scenario.js';
import { startSidecar, validLeaders } from '../support/sidecars.js';

describe('leasehold status --watch on SQLite', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it('one JSON line per change of holder, token or state; none per renewal; exit 0 on SIGINT', { timeout: 90_000 }, async () => {
    await watchScenario(['--db', join(dir.path, 'leases.db'), '--lease', 'watched'], dir.path, procs);
  });

  it('the text form: one line with the time, state, holder, token and expiry', { timeout: 60_000 }, async () => {
    const backend = ['--db', join(dir.path, 'text.db'), '--lease', 'text'];
    const c = startSidecar(dir.path, 'x', backend, { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' });
    procs.push(c.proc);
    await waitFor('a leader', () => validLeaders([c])[0], 30_000);
    const watcher = startCli(['status', ...backend, '--watch']);
    procs.push(watcher);
    const line = await waitFor('a held line', () => /^.*held.*\n/m.exec(watcher.stdout())?.[0], 30_000);
    assert.match(line, /^\d{4}-\d\d-\d\dT[\d:.]+Z {2}held {6}holder x {2}token \d+ {2}expires \d{4}-[\d-]+T[\d:.]+Z\n$/);
    watcher.kill('SIGTERM');
    assert.equal((await watcher.exited).code, 0);
  });

  it('--watch with no store to read is bad input, as without it: exit 2, one line', async () => {
    const r = await runCli(['status', '--db', join(dir.path, 'missing.db'), '--watch']);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });

  it('--watch on a PostgreSQL that refuses connections at start exits 3 with one line, as without it; --help says so', async () => {
    // A port just freed: nothing listens there, so the connection is refused at once.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const backend = ['--backend', 'postgres', '--postgres-url', `postgres://leasehold@127.0.0.1:${port}/leases`, '--lease', 'refused'];
    for (const extra of [['--watch'], []]) {
      const r = await runCli(['status', ...backend, ...extra]);
      assert.equal(r.code, 3, r.stderr);
      assert.match(r.stderr, new RegExp(`^leasehold: postgres connect .*ECONNREFUSED 127\\.0\\.0\\.1:${port}\\n$`));
      assert.equal(r.stdout, '');
    }
    const help = await runCli(['status', '--help']);
    assert.match(help.stdout.replace(/\s+/g, ' '), /3 status: the store did not answer in time or refused the connection;/);
  });
});
