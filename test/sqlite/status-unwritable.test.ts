/**
 * A holder must be able to work (issue 41, finding 4), on real processes and one SQLite file: a
 * sidecar whose status files cannot be written (a directory named status.json, its status
 * directory made read-only, its status volume full) neither takes nor keeps the lease, and a
 * shard member whose directory becomes read-only gives its shards up: another candidate leads
 * (another member owns the shards) within a lease duration and 1 s, and the one that cannot
 * write says /readyz 503 and why. Root only: root ignores permission bits, so the directory is
 * made read-only by a read-only bind mount and full by a small tmpfs, each unmounted after.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { readLeadership } from '../../src/status/status-reader.js';
import { readOwnedShards } from '../../src/status/shards-status.js';
import { startCli, tempDir, waitFor, type Proc } from '../support/cli.js';

const LEASE_MS = 2_000;
// A short retry period: the failure is seen at the next renewal and the expiry at the other's next turn, each one retry period at most.
const FAST = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];
const SKIP =
  process.getuid?.() === 0
    ? false
    : 'needs root: the status directory is made read-only by a bind mount and full by a tmpfs (chmod would not stop the root sidecars of CI)';

interface Sidecar {
  id: string;
  proc: Proc;
  statusDir: string;
  url: string;
}

describe('a sidecar whose status files cannot be written', { skip: SKIP }, () => {
  const dir = tempDir('leasehold-unwritable-');
  const procs: Proc[] = [];
  const mounts: string[] = [];
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    // Every mount goes, the last first, even when a test failed half-way.
    for (const m of mounts.reverse()) {
      try {
        execFileSync('umount', ['-l', m], { stdio: 'ignore' });
      } catch {
        // not mounted (any more)
      }
    }
    dir.cleanup();
  });
  const db = join(dir.path, 'leases.db');
  const mount = (args: string[], at: string) => {
    execFileSync('mount', [...args, at], { stdio: 'pipe' });
    if (!mounts.includes(at)) mounts.push(at);
  };
  /** A bind mount of `d` on itself: remounted read-only and back with readOnly(). */
  const bindable = (d: string) => mount(['--bind', d], d);
  /**
   * Remounts the bind mount of `d` read-only or back. The kernel refuses "ro" (EBUSY) while a
   * file there is open for writing (a status write in flight): tried again until it takes.
   */
  const readOnly = async (d: string, ro: boolean) => {
    for (let tries = 1; ; tries++) {
      try {
        execFileSync('mount', ['-o', `remount,${ro ? 'ro' : 'rw'},bind`, d], { stdio: 'pipe' });
        return;
      } catch (err) {
        if (tries >= 100 || !String((err as { stderr?: Buffer }).stderr ?? '').includes('busy')) throw err;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  };

  async function sidecar(id: string, statusDir: string, extra: string[] = []): Promise<Sidecar> {
    const proc = startCli(['sidecar', '--db', db, '--identity', id, '--status-dir', statusDir, '--listen', '127.0.0.1:0', ...FAST, ...extra]);
    procs.push(proc);
    const address = await waitFor(
      `${id}'s listen address`,
      () => /"listen":"([\d.:]+)"/.exec(proc.stderr())?.[1] ?? (proc.child.exitCode !== null && 'exited'),
      20_000,
    );
    assert.notEqual(address, 'exited', proc.stderr());
    return { id, proc, statusDir, url: `http://${address}` };
  }
  const readyz = async (s: Sidecar) => {
    const res = await fetch(`${s.url}/readyz`);
    return { code: res.status, body: await res.text() };
  };
  /** The one error line saying the directory cannot be written, with its errno. */
  const failureLine = (s: Sidecar, code: string) =>
    s.proc
      .stderr()
      .split('\n')
      .find((l) => l.includes('cannot write status files') && l.includes(`"code":"${code}"`));
  const leads = (s: Sidecar) => readLeadership(s.statusDir).isLeader;

  /**
   * a leads; `breakIt` makes a's status files unwritable; b must lead (by its file, as its app
   * reads it) within a lease duration and 1 s, when a's file, read the same way, no longer says
   * leader; a is not ready and says why.
   */
  async function handedOver(a: Sidecar, b: Sidecar, code: string, breakIt: () => void | Promise<void>) {
    await waitFor('a leads', () => leads(a), 20_000);
    assert.equal((await readyz(a)).code, 200);
    await waitFor('b campaigns', () => b.proc.stderr().includes('campaigning'), 20_000);
    const broken = Date.now();
    await breakIt();
    await waitFor('b leads', () => leads(b), 4 * LEASE_MS, 10);
    const ms = Date.now() - broken;
    assert.ok(ms <= LEASE_MS + 1_000, `b led ${ms} ms after a's status files broke (lease ${LEASE_MS} ms)`);
    assert.equal(leads(a), false, "a's own file, read as its app reads it, no longer says leader");
    const ready = await readyz(a);
    assert.equal(ready.code, 503);
    assert.match(ready.body, /cannot be written/);
    assert.ok(failureLine(a, code), `a says why, with ${code}:\n${a.proc.stderr()}`);
    assert.ok(failureLine(a, code)!.includes(a.statusDir));
    return ms;
  }

  it('a directory named status.json: it never takes the lease, and another leads at once', { timeout: 60_000 }, async (t) => {
    const lease = ['--lease', 'named-dir'];
    const aDir = join(dir.path, 'named-a');
    // A released record, as after a handover: the first take is not held up by the wait a
    // candidate makes before creating a record it finds absent.
    const seed = new SqliteLeaseStore(db);
    const long = new Date(Date.now() - 60_000);
    await seed.create('named-dir', { holderIdentity: '', leaseDurationSeconds: 2, acquireTime: long, renewTime: long, leaseTransitions: 0 });
    await seed.close();
    mkdirSync(join(aDir, 'status.json', 'blocker'), { recursive: true });
    const a = await sidecar('a', aDir, lease);
    await waitFor('a campaigns', () => a.proc.stderr().includes('campaigning'), 20_000);
    const b = await sidecar('b', join(dir.path, 'named-b'), lease);
    const started = Date.now();
    await waitFor('b leads', () => leads(b), 4 * LEASE_MS, 10);
    const ms = Date.now() - started;
    t.diagnostic(`b led ${ms} ms after it started`);
    assert.ok(ms <= LEASE_MS + 1_000, `b led ${ms} ms after it started`);
    assert.ok(failureLine(a, 'EISDIR'), a.proc.stderr());
    assert.equal(readFileSync(join(aDir, 'is-leader'), 'utf8'), 'false\n');
    const ready = await readyz(a);
    assert.equal(ready.code, 503);
    assert.match(ready.body, /status\.json/);
    const leader = (await (await fetch(`${a.url}/leader`)).json()) as { isLeader: boolean };
    assert.equal(leader.isLeader, false);
    assert.ok(failureLine(a, 'EISDIR')!.includes(aDir));
  });

  it('its status directory made read-only while it leads: it steps down, another leads; it takes part again once writable', { timeout: 60_000 }, async (t) => {
    const lease = ['--lease', 'read-only'];
    const aDir = join(dir.path, 'ro-a');
    mkdirSync(aDir);
    bindable(aDir);
    const a = await sidecar('a', aDir, lease);
    await waitFor('a leads', () => leads(a), 20_000);
    const b = await sidecar('b', join(dir.path, 'ro-b'), lease);
    t.diagnostic(`b led ${await handedOver(a, b, 'EROFS', () => readOnly(aDir, true))} ms after a's directory became read-only`);
    await readOnly(aDir, false);
    // The file says so once a campaigns again (it is a standby: b leads).
    const status = () => JSON.parse(readFileSync(join(aDir, 'status.json'), 'utf8')) as { isLeader: boolean; standingAside: unknown; holder: string };
    await waitFor('a writes again', () => a.proc.stderr().includes('the status directory takes writes again'), 10_000);
    // Until then the file is the one written before the directory became read-only (a leading).
    await waitFor('a campaigns again', () => status().holder === 'b' && status().standingAside === null, 10_000);
    assert.equal(status().isLeader, false);
  });

  it('its status volume full while it leads: it steps down, another leads', { timeout: 60_000 }, async (t) => {
    const lease = ['--lease', 'full'];
    const aDir = join(dir.path, 'full-a');
    mkdirSync(aDir);
    mount(['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs'], aDir);
    const a = await sidecar('a', aDir, lease);
    await waitFor('a leads', () => leads(a), 20_000);
    const b = await sidecar('b', join(dir.path, 'full-b'), lease);
    const ms = await handedOver(a, b, 'ENOSPC', () => {
      // Every page of the tmpfs taken: each new file's first byte has nowhere to go.
      try {
        writeFileSync(join(aDir, 'filler'), Buffer.alloc(128 * 1024));
      } catch (err) {
        assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
      }
    });
    t.diagnostic(`b led ${ms} ms after a's volume filled up`);
    rmSync(join(aDir, 'filler'));
    await waitFor('a writes again', () => a.proc.stderr().includes('the status directory takes writes again'), 10_000);
  });

  it(
    'a shard member whose status directory becomes read-only: the other member owns every shard; it takes its share again once writable',
    { timeout: 90_000 },
    async (t) => {
      const shards = ['--lease', 'workers', '--shards', '4'];
      const aDir = join(dir.path, 'shard-a');
      mkdirSync(aDir);
      bindable(aDir);
      const a = await sidecar('a', aDir, shards);
      const b = await sidecar('b', join(dir.path, 'shard-b'), shards);
      const owned = (s: Sidecar) => readOwnedShards(s.statusDir).owned.length;
      await waitFor('2 shards each', () => owned(a) === 2 && owned(b) === 2, 30_000);
      assert.equal((await readyz(a)).code, 200);
      const broken = Date.now();
      await readOnly(aDir, true);
      await waitFor('b owns every shard', () => owned(b) === 4, 6 * LEASE_MS, 10);
      const ms = Date.now() - broken;
      t.diagnostic(`b owned every shard ${ms} ms after a's directory became read-only`);
      // a keeps its shards until they could have expired (its app cannot be told through the
      // file), so this is about a lease: 1.8 to 2.3 s in CI runs, 3.1 s once in the Node 24 step
      // beside the cluster tier. What it tells apart is a member that keeps renewing with no
      // file its app can read (never), or one that waits out more than one more lease.
      assert.ok(ms <= 2 * LEASE_MS, `b owned every shard ${ms} ms after a's directory became read-only (lease ${LEASE_MS} ms)`);
      assert.equal(owned(a), 0, "a's own file, read as its app reads it, lists no shard");
      const ready = await readyz(a);
      assert.equal(ready.code, 503);
      assert.match(ready.body, /cannot be written/);
      assert.ok(failureLine(a, 'EROFS'), a.proc.stderr());
      const listed = (await (await fetch(`${a.url}/shards`)).json()) as { owned: unknown[] };
      assert.deepEqual(listed.owned, [], 'GET /shards says no more than the file');
      await readOnly(aDir, false);
      await waitFor('2 shards each again', () => owned(a) === 2 && owned(b) === 2, 30_000);
      assert.equal((await readyz(a)).code, 200);
    },
  );
});
