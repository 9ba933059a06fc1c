import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatusPublisher, checkStatusDir } from './status-publisher.js';
import { toLeaderStatus } from '../status/to-leader-status.js';
import { Readiness, liveness, withStoreProblem } from './kubelet-probes.js';
import type { CandidateSnapshot } from '../election/candidate-loop.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-status-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const t = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const snap = (over: Partial<CandidateSnapshot> = {}): CandidateSnapshot => ({
  lease: 'l',
  identity: 'me',
  isLeader: true,
  holder: 'me',
  fencingToken: 3,
  observedToken: 3,
  acquiredAt: new Date('2026-12-02T09:00:00Z'),
  renewedAt: new Date('2026-12-02T09:00:10Z'),
  validUntil: new Date('2026-12-02T09:00:20Z'),
  highestToken: 7,
  lastRenewMonotonic: 1_000,
  loopDueMonotonic: 3_000,
  standingAside: null,
  running: true,
  ...over,
});

describe('StatusPublisher', () => {
  it('writes the four files; a follower has no token to write with', () => {
    const p = new StatusPublisher(join(dir, 'pub'));
    p.prepare();
    assert.equal(p.publish(toLeaderStatus(snap(), new Date('2026-12-02T09:00:11Z'))), true);
    const d = p.dir;
    assert.equal(readFileSync(join(d, 'is-leader'), 'utf8'), 'true\n');
    assert.equal(readFileSync(join(d, 'fencing-token'), 'utf8'), '3\n');
    assert.equal(readFileSync(join(d, 'holder'), 'utf8'), 'me\n');
    assert.deepEqual(JSON.parse(readFileSync(join(d, 'status.json'), 'utf8')), {
      lease: 'l',
      identity: 'me',
      holder: 'me',
      isLeader: true,
      fencingToken: 3,
      acquiredAt: '2026-12-02T09:00:00.000Z',
      renewedAt: '2026-12-02T09:00:10.000Z',
      validUntil: '2026-12-02T09:00:20.000Z',
      standingAside: null,
      stoppedAt: null,
      updatedAt: '2026-12-02T09:00:11.000Z',
    });
    assert.equal(p.publish(toLeaderStatus(snap(), new Date('2026-12-02T09:00:12Z'))), false, 'nothing but updatedAt changed: no write');
    p.publish(toLeaderStatus(snap({ isLeader: false, holder: 'other', fencingToken: null, validUntil: null }), new Date()));
    assert.equal(readFileSync(join(d, 'is-leader'), 'utf8'), 'false\n');
    assert.equal(readFileSync(join(d, 'fencing-token'), 'utf8'), '');
    assert.deepEqual(readdirSync(d).sort(), ['fencing-token', 'holder', 'is-leader', 'status.json'], 'no temp files left behind');
  });

  it('a publish that failed part-way is not remembered: the same state as before it is written again', () => {
    const p = new StatusPublisher(join(dir, 'torn'));
    p.prepare();
    const d = p.dir;
    // The sidecar's sequence: its own record seen (onNewLeader, not yet leading), then the
    // term's publish, then a step-down before any renewal: the step-down's state is the first one.
    const standby = toLeaderStatus(snap({ isLeader: false, fencingToken: null, validUntil: null }), new Date());
    assert.equal(p.publish(standby), true);
    // is-leader cannot be replaced (a directory with an entry in its place): the leader's
    // publish fails after status.json already says leader.
    rmSync(join(d, 'is-leader'));
    mkdirSync(join(d, 'is-leader', 'blocker'), { recursive: true });
    assert.throws(() => p.publish(toLeaderStatus(snap(), new Date())));
    assert.equal(
      (JSON.parse(readFileSync(join(d, 'status.json'), 'utf8')) as { isLeader: boolean }).isLeader,
      true,
      'the torn publish got as far as status.json',
    );
    rmSync(join(d, 'is-leader'), { recursive: true });
    // The step-down's state equals the one written before the torn publish: it must reach the
    // disk all the same (a skipped write left status.json saying leader while the lease was released).
    assert.equal(p.publish(standby), true);
    assert.equal((JSON.parse(readFileSync(join(d, 'status.json'), 'utf8')) as { isLeader: boolean }).isLeader, false);
    assert.equal(readFileSync(join(d, 'is-leader'), 'utf8'), 'false\n');
  });

  it("a new publisher does not take the files for its own: a previous process's leader is ended first", () => {
    // A sidecar killed while leading (the app and its volume stay) left these; its restart
    // starts as a standby, whose first publish must not leave is-leader "true" behind.
    const d = join(dir, 'restarted');
    mkdirSync(d);
    const before = toLeaderStatus(snap({ fencingToken: 7 }), new Date());
    writeFileSync(join(d, 'status.json'), JSON.stringify(before));
    writeFileSync(join(d, 'fencing-token'), '7\n');
    writeFileSync(join(d, 'holder'), 'me\n');
    writeFileSync(join(d, 'is-leader'), 'true\n');
    const p = new StatusPublisher(d);
    p.prepare();
    // fencing-token cannot be replaced (a directory with an entry in its place): every write from
    // it on fails. "not leader" must be on disk all the same, as for any step-down.
    rmSync(join(d, 'fencing-token'));
    mkdirSync(join(d, 'fencing-token', 'blocker'), { recursive: true });
    const standby = toLeaderStatus(snap({ isLeader: false, holder: null, fencingToken: null, validUntil: null }), new Date());
    assert.throws(() => p.publish(standby));
    assert.equal(readFileSync(join(d, 'is-leader'), 'utf8'), 'false\n', 'is-leader still said the previous process led');
    assert.equal((JSON.parse(readFileSync(join(d, 'status.json'), 'utf8')) as { isLeader: boolean }).isLeader, false);
  });

  it('checkStatusDir accepts a creatable path and refuses files in the way, writing nothing', () => {
    checkStatusDir(join(dir, 'new', 'deeper'));
    assert.equal(readdirSync(dir).includes('new'), false);
    writeFileSync(join(dir, 'f'), '');
    assert.throws(() => checkStatusDir(join(dir, 'f')), /is not a directory/);
    assert.throws(() => checkStatusDir(join(dir, 'f', 'x')), /cannot be created: .* is not a directory/);
  });

  it('checkStatusDir proves an existing directory writable by a file, leaving it as it was', () => {
    const d = mkdtempSync(join(tmpdir(), 'leasehold-probe-'));
    try {
      writeFileSync(join(d, 'app-file'), 'kept\n');
      checkStatusDir(d);
      assert.deepEqual(readdirSync(d), ['app-file'], 'no probe file left behind');
      assert.equal(readFileSync(join(d, 'app-file'), 'utf8'), 'kept\n');
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
    // access() tells root it may write here; only creating a file shows it cannot.
    assert.throws(() => checkStatusDir('/proc/self/fd'), /the status directory \/proc\/self\/fd is not writable/);
  });
});

// A library caller never typed --status-dir: the message says "the status directory", and
// `field` lets the CLI put the flag in front.
it('tells a library caller about the status directory in words, with no CLI flag in the message', () => {
  writeFileSync(join(dir, 'a-file'), '');
  const refusals: [() => void, RegExp][] = [
    [() => checkStatusDir(join(dir, 'a-file')), /^the status directory .*a-file is not a directory$/],
    [() => checkStatusDir(join(dir, 'a-file', 'status')), /^the status directory .*a-file\/status cannot be created: .*a-file is not a directory$/],
    [() => checkStatusDir('/proc/x'), /^the status directory \/proc\/x cannot be created: \/proc is a proc filesystem/],
    [() => new StatusPublisher(join(dir, 'a-file', 'status')).prepare(), /^the status directory .*a-file\/status is not writable: /],
  ];
  for (const [refuse, pattern] of refusals) {
    assert.throws(refuse, (err: Error & { code?: string; field?: string }) => {
      assert.equal(err.code, 'LEASEHOLD_ERR_STATUS_DIR');
      assert.match(err.message, pattern);
      assert.doesNotMatch(err.message, /--[a-z]/);
      assert.equal(err.field, 'statusDir');
      return true;
    });
  }
});

describe('health', () => {
  const cases: [string, Partial<CandidateSnapshot>, number, boolean, RegExp][] = [
    ['healthy leader', {}, 3_000, true, /ok/],
    ['loop stopped', { running: false }, 3_000, false, /not running/],
    ['leader not renewed for a whole lease (stuck)', {}, 1_000 + 15_001, false, /has not renewed/],
    ['loop more than 5 s behind its schedule', { isLeader: false, lastRenewMonotonic: null }, 3_000 + 5_001, false, /behind its schedule/],
    ['loop within its slack', { isLeader: false, lastRenewMonotonic: null }, 3_000 + 5_000, true, /ok/],
    ['standby waiting a minute on its watch', { isLeader: false, lastRenewMonotonic: null, loopDueMonotonic: 61_000 }, 55_000, true, /ok/],
  ];
  for (const [name, over, now, ok, reason] of cases) {
    it(`liveness: ${name}`, () => {
      const v = liveness(snap(over), t, now);
      assert.equal(v.ok, ok);
      assert.match(v.reason, reason);
    });
  }

  it('readiness "leader" follows leadership; "elected-any" latches once a leader is seen', () => {
    const strict = new Readiness('leader');
    assert.equal(strict.check(snap()).ok, true);
    assert.equal(strict.check(snap({ isLeader: false, holder: 'other' })).ok, false);
    const any = new Readiness('elected-any');
    assert.equal(any.check(snap({ isLeader: false, holder: null })).ok, false, 'no leader known yet');
    assert.equal(any.check(snap({ isLeader: false, holder: 'other' })).ok, true);
    assert.equal(any.check(snap({ isLeader: false, holder: '' })).ok, true, 'stays ready during a handoff');
  });

  it("readiness names the holder escaped: the store's value cannot drive a terminal", () => {
    const v = new Readiness('leader').check(snap({ isLeader: false, holder: 'x\u001b[2J\u009b1m\n\u202e' }));
    assert.equal(v.reason, 'not leader (holder: x\\u001b[2J\\u009b1m\\u000a\\u202e)');
  });
});

it('a store problem that will not fix itself (a dropped table) fails liveness and readiness with its reason', () => {
  const ok = { ok: true, reason: 'leader' };
  assert.deepEqual(withStoreProblem({}, ok), ok, 'a store without problem() changes nothing');
  assert.deepEqual(withStoreProblem({ problem: () => null }, ok), ok);
  assert.deepEqual(withStoreProblem({ problem: () => 'the lease table public.leases does not exist (it was dropped)' }, ok), {
    ok: false,
    reason: 'store: the lease table public.leases does not exist (it was dropped)',
  });
});
