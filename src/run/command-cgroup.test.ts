import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandCgroupName, removeStaleCgroups } from './command-cgroup.js';

/** PIDs no process can have (past the kernel's largest pid_max, 2^22). */
const GONE_A = 4_194_400;
const GONE_B = 4_194_401;

describe('removeStaleCgroups', () => {
  it('removes the empty cgroups of gone runners; given runners, only theirs', () => {
    // A plain folder stands for the cgroup parent: its empty subfolders are removed as cgroups are.
    const parent = mkdtempSync(join(tmpdir(), 'leasehold-cgroups-'));
    try {
      const a = join(parent, commandCgroupName(GONE_A, 1));
      const b = join(parent, commandCgroupName(GONE_B, 1));
      const mine = join(parent, commandCgroupName(process.pid, 1));
      for (const d of [a, b, mine]) mkdirSync(d);
      assert.equal(removeStaleCgroups(parent, new Set([GONE_A])), 0);
      assert.equal(existsSync(a), false, "the given runner's cgroup is removed");
      assert.equal(existsSync(b), true, "another runner's is left to its own teardown");
      assert.equal(removeStaleCgroups(parent), 0);
      assert.equal(existsSync(b), false, 'without runners, every gone runner counts');
      assert.equal(existsSync(mine), true, "this process's own cgroups are never stale");
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
