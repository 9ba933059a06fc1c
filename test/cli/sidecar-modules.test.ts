import { after, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, NODE_FLAGS, REPO, start, tempDir, waitFor, type Proc } from '../support/cli.js';

const dir = tempDir();
const procs: Proc[] = [];
after(async () => {
  // SIGTERM: a `run` stops its command (its own process group) before it exits.
  for (const p of procs) p.kill('SIGTERM');
  const timer = setTimeout(() => procs.forEach((p) => p.kill('SIGKILL')), 10_000);
  await Promise.all(procs.map((p) => p.exited));
  clearTimeout(timer);
  dir.cleanup();
});

/**
 * Starts a real `leasehold sidecar` (or `run`) with the test-only module log preloaded, waits
 * until it has published its status, and returns the modules it resolved.
 */
async function modulesOfRunningSidecar(name: string, flags: string[], command = 'sidecar', after: string[] = []): Promise<string[]> {
  const log = join(dir.path, `${name}.modules`);
  const statusDir = join(dir.path, `status-${name}`);
  const args = [...NODE_FLAGS, '--import', join(REPO, 'test/support/module-log.mjs'), CLI, command];
  const p = start(
    process.execPath,
    [...args, '--db', join(dir.path, 'leases.db'), '--lease', name, '--status-dir', statusDir, '--listen', 'off', ...flags, ...after],
    {
      LEASEHOLD_TEST_MODULE_LOG: log,
    },
  );
  procs.push(p);
  await waitFor(`${name}: status.json, or its exit (${p.stderr()})`, () => existsSync(join(statusDir, 'status.json')) || p.child.exitCode !== null, 30_000);
  assert.equal(p.child.exitCode, null, p.stderr());
  return readFileSync(log, 'utf8').trim().split('\n');
}

/** What a long-running sidecar or run has no use for: the help text, the operator, another command, a shard group's member. */
const idle = (urls: string[], command: string) =>
  urls.filter((u) =>
    new RegExp(
      `/dist/cmd/(cli-help|operator-command|status-command${command === 'sidecar' ? '|run-command' : '|sidecar-command'})\\.js$|/dist/src/operator/|/dist/src/shards/|/dist/src/sidecar/shard-`,
    ).test(u),
  );

it('a running `leasehold sidecar` has loaded neither the help text nor another command', { timeout: 60_000 }, async () => {
  const loaded = await modulesOfRunningSidecar('plain', ['--identity', 'plain-1', '--lease-duration', '15s', '--no-release-on-exit']);
  assert.ok(
    loaded.some((u) => u.endsWith('/dist/cmd/sidecar-command.js')),
    'the module log saw the sidecar load',
  );
  assert.deepEqual(idle(loaded, 'sidecar'), []);
});

it('nor with a camelCase flag and a boolean given as a word', { timeout: 60_000 }, async () => {
  const loaded = await modulesOfRunningSidecar('camel', ['--identity', 'camel-1', '--leaseDuration', '15s', '--release-on-exit', 'false']);
  assert.deepEqual(idle(loaded, 'sidecar'), []);
});

it('a running `leasehold run` has loaded neither the help text nor another command', { timeout: 60_000 }, async () => {
  const loaded = await modulesOfRunningSidecar('run', ['--identity', 'run-1'], 'run', ['--', 'sleep', '60']);
  assert.ok(
    loaded.some((u) => u.endsWith('/dist/cmd/run-command.js')),
    'the module log saw the run load',
  );
  assert.deepEqual(idle(loaded, 'run'), []);
});
