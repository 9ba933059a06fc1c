/**
 * A database file replaced under running candidates by a real bind mount, and a -wal deleted
 * alone: no write may land in a file a candidate did not open for the lease, nothing may be
 * lost, and a newcomer is told what happened in one line. Needs root for `mount --bind`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const root = process.getuid?.() === 0;

async function recordOf(db: string, lease: string) {
  const store = new SqliteLeaseStore(db, { readonly: true });
  try {
    return (await store.get(lease))?.record;
  } finally {
    await store.close();
  }
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const mountedAt = (path: string) =>
  readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[4] === path);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Bind-mounts `file` over `target` for `body`, and always unmounts it afterwards, even when
 * `body` fails: when the mount is busy (a process still holds it open) `stop` ends those
 * processes first, and a lazy unmount detaches it whatever holds it.
 */
async function withBindMount(file: string, target: string, stop: () => Promise<void>, body: (unmount: () => void) => Promise<void>) {
  execFileSync('mount', ['--bind', file, target]);
  let mounted = true;
  try {
    await body(() => {
      execFileSync('umount', [target]);
      mounted = false;
    });
  } finally {
    if (mounted) {
      try {
        execFileSync('umount', [target]);
      } catch {
        await stop();
        execFileSync('umount', ['-l', target]);
      }
    }
    assert.ok(!mountedAt(target), `${target} is still mounted`);
  }
}

/** A lease database elsewhere, closed cleanly (no -wal left), and its digest. */
async function otherDatabase(path: string) {
  const seed = new SqliteLeaseStore(path);
  await seed.create('other', { holderIdentity: 'x', leaseDurationSeconds: 15, acquireTime: null, renewTime: new Date(), leaseTransitions: 7 });
  await seed.close();
  return sha256(path);
}

const killAll = async (cs: Candidate[]) => {
  for (const c of cs) c.proc.kill('SIGKILL');
  await Promise.all(cs.map((c) => c.proc.exited));
};

/** A fresh folder `work` with two sidecars on its l.db, once one of them leads. */
async function twoCandidates(work: string, lease: string, cands: Candidate[]) {
  mkdirSync(work);
  const db = join(work, 'l.db');
  const a = startSidecar(work, 'a', ['--db', db, '--lease', lease], T);
  const b = startSidecar(work, 'b', ['--db', db, '--lease', lease], T);
  cands.push(a, b);
  const first = await waitFor('a leader', () => validLeaders([a, b])[0], 20_000);
  return { work, db, a, b, first };
}

/** The same in `parent/name`, and a lease database in another folder to mount over theirs. */
async function twoCandidatesAndAnotherDatabase(parent: string, name: string, lease: string, cands: Candidate[]) {
  const elsewhere = join(parent, `${name}-elsewhere`);
  mkdirSync(elsewhere);
  const other = join(elsewhere, 'l.db');
  const otherHash = await otherDatabase(other);
  return { ...(await twoCandidates(join(parent, name), lease, cands)), other, otherHash };
}

/**
 * Mounts `other` over the candidates' database and, once neither leads, runs `during`, which
 * unmounts (withBindMount undoes the mount if it does not, killing the candidates if need be).
 */
async function whenMountedLeaderless(s: { db: string; other: string; a: Candidate; b: Candidate }, during: (unmount: () => void) => Promise<void>) {
  await withBindMount(
    s.other,
    s.db,
    () => killAll([s.a, s.b]),
    async (unmount) => {
      await waitFor('no valid leader', () => validLeaders([s.a, s.b]).length === 0, 5_000);
      await during(unmount);
    },
  );
}

