/**
 * `leasehold run --give-up-after N`: a command that keeps failing on one host gives the lease up,
 * so another host, where it runs, takes over. Two real `leasehold run` processes on one SQLite
 * file; the command decides by a variable whether it fails (host A) or runs (host B).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];
/** Fails at once where FAIL=1; elsewhere marks that it runs and keeps running. */
const CMD = ['sh', '-c', 'if [ "$FAIL" = 1 ]; then exit 3; fi; touch "$MARK"; exec sleep 60'];

describe('leasehold run --give-up-after', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');

  function host(id: string, fail: boolean, flags: string[] = [], lease = 'give-up'): { proc: Proc; mark: string } {
    const mark = join(dir.path, `${id}.running`);
    const proc = startCli(['run', '--db', db, '--lease', lease, '--identity', id, ...T, ...flags, '--', ...CMD], { FAIL: fail ? '1' : '0', MARK: mark });
    procs.push(proc);
    return { proc, mark };
  }

  it('a command that fails 3 times in a row on A gives the lease to B, where it runs; A stands back', { timeout: 60_000 }, async () => {
    const a = host('a', true);
    await waitFor("A's command to start", () => a.proc.stderr().includes('"msg":"started command"'), 20_000);
    const b = host('b', false);
    await waitFor('B to follow A', () => /"msg":"new leader observed".*"holder":"a"/.test(b.proc.stderr()), 20_000);
    const since = Date.now();
    // Three failures with 1 s and 2 s of backoff between them, then a release: B runs it well
    // within the 2 s lease after A's last failure.
    await waitFor('B to run the command', () => existsSync(b.mark), 15_000);
    const tookMs = Date.now() - since;
    const aLog = a.proc.stderr();
    assert.match(aLog, /"msg":"the command failed too often while leading: giving the lease up".*"failures":3/);
    assert.match(aLog, /"msg":"released lease"/, 'A released (not left to expire)');
    assert.equal(aLog.match(/"msg":"started command"/g)?.length, 3, 'A ran it three times, then gave up');
    assert.ok(tookMs < 10_000, `B ran it ${tookMs} ms after it followed A`);
    // A stands back: B keeps the lease through A's stand-back and after it (B renews).
    await waitFor('A to campaign again after its stand-back', () => /"msg":"the app is eligible: campaigning"/.test(a.proc.stderr()), 10_000);
    assert.equal((a.proc.stderr().match(/"msg":"started command"/g) ?? []).length, 3, 'A did not lead again');
    assert.doesNotMatch(b.proc.stderr(), /"msg":"stopped leading"/);
    a.proc.kill('SIGTERM');
    b.proc.kill('SIGTERM');
    assert.equal((await a.proc.exited).code, 0);
    await b.proc.exited;
  });

  it('--give-up-after 0 never gives up: the failing host keeps the lease', { timeout: 60_000 }, async () => {
    const a = host('a0', true, ['--give-up-after', '0'], 'never');
    await waitFor("A's command to start", () => a.proc.stderr().includes('"msg":"started command"'), 20_000);
    await waitFor('a fourth failure', () => (a.proc.stderr().match(/"msg":"command exited"/g) ?? []).length >= 4, 20_000);
    assert.doesNotMatch(a.proc.stderr(), /giving the lease up|"msg":"released lease"/);
    a.proc.kill('SIGTERM');
    await a.proc.exited;
  });
});
