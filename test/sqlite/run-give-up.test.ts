/**
 * `leasehold run --give-up-after N`: a command that keeps failing on one host gives the lease up,
 * so another host, where it runs, takes over. Two real `leasehold run` processes on one SQLite
 * file (the scenario: test/support/give-up-scenario.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { giveUpHost, giveUpScenario } from '../support/give-up-scenario.js';
import { startHealthApp } from '../support/health-apps.js';

describe('leasehold run --give-up-after', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');

  it('a command that fails 3 times in a row on A gives the lease to B, where it runs; A stands aside', { timeout: 60_000 }, async () => {
    const tookMs = await giveUpScenario(dir.path, ['--db', db, '--lease', 'give-up'], procs);
    console.log(`sqlite: B ran the command ${tookMs} ms after it followed A`);
  });

  it('--give-up-after 0 never gives up: the failing host keeps the lease', { timeout: 60_000 }, async () => {
    const a = giveUpHost(dir.path, ['--db', db, '--lease', 'never'], 'a0', true, procs, ['--give-up-after', '0']);
    await waitFor("A's command to start", () => a.proc.stderr().includes('"msg":"started command"'), 20_000);
    await waitFor('a fourth failure', () => (a.proc.stderr().match(/"msg":"command exited"/g) ?? []).length >= 4, 20_000);
    assert.doesNotMatch(a.proc.stderr(), /giving the lease up|"msg":"released lease"/);
    a.proc.kill('SIGTERM');
    await a.proc.exited;
  });

  it("giving up is not a step-down for the app's health: with a healthy app, leasehold_health_step_downs_total stays 0", { timeout: 60_000 }, async () => {
    const healthy = await startHealthApp('ok');
    procs.push(healthy.proc);
    const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '300ms'];
    const health = ['--health-http', healthy.url, '--health-period', '300ms', '--health-timeout', '200ms'];
    const p = startCli([
      'run',
      '--db',
      db,
      '--lease',
      'give-up-health',
      ...T,
      '--listen',
      '127.0.0.1:0',
      ...health,
      '--give-up-after',
      '1',
      '--',
      'sh',
      '-c',
      'exit 3',
    ]);
    procs.push(p);
    await waitFor('the runner to give the lease up', () => p.stderr().includes('"msg":"released lease"'), 30_000);
    const listen = /"listen":"([^"]+)"/.exec(p.stderr())![1]!;
    const metrics = (await (await fetch(`http://${listen}/metrics`)).text()).split('\n');
    assert.ok(metrics.includes('leasehold_app_eligible{name="give-up-health"} 1'), 'the app stayed healthy');
    assert.ok(metrics.includes('leasehold_health_step_downs_total{name="give-up-health"} 0'), metrics.filter((l) => l.includes('step_downs')).join('\n'));
    p.kill('SIGTERM');
    await p.exited;
  });
});