describe('a database replaced under running candidates', () => {
  const procs: Proc[] = [];
  const cands: Candidate[] = [];
  const dir = scratchDir(() => [...procs, ...cands]);

  it(
    'a file bind-mounted over the database: nobody writes to it, the leader steps down, and the history is whole after the unmount',
    { timeout: 90_000, skip: !root && 'needs root for mount --bind' },
    async () => {
      const { db, other, otherHash, a, b, first } = await twoCandidatesAndAnotherDatabase(dir.path, 'mounted', 'm', cands);

      // The leader steps down at its renewDeadline; nobody leads while the mount stays.
      await whenMountedLeaderless({ db, other, a, b }, async (unmount) => {
        for (const c of [a, b]) await waitFor(`${c.id} refuses the mounted file`, () => /refusing to read or write it/.test(c.proc.stderr()), 5_000);
        const until = Date.now() + 3_000; // past the lease duration, when a standby could take over
        while (Date.now() < until) {
          assert.deepEqual(
            validLeaders([a, b]).map((l) => `${l.c.id}/${l.token}`),
            [],
            'a leader on a file mounted over the database',
          );
          await sleep(50);
        }
        // A newcomer is refused in one line, without opening the file.
        const newcomer = await runCli(['status', '--db', db, '--lease', 'm']);
        assert.equal(newcomer.code, 2, newcomer.stderr);
        assert.match(newcomer.stderr, /^leasehold: --db: the database file .*l\.db: .*l\.db is a mount point \(a file mounted over it\).*Mount the directory/);
        assert.equal(newcomer.stderr.trim().split('\n').length, 1);
        assert.equal(sha256(other), otherHash, 'the mounted file was written to');
        assert.ok(!existsSync(`${other}-wal`), 'a log beside the mounted file');
        unmount();
      });
      // The path names the opened file again: the candidates carry on with the history.
      const next = await waitFor('a leader after the unmount', () => validLeaders([a, b]).find((l) => l.token > first.token), 20_000);
      for (const c of [a, b]) c.proc.kill('SIGTERM');
      for (const c of [a, b]) assert.equal((await c.proc.exited).code, 0, c.proc.stderr());
      const rec = await recordOf(db, 'm');
      assert.equal(rec?.leaseTransitions, next.token, 'the history is in the file the candidates opened');
      assert.equal(rec?.holderIdentity, '', 'released at shutdown');
      assert.equal(sha256(other), otherHash, 'the mounted file was written to');
      assert.equal((await recordOf(other, 'other'))?.leaseTransitions, 7);
    },
  );

  it(
    'candidates stopped while a file is mounted over the database leave their history in place',
    { timeout: 90_000, skip: !root && 'needs root for mount --bind' },
    async () => {
      const { db, other, otherHash, a, b, first } = await twoCandidatesAndAnotherDatabase(dir.path, 'stopped', 's', cands);
      await whenMountedLeaderless({ db, other, a, b }, async (unmount) => {
        for (const c of [a, b]) c.proc.kill('SIGTERM'); // the release is refused: the lease expires instead
        for (const c of [a, b]) assert.equal((await c.proc.exited).code, 0, c.proc.stderr());
        assert.equal(sha256(other), otherHash, 'the mounted file was written to');
        unmount();
      });
      const rec = await recordOf(db, 's');
      assert.equal(rec?.leaseTransitions, first.token, 'the history is in the file the candidates opened');
      assert.equal(rec?.holderIdentity, first.c.id, 'the last term, left to expire');
      assert.equal(sha256(other), otherHash, 'the mounted file was written to');
    },
  );

  it('a -wal deleted alone: the running candidates keep the history, a newcomer is told why in one line', { timeout: 60_000 }, async () => {
    const { work, db, a, b, first } = await twoCandidates(join(dir.path, 'wal'), 'w', cands);
    rmSync(`${db}-wal`);
    const c = startCli(['sidecar', '--db', db, '--lease', 'w', '--listen', 'off', '--status-dir', join(work, 'status-c')]);
    procs.push(c);
    const exit = await c.exited;
    assert.equal(exit.code, 2, c.stderr());
    assert.match(
      c.stderr(),
      /^leasehold: cannot (open|prepare) SQLite lease store .*: its -wal was deleted while other processes still had it open.*Stop every process using/,
    );
    assert.equal(c.stderr().trim().split('\n').length, 1, c.stderr());
    assert.deepEqual(
      validLeaders([a, b]).map((l) => l.token),
      [first.token],
      'the leader carries on',
    );
    for (const x of [a, b]) x.proc.kill('SIGTERM');
    for (const x of [a, b]) assert.equal((await x.proc.exited).code, 0, x.proc.stderr());
    const rec = await recordOf(db, 'w');
    assert.equal(rec?.leaseTransitions, first.token, 'the last to exit wrote the deleted log back');
    assert.equal(rec?.holderIdentity, '', 'released at shutdown');
  });
});
