import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, isAlive, startCli, waitFor, type Proc } from './cli.js';

const CHILD = join(REPO, 'test/support/exclusive_child.py');
const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];

/** What the running child wrote about itself (exclusive_child.py). */
export function current(dir: string): { identity: string; pid: number; token: number } | undefined {
  try {
    const [identity, pid, token] = readFileSync(join(dir, 'current'), 'utf8').trim().split(' ');
    return { identity: identity!, pid: Number(pid), token: Number(token) };
  } catch {
    return undefined;
  }
}

/**
 * Three `leasehold run` candidates, each with a child that checks by itself (an exclusive
 * flock) that no other copy runs. Four times: SIGKILL the leader's leasehold; its child must
 * die at once (no orphan), and a new child must start under a new leader with a higher token.
 * Returns the tokens the children received.
 */
export async function exclusiveRunScenario(backend: string[], work: string, procs: Proc[]): Promise<number[]> {
  mkdirSync(work, { recursive: true });
  const byId = new Map<string, Proc>();
  const launch = (id: string) => {
    const p = startCli(['run', ...backend, '--identity', id, ...T, '--', 'python3', CHILD, work]);
    procs.push(p);
    byId.set(id, p);
  };
  for (const id of ['a', 'b', 'c']) launch(id);
  let seen = await waitFor('a child to run', () => current(work), 30_000);
  const tokens = [seen.token];
  for (let round = 0; round < 4; round++) {
    byId.get(seen.identity)!.kill('SIGKILL');
    await waitFor(`child ${seen.pid} to die with its leasehold`, () => !isAlive(seen.pid), 1_500, 10);
    const prev = seen;
    seen = await waitFor(
      'a new child under a new leader',
      () => {
        const c = current(work);
        return c && c.pid !== prev.pid ? c : undefined;
      },
      15_000,
    );
    assert.ok(seen.token > prev.token, 'the new child got a higher fencing token');
    assert.notEqual(seen.identity, prev.identity);
    tokens.push(seen.token);
    launch(prev.identity);
  }
  const violations = existsSync(join(work, 'violations')) ? readFileSync(join(work, 'violations'), 'utf8') : '';
  assert.equal(violations, '', 'two copies ran at once');
  const leader = byId.get(seen.identity)!;
  // The child records itself in a file before printing: give its line time to arrive.
  const line = `child running: ${seen.identity} ${seen.pid} ${seen.token}`;
  await waitFor("the child's stdout to pass through", () => leader.stdout().includes(line), 5_000);
  assert.doesNotMatch(leader.stdout(), /"msg"/, "leasehold's own logs stay on stderr");
  assert.match(leader.stderr(), /"msg":"started command".*"token":\d+/);
  return tokens;
}
