import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DrainKey, drainKeyOwnership } from './drain-key.js';
import { AppDrain } from './app-drain.js';
import { FakeClock } from '../testing/fake-clock.js';

describe('DrainKey: only whoever reads the status directory can end a drain', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-drain-key-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a random key, mode 0640 in a directory of its own, replacing a planted link without writing through it', () => {
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'untouched\n');
    symlinkSync(victim, join(dir, 'drain-key'));
    const k = new DrainKey(dir);
    k.publish();
    const file = join(dir, 'drain-key');
    assert.equal(lstatSync(file).isSymbolicLink(), false, 'the link itself is replaced');
    assert.equal(readFileSync(victim, 'utf8'), 'untouched\n');
    assert.equal(statSync(file).mode & 0o777, 0o640);
    const key = readFileSync(file, 'utf8');
    assert.match(key, /^[0-9a-f]{64}\n$/);
    new DrainKey(dir).publish();
    assert.notEqual(readFileSync(file, 'utf8'), key, 'each sidecar process writes its own');
  });

  it('a report ends the drain only with the key: 401 without one, 403 with another; nothing about the terms before', async () => {
    const k = new DrainKey(dir);
    k.publish();
    const key = readFileSync(join(dir, 'drain-key'), 'utf8').trim();
    const clock = new FakeClock();
    const d = new AppDrain(clock, k);
    d.started(3);
    d.stopped();
    let done: boolean | null = null;
    void d.wait(1_000).then((v) => (done = v));
    const none = d.report('3');
    assert.equal(none.code, 401);
    assert.equal(none.challenge, 'Bearer realm="leasehold drain"');
    assert.equal(d.report('3', `Bearer ${'a'.repeat(64)}`).code, 403);
    assert.equal(d.report('3', `Bearer ${key}x`).code, 403, 'a longer value is another key');
    assert.equal(d.report('3', `Basic ${key}`).code, 401);
    assert.equal(d.report('3', 'Bearer 3').code, 403, 'the token, which /leader gives anyone, is not the key');
    assert.equal(d.report(['1', '2']).code, 401, 'a second token is said only to the app');
    for (const a of [none, d.report('3', 'Bearer x')]) assert.ok(!a.body.includes(key));
    await clock.advance(0);
    assert.equal(done, null, 'no refused report ended the drain');
    assert.equal(d.report(['1', '2'], `Bearer ${key}`).code, 400);
    assert.equal(d.report('3', `bearer  ${key} `).code, 200, 'the scheme in any case, spaces around the key');
    await clock.advance(0);
    assert.equal(done, true);
  });

  it('without a status directory there is no key, and nothing can end a drain', () => {
    const d = new AppDrain(new FakeClock(), new DrainKey(undefined));
    d.started(1);
    d.stopped();
    const a = d.report('1', 'Bearer anything');
    assert.equal(a.code, 403);
    assert.match(a.body, /no --status-dir/);
    assert.equal(d.pending, 1);
  });
});

/** Another user: nobody, whose group is nogroup (65534 both, on Debian as in most images). */
const NOBODY = 65534;
/** A third user with no name: the owner of a directory that is neither ours nor nobody's. */
const STRANGER = 12345;

/** Whether `uid` (in its own group only) can read `file`: a real process, as that user. */
function canRead(file: string, uid: number): boolean {
  const r = spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'cat', file], { encoding: 'utf8' });
  if (r.error) throw r.error;
  return r.status === 0;
}

const asRoot = process.geteuid?.() === 0;

describe(
  'DrainKey: another user never reads the key, whatever the directory was made as',
  { skip: !asRoot && 'needs root: it makes directories owned by other users' },
  () => {
    const root = mkdtempSync(join(tmpdir(), 'leasehold-drain-key-owner-'));
    // Every user may pass through to the directories below: what they may read is the key's own say.
    chmodSync(root, 0o755);
    after(() => rmSync(root, { recursive: true, force: true }));

    it('a setgid directory another user made for their group: the key is 0600, this process’s own group', () => {
      const dir = join(root, 'setgid');
      mkdirSync(dir);
      chownSync(dir, NOBODY, NOBODY);
      chmodSync(dir, 0o2777);
      new DrainKey(dir).publish();
      const file = join(dir, 'drain-key');
      const st = statSync(file);
      assert.equal(st.mode & 0o777, 0o600);
      assert.equal(st.uid, process.geteuid!());
      assert.equal(st.gid, process.getegid!(), 'not the directory’s group');
      assert.equal(canRead(file, NOBODY), false, 'the directory’s user and group cannot read it');
    });

    it('a directory another user made with a default ACL naming a third user: that user cannot read it', () => {
      const dir = join(root, 'acl');
      mkdirSync(dir);
      chownSync(dir, STRANGER, STRANGER);
      chmodSync(dir, 0o777);
      const acl = spawnSync('setfacl', ['-d', '-m', `u:${NOBODY}:r`, dir], { encoding: 'utf8' });
      assert.equal(acl.status, 0, `setfacl (Debian package acl): ${acl.stderr ?? String(acl.error)}`);
      new DrainKey(dir).publish();
      const file = join(dir, 'drain-key');
      assert.equal(canRead(file, NOBODY), false, 'the ACL’s user cannot read it');
      assert.equal(canRead(file, STRANGER), false, 'nor the directory’s owner');
    });

    it('a directory of this user’s own keeps the key readable by its group (0640), as the app in that group reads it', () => {
      const dir = join(root, 'own');
      mkdirSync(dir);
      new DrainKey(dir).publish();
      const st = statSync(join(dir, 'drain-key'));
      assert.equal(st.mode & 0o777, 0o640);
      assert.equal(st.gid, process.getegid!());
    });
  },
);

describe('drainKeyOwnership: the key’s group and mode from the status directory’s owner', () => {
  const me = { uid: 1000, gid: 1000, groups: [1000, 2000] };
  it('a pod’s emptyDir with an fsGroup (root, setgid, a group this process is in): 0640, that group', () => {
    assert.deepEqual(drainKeyOwnership({ uid: 0, gid: 2000, mode: 0o42777 }, me), { mode: 0o640, gid: 2000 });
  });
  it('setgid with a group this process is not in: 0640, its own group', () => {
    assert.deepEqual(drainKeyOwnership({ uid: 1000, gid: 3000, mode: 0o42775 }, me), { mode: 0o640, gid: 1000 });
  });
  it('not setgid: its own group even when the directory’s is one of its groups', () => {
    assert.deepEqual(drainKeyOwnership({ uid: 0, gid: 2000, mode: 0o40777 }, me), { mode: 0o640, gid: 1000 });
  });
  it('owned by another user, even setgid in a group this process is in: 0600, its own group', () => {
    assert.deepEqual(drainKeyOwnership({ uid: 1001, gid: 2000, mode: 0o42777 }, me), { mode: 0o600, gid: 1000 });
  });
});
