import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryGroupStore } from '../src/testing/memory-group-store.js';
import type { GroupStore } from '../src/backends/group-store.js';
import { ForbiddenError } from '../src/errors.js';
import { readGroupReport } from './group-report.js';
import { formatGroupReport, readShardsCandidate } from './group-format.js';

const now = new Date('2026-12-02T09:00:00.000Z');
const ago = (ms: number) => new Date(now.getTime() - ms);

/** A group of 4 shards: a live member, one whose heartbeat is older than its lease, a released slot. */
function seeded(): MemoryGroupStore {
  const s = new MemoryGroupStore();
  s.put('jobs', { kind: 'group', index: 0, shards: 4, createdAt: ago(60_000) });
  s.put('jobs', { kind: 'member', index: 0, holderIdentity: 'a', session: 3, state: 'active', renewTime: ago(1_000), leaseDurationSeconds: 15 });
  s.put('jobs', { kind: 'member', index: 1, holderIdentity: 'b\u001b[2J', session: 1, state: 'active', renewTime: ago(20_000), leaseDurationSeconds: 15 });
  s.put('jobs', { kind: 'member', index: 2, holderIdentity: '', session: 5, state: 'leaving', renewTime: ago(5_000), leaseDurationSeconds: 15 });
  s.put('jobs', { kind: 'shard', index: 0, holderIdentity: 'a', owner: { slot: 0, session: 3 }, token: 7, acquireTime: ago(30_000) });
  s.put('jobs', { kind: 'shard', index: 1, holderIdentity: 'b\u001b[2J', owner: { slot: 1, session: 1 }, token: 2, acquireTime: ago(50_000) });
  // An owner session that is over: slot 0 holds session 3 now.
  s.put('jobs', { kind: 'shard', index: 2, holderIdentity: 'a', owner: { slot: 0, session: 2 }, token: 4, acquireTime: ago(50_000) });
  // Shard 3: never taken (no record).
  return s;
}

it('reads each shard’s owner, token and session, and the slots, judging sessions by this machine’s clock', async () => {
  const r = await readGroupReport(seeded(), 'jobs', now);
  assert.ok(r);
  assert.equal(r.found, true);
  assert.equal(r.kind, 'shard-group');
  assert.equal(r.shards, 4);
  assert.equal(r.liveMembers, 1);
  assert.deepEqual(
    r.members.map((m) => [m.slot, m.status, m.state]),
    [
      [0, 'held', 'active'],
      [1, 'expired', 'active'],
      [2, 'released', 'leaving'],
    ],
  );
  assert.deepEqual(
    r.owners.map((o) => [o.shard, o.owner, o.token, o.session, o.ownerLive]),
    [
      [0, 'a', 7, '0/3', true],
      [1, 'b\u001b[2J', 2, '1/1', false],
      [2, 'a', 4, '0/2', false],
      [3, null, 0, null, false],
    ],
  );
  assert.equal(r.orphaned, 3);
  const text = formatGroupReport(r, now);
  assert.ok(!text.includes('\u001b'), text);
  assert.match(text, /^shards {3}4, created 2026-12-02T08:59:00\.000Z$/m);
  assert.match(text, /^0 {5}a {21}active {3}3 {8}2026-12-02T08:59:59\.000Z \(1s ago\)$/m);
  assert.match(text, /^1 {5}b\\u001b\[2J +expired {2}1 {8}2026-12-02T08:59:40\.000Z \(20s ago\)$/m);
  assert.match(text, /^2 {5}\(free\) {16}released 5 {8}-$/m);
  assert.match(text, /^0 {6}a {21}7 {6}0\/3$/m);
  assert.match(text, /^2 {6}a {21}4 {6}0\/2 \(over\)$/m);
  assert.match(text, /^3 {6}none {18}0 {6}-$/m);
  assert.match(text, /^3 of 4 shards have no live owner$/m);
});

it('no header is no group; nor is a name the store cannot hold as one, or a list the credentials may not make', async () => {
  assert.equal(await readGroupReport(new MemoryGroupStore(), 'jobs', now), null);
  assert.equal(await readGroupReport(seeded(), 'Not_A_Group', now), null);
  const forbidden: GroupStore = {
    backend: 'kubernetes',
    location: 'ns',
    listGroup: () => Promise.reject(new ForbiddenError('leases is forbidden: cannot list')),
    createGroupRecord: () => Promise.reject(new Error('no')),
    updateGroupRecord: () => Promise.reject(new Error('no')),
  };
  assert.equal(await readGroupReport(forbidden, 'jobs', now), null);
  const down: GroupStore = { ...forbidden, listGroup: () => Promise.reject(new Error('connection refused')) };
  await assert.rejects(() => readGroupReport(down, 'jobs', now), /connection refused/, 'a store that fails is not "no group"');
});

it('--status-dir: the member its shards.json describes, nothing once that file expired, a foreign file as an error line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-shards-candidate-'));
  try {
    const r = (await readGroupReport(seeded(), 'jobs', now))!;
    const write = (v: unknown) => writeFileSync(join(dir, 'shards.json'), JSON.stringify(v));
    const file = { identity: 'a', owned: [{ shard: 0, fencingToken: 7 }], validUntil: '2026-12-02T09:00:05.000Z', standingAside: null, stoppedAt: null };
    write(file);
    assert.match(formatGroupReport(r, now, readShardsCandidate(dir)), /^sidecar {2}a: owns 1 shards \(0\)$/m);
    write({ ...file, validUntil: '2026-12-02T08:59:59.000Z' });
    assert.match(formatGroupReport(r, now, readShardsCandidate(dir)), /^sidecar {2}a: owns nothing: its shards\.json expired at 2026-12-02T08:59:59\.000Z$/m);
    write({ ...file, standingAside: { reason: 'app unhealthy: \u202edown', since: '2026-12-02T08:59:00.000Z' } });
    const aside = formatGroupReport(r, now, readShardsCandidate(dir));
    assert.match(aside, /^sidecar {2}a: standing aside since 2026-12-02T08:59:00\.000Z: app unhealthy: \\u202edown$/m);
    write({ identity: 'a', owned: 'all' });
    assert.match(formatGroupReport(r, now, readShardsCandidate(dir)), /^sidecar {2}cannot read .*shards\.json: not a shards\.json of leasehold$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
