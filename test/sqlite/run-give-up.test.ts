/**
 * `leasehold run --give-up-after N`: a command that keeps failing on one host gives the lease up,
 * so another host, where it runs, takes over. Two real `leasehold run` processes on one SQLite
 * file (the scenario: test/support/give-up-scenario.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { giveUpHost, giveUpScenario } from '../support/give-up-scenario.js';

describe('leasehold run --give-up-after', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');

  it('a command that fails 3 times in a row on A gives the lease to B, where it runs; A stands back', { timeout: 60_000 }, async () => {
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
});
