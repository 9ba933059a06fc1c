import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatusDirClaim, checkStatusDirFree } from './status-dir-claim.js';
import { StatusDirError, StatusDirInUseError } from '../errors.js';

/** A process that binds `path` (a socket path, or an abstract name written with a leading `@`) and says `up`, run as `uid` when given. */
async function binder(path: string, uid?: number) {
  const script = `require('node:net').createServer().listen({ path: process.argv[1].replace(/^@/, '\\0') }, () => console.log('up'))`;
  const argv =
    uid === undefined
      ? [process.execPath, '-e', script, path]
      : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, '-e', script, path];
  const child = spawn(argv[0]!, argv.slice(1), { cwd: '/', stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
  assert.equal(chunk.toString().trim(), 'up');
  return {
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    },
  };
}

const claimSockets = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('.leasehold-claim.'));

describe('StatusDirClaim: one sidecar per status directory', { skip: process.platform !== 'linux' && 'the claim is Linux’s' }, () => {
  const root = mkdtempSync(join(tmpdir(), 'leasehold-claim-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('a directory claimed once is refused to a second claim, by any path to it, until released', async () => {
    const dir = join(root, 'a');
    mkdirSync(dir);
    const link = join(root, 'a-link');
    symlinkSync(dir, link);
    const first = await StatusDirClaim.take(dir);
    try {
      await assert.rejects(
        StatusDirClaim.take(dir),
        (err: unknown) => err instanceof StatusDirInUseError && err instanceof StatusDirError && err.code === 'LEASEHOLD_ERR_STATUS_DIR',
      );
      await assert.rejects(StatusDirClaim.take(link), StatusDirInUseError, 'another path to the same directory');
      assert.throws(() => checkStatusDirFree(link), /is written by another running sidecar: give each sidecar a status directory of its own$/);
      assert.equal(claimSockets(dir).length, 1, 'a refused claimant removes its own socket');
    } finally {
      await first.release();
    }
    assert.deepEqual(claimSockets(dir), [], 'released: its socket is gone');
    checkStatusDirFree(dir);
    const again = await StatusDirClaim.take(dir);
    await again.release();
  });

  it('claims at once: exactly one wins, the others are refused and leave no socket', async () => {
    for (const n of [2, 5]) {
      const dir = join(root, `b${n}`);
      mkdirSync(dir);
      const results = await Promise.allSettled(Array.from({ length: n }, () => StatusDirClaim.take(dir)));
      const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof StatusDirInUseError, String(r.reason));
      assert.equal(won.length, 1, `${won.length} of ${n} claims held`);
      assert.equal(claimSockets(dir).length, 1);
      await won[0]!.release();
    }
  });

  it('another directory is another claim', async () => {
    mkdirSync(join(root, 'c'));
    mkdirSync(join(root, 'd'));
    const c = await StatusDirClaim.take(join(root, 'c'));
    const d = await StatusDirClaim.take(join(root, 'd'));
    await c.release();
    await d.release();
  });

  it('the abstract name the claim once had, bound first by another user, no longer blocks a start', async () => {
    const dir = join(root, 'e');
    mkdirSync(dir);
    const st = statSync(dir, { bigint: true });
    const oldName = `@${`leasehold/status-dir/${st.dev}/${st.ino}/`.padEnd(107, '.')}`;
    const squatter = await binder(oldName, process.geteuid?.() === 0 ? 65534 : undefined);
    try {
      checkStatusDirFree(dir);
      const claim = await StatusDirClaim.take(dir);
      await claim.release();
    } finally {
      await squatter.kill();
    }
  });

  it('the socket of a sidecar killed with SIGKILL does not block the next start', async () => {
    const dir = join(root, 'f');
    mkdirSync(dir);
    const dead = join(dir, '.leasehold-claim.0123456789abcdef.sock');
    const killed = await binder(dead);
    try {
      await assert.rejects(StatusDirClaim.take(dir), StatusDirInUseError, 'alive, it holds the directory');
    } finally {
      await killed.kill();
    }
    assert.ok(existsSync(dead), 'SIGKILL leaves its socket file');
    checkStatusDirFree(dir);
    const claim = await StatusDirClaim.take(dir);
    await claim.release();
  });

  it('a claim socket another listener of this process holds counts as held', async () => {
    const dir = join(root, 'g');
    mkdirSync(dir);
    const other = createServer();
    await new Promise<void>((resolve) => other.listen({ path: join(dir, '.leasehold-claim.fedcba9876543210.sock') }, resolve));
    try {
      await assert.rejects(StatusDirClaim.take(dir), StatusDirInUseError);
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });
});
