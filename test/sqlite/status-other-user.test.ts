/**
 * `leasehold status` run by a user who may read the database but not write it or create files
 * beside it (the candidates run as another user). Needs root, to run the CLI as `nobody`.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, NODE_FLAGS, start, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus, startSidecar, type Candidate } from '../support/sidecars.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const root = process.getuid?.() === 0;

/**
 * A Node binary nobody may run: this one, or a copy in `dir` when it lives where nobody cannot
 * reach (CI's second Node sits in root's 0700 home).
 */
function nodeNobodyCanRun(dir: string): string {
  const probe = spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, '-e', '0']);
  if (probe.status === 0) return process.execPath;
  const copy = join(dir, 'node');
  copyFileSync(process.execPath, copy);
  chmodSync(copy, 0o755);
  return copy;
}

/** `leasehold status` as the user nobody, to completion. */
async function statusAsNobody(node: string, db: string, lease: string, owned: Proc[]) {
  const p = start('runuser', ['-u', 'nobody', '--', node, ...NODE_FLAGS, CLI, 'status', '--db', db, '--lease', lease]);
  owned.push(p);
  const timer = setTimeout(() => p.kill('SIGKILL'), 30_000);
  const r = await p.exited;
  clearTimeout(timer);
  return { ...r, stdout: p.stdout(), stderr: p.stderr() };
}

describe('status as a user who may only read the database', { skip: !root && 'needs root to run as nobody' }, () => {
  const owned: Array<Proc | Candidate> = [];
  const procs: Proc[] = [];
  const dir = scratchDir(() => [...owned, ...procs]);
  let node = process.execPath;
  before(() => {
    chmodSync(dir.path, 0o755);
    node = nodeNobodyCanRun(dir.path);
  });

  /** A folder only root may write, readable by everyone, with a candidate's database in it. */
  function folder(name: string): { work: string; db: string } {
    chmodSync(dir.path, 0o755);
    const work = join(dir.path, name);
    mkdirSync(work, { mode: 0o755 });
    return { work, db: join(work, 'leases.db') };
  }

  async function leading(work: string, db: string, lease: string): Promise<Candidate> {
    const c = startSidecar(work, 'a', ['--db', db, '--lease', lease], T);
    owned.push(c);
    await waitFor('a to lead', () => leadersByStatus([c]).length === 1, 15_000);
    return c;
  }

  it('reads a WAL database no candidate has open (no -wal, no -shm, none creatable)', { timeout: 60_000 }, async () => {
    const { work, db } = folder('stopped');
    const a = await leading(work, db, 'ro');
    a.proc.kill('SIGTERM');
    assert.equal((await a.proc.exited).code, 0, a.proc.stderr());
    const r = await statusAsNobody(node, db, 'ro', procs);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^state {4}released$/m);
    assert.match(r.stdout, /^token {4}1$/m);
    assert.equal(r.stderr, '');
  });

  it('reads it while a candidate has it open, and sees its latest commit', { timeout: 60_000 }, async () => {
    const { work, db } = folder('running');
    const a = await leading(work, db, 'ro');
    const r = await statusAsNobody(node, db, 'ro', procs);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^holder {3}a$/m);
    a.proc.kill('SIGTERM');
    assert.equal((await a.proc.exited).code, 0, a.proc.stderr());
  });

  it('a -wal left without its -shm, which this user cannot create: one line saying what it lacks, exit 2', { timeout: 60_000 }, async () => {
    const { work, db } = folder('killed');
    const a = await leading(work, db, 'ro');
    a.proc.kill('SIGKILL');
    await a.proc.exited;
    rmSync(`${db}-shm`);
    const r = await statusAsNobody(node, db, 'ro', procs);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /cannot read SQLite lease store .*leases\.db as this user: its -wal holds commits not yet in the file/);
  });
});
