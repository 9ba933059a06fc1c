import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatusDirClaim, checkStatusDirFree } from './status-dir-claim.js';
import { StatusDirError, StatusDirInUseError } from '../errors.js';

describe('StatusDirClaim: one sidecar per status directory', { skip: process.platform !== 'linux' && 'abstract sockets are Linux’s' }, () => {
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
      assert.throws(() => checkStatusDirFree(link), /^Error|is written by another running sidecar: give each sidecar a status directory of its own$/);
    } finally {
      await first.release();
    }
    checkStatusDirFree(dir);
    const again = await StatusDirClaim.take(dir);
    await again.release();
  });

  it('two claims at once: exactly one wins', async () => {
    const dir = join(root, 'b');
    mkdirSync(dir);
    const results = await Promise.allSettled([StatusDirClaim.take(dir), StatusDirClaim.take(dir)]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) if (r.status === 'fulfilled') await r.value.release();
  });

  it('another directory is another claim', async () => {
    mkdirSync(join(root, 'c'));
    mkdirSync(join(root, 'd'));
    const c = await StatusDirClaim.take(join(root, 'c'));
    const d = await StatusDirClaim.take(join(root, 'd'));
    await c.release();
    await d.release();
  });
});
