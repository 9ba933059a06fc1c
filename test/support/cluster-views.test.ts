import { it } from 'node:test';
import assert from 'node:assert/strict';
import {
  allReady,
  failoverBoundMs,
  onlyEndpointIs,
  onlyLeaderReady,
  releasedBeforeExpiry,
  shardsSettled,
  singleLeader,
  type MemberView,
  type PodView,
} from './cluster-views.js';

const now = new Date('2026-12-02T10:00:00Z');
const later = '2026-12-02T10:00:09Z';
const pod = (name: string, isLeader: boolean, over: Partial<PodView> = {}): PodView => ({
  name,
  ready: true,
  deleting: false,
  role: isLeader ? 'leader' : 'follower',
  status: { isLeader, fencingToken: isLeader ? 4 : null, validUntil: isLeader ? later : null, holder: 'a' },
  httpLeader: 'a',
  ...over,
});
const lease = { holderIdentity: 'a', leaseTransitions: 4 };
const every = { podLabel: true, everyViewNamesHolder: true };

it('singleLeader: the Lease, the status files, /leader, the labels and the token agree', () => {
  assert.deepEqual(singleLeader([pod('a', true), pod('b', false), pod('c', false)], lease, now, every), { leader: 'a', token: 4 });
});

it('singleLeader: finds each way of disagreeing', () => {
  assert.match(singleLeader([pod('a', true), pod('b', true)], lease, now).problem!, /2 pods claim/);
  assert.match(singleLeader([pod('a', false), pod('b', false)], lease, now).problem!, /0 pods claim/);
  assert.match(singleLeader([pod('b', true)], lease, now).problem!, /holder a is not a live pod/);
  assert.match(singleLeader([pod('a', true, { deleting: true }), pod('b', true)], lease, now).problem!, /not a live pod/);
  assert.match(singleLeader([pod('a', false), pod('b', true)], lease, now).problem!, /b claims leadership but the Lease names a/);
  assert.match(singleLeader([pod('a', true)], { ...lease, leaseTransitions: 5 }, now).problem!, /token mismatch/);
  const expired = pod('a', true, { status: { isLeader: true, fencingToken: 4, validUntil: '2026-12-02T09:59:59Z' } });
  assert.match(singleLeader([expired], lease, now).problem!, /0 pods claim/, 'a passed validUntil does not count');
});

