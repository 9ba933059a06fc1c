/**
 * `leasehold run --give-up-after`'s scenario, on any store: two real `leasehold run` processes;
 * the command fails at once on host A and runs on host B (decided by a variable). A gives the
 * lease up after 3 failures in a row and stands aside; B runs the command and keeps the lease.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startCli, waitFor, type Proc } from './cli.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];
/** Fails at once where FAIL=1; elsewhere marks that it runs and keeps running. */
const CMD = ['sh', '-c', 'if [ "$FAIL" = 1 ]; then exit 3; fi; touch "$MARK"; exec sleep 60'];

/** One `leasehold run` host on `backend` (its store flags, lease included). */
export function giveUpHost(dir: string, backend: string[], id: string, fail: boolean, procs: Proc[], flags: string[] = []): { proc: Proc; mark: string } {
  const mark = join(dir, `${id}.running`);
  const proc = startCli(['run', ...backend, '--identity', id, ...T, ...flags, '--', ...CMD], { FAIL: fail ? '1' : '0', MARK: mark });
  procs.push(proc);
  return { proc, mark };
}

/** Runs the scenario; returns how long after B followed A it was running the command (ms). */
export async function giveUpScenario(dir: string, backend: string[], procs: Proc[]): Promise<number> {
  const a = giveUpHost(dir, backend, 'a', true, procs);
  await waitFor("A's command to start", () => a.proc.stderr().includes('"msg":"started command"'), 20_000);
  const b = giveUpHost(dir, backend, 'b', false, procs);
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
  // A stands aside: B keeps the lease through A's time aside and after it (B renews).
  await waitFor('A to campaign again after its time aside', () => /"msg":"the app is eligible: campaigning"/.test(a.proc.stderr()), 10_000);
  assert.equal((a.proc.stderr().match(/"msg":"started command"/g) ?? []).length, 3, 'A did not lead again');
  assert.doesNotMatch(b.proc.stderr(), /"msg":"stopped leading"/);
  a.proc.kill('SIGTERM');
  b.proc.kill('SIGTERM');
  assert.equal((await a.proc.exited).code, 0);
  await b.proc.exited;
  return tookMs;
}