it('singleLeader: other views must name the holder when asked', () => {
  const staleFile = pod('b', false, { status: { isLeader: false, fencingToken: null, validUntil: null, holder: 'c' } });
  assert.match(singleLeader([pod('a', true), staleFile], lease, now, every).problem!, /b's status file names c/);
  assert.match(singleLeader([pod('a', true), pod('b', false, { httpLeader: null })], lease, now, every).problem!, /b's \/leader names \(unread\)/);
  assert.equal(singleLeader([pod('a', true), pod('b', false, { httpLeader: null })], lease, now).leader, 'a', 'not judged unless asked');
});

it('singleLeader: podLabel mode needs exactly the holder labelled leader and the others follower', () => {
  assert.match(singleLeader([pod('a', true), pod('b', false, { role: 'leader' })], lease, now, every).problem!, /labelled leader: a, b/);
  assert.match(singleLeader([pod('a', true, { role: 'follower' }), pod('b', false)], lease, now, every).problem!, /labelled leader: none/);
  const { role: _, ...noLabel } = pod('b', false);
  assert.match(singleLeader([pod('a', true), noLabel], lease, now, every).problem!, /not labelled follower: b/);
  assert.equal(
    singleLeader([pod('a', true), pod('b', false, { role: 'leader', deleting: true })], lease, now, every).leader,
    'a',
    'a deleting pod is not judged',
  );
});

it('onlyEndpointIs: exactly the leader, ready; terminating endpoints ignored', () => {
  const ep = (name: string, ready = true, terminating = false) => ({ targetRef: { name }, conditions: { ready, terminating } });
  assert.deepEqual(onlyEndpointIs([ep('a')], 'a'), { ok: true });
  assert.deepEqual(onlyEndpointIs([ep('a'), ep('b', false, true)], 'a'), { ok: true });
  assert.match(onlyEndpointIs([ep('a'), ep('b')], 'a').problem!, /endpoints a, b/);
  assert.match(onlyEndpointIs([ep('b')], 'a').problem!, /endpoints b; the leader is a/);
  assert.match(onlyEndpointIs([], 'a').problem!, /endpoints none/);
  assert.match(onlyEndpointIs([ep('a', false)], 'a').problem!, /not ready/);
});

it('allReady, onlyLeaderReady and the failover bound', () => {
  assert.equal(allReady([pod('a', true), pod('b', false), pod('c', false)], 3), true);
  assert.equal(allReady([pod('a', true), pod('b', false, { ready: false })], 2), false);
  assert.equal(allReady([pod('a', true)], 3), false);
  assert.equal(onlyLeaderReady([pod('a', true), pod('b', false, { ready: false })], 'a'), true);
  assert.equal(onlyLeaderReady([pod('a', true), pod('b', false)], 'a'), false);
  assert.equal(onlyLeaderReady([pod('a', true, { ready: false }), pod('b', false)], 'a'), false);
  assert.equal(failoverBoundMs(15_000, 2_000, 10_000), 29_400);
});

it('releasedBeforeExpiry: a new term before the old could expire is a release; at or after it, an expiry', () => {
  const before = { holderIdentity: 'a', renewTime: '2026-12-04T17:00:00.000000Z', leaseDurationSeconds: 15 };
  assert.equal(releasedBeforeExpiry(before, { holderIdentity: 'b', acquireTime: '2026-12-04T17:00:02.037000Z' }), null);
  assert.match(releasedBeforeExpiry(before, { holderIdentity: 'b', acquireTime: '2026-12-04T17:00:15.000000Z' })!, /a takeover by expiry, not a release/);
  assert.match(releasedBeforeExpiry({ holderIdentity: 'a' }, { acquireTime: '2026-12-04T17:00:01Z' })!, /^cannot judge/);
});

it('shardsSettled: every live member Ready, seeing them all, owning its floor or ceil share, every shard owned once', () => {
  const member = (name: string, owned: number[], over: Partial<MemberView> = {}): MemberView => ({
    name,
    ready: true,
    deleting: false,
    shards: { members: 3, owned, validUntil: later },
    ...over,
  });
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
  const settled = [member('a', range(0, 3)), member('b', range(3, 6)), member('c', range(6, 8))];
  assert.equal(shardsSettled(settled, 8, 3, now), null);
  assert.equal(shardsSettled([...settled, member('gone', [], { deleting: true, ready: false })], 8, 3, now), null, 'a deleting pod is not counted');
  assert.match(shardsSettled(settled.slice(0, 2), 8, 3, now)!, /2 live pods, not 3/);
  assert.match(shardsSettled([member('a', range(0, 4)), member('b', range(4, 6)), member('c', range(6, 8))], 8, 3, now)!, /a owns 4 shards, not 2 or 3/);
  assert.match(shardsSettled([member('a', range(0, 3)), member('b', range(2, 5)), member('c', range(5, 8))], 8, 3, now)!, /shard 2 is owned by a and b/);
  assert.match(shardsSettled([member('a', range(0, 3)), member('b', range(3, 6)), member('c', [6, 6])], 8, 3, now)!, /shard 6 is owned by c and c/);
  assert.match(shardsSettled([member('a', range(0, 3)), member('b', range(3, 6)), member('c', [6])], 7, 3, now)!, /c owns 1 shards, not 2 or 3/);
  assert.match(shardsSettled([member('a', range(0, 3)), member('b', range(3, 6)), member('c', [6, 9])], 8, 3, now)!, /shards without an owner: 7/);
  assert.match(shardsSettled([settled[0]!, settled[1]!, member('c', range(6, 8), { ready: false })], 8, 3, now)!, /c is not Ready/);
  assert.match(shardsSettled([settled[0]!, settled[1]!, member('c', range(6, 8), { shards: null })], 8, 3, now)!, /c's shards.json is unread/);
  const expired = member('c', range(6, 8), { shards: { members: 3, owned: range(6, 8), validUntil: '2026-12-02T09:59:59Z' } });
  assert.match(shardsSettled([settled[0]!, settled[1]!, expired], 8, 3, now)!, /c's shards.json is past its validUntil/);
  const blind = member('c', range(6, 8), { shards: { members: 2, owned: range(6, 8), validUntil: later } });
  assert.match(shardsSettled([settled[0]!, settled[1]!, blind], 8, 3, now)!, /c sees 2 members/);
});
