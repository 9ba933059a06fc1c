import { it } from 'node:test';
import assert from 'node:assert/strict';
import { allReady, failoverBoundMs, singleLeader, type PodView } from './e2e-logic.js';

const now = new Date('2026-12-02T10:00:00Z');
const later = '2026-12-02T10:00:09Z';
const pod = (name: string, isLeader: boolean, over: Partial<PodView> = {}): PodView => ({
  name,
  ready: true,
  deleting: false,
  status: { isLeader, fencingToken: isLeader ? 4 : null, validUntil: isLeader ? later : null },
  ...over,
});

it('singleLeader: the Lease, the status files and the token agree', () => {
  assert.deepEqual(singleLeader([pod('a', true), pod('b', false), pod('c', false)], { holderIdentity: 'a', leaseTransitions: 4 }, now), { leader: 'a', token: 4 });
});

it('singleLeader: finds each way of disagreeing', () => {
  const lease = { holderIdentity: 'a', leaseTransitions: 4 };
  assert.match(singleLeader([pod('a', true), pod('b', true)], lease, now).problem!, /2 pods claim/);
  assert.match(singleLeader([pod('a', false), pod('b', false)], lease, now).problem!, /0 pods claim/);
  assert.match(singleLeader([pod('b', true)], lease, now).problem!, /holder a is not a live pod/);
  assert.match(singleLeader([pod('a', true, { deleting: true }), pod('b', true)], lease, now).problem!, /not a live pod/);
  assert.match(singleLeader([pod('a', false), pod('b', true)], lease, now).problem!, /b claims leadership but the Lease names a/);
  assert.match(singleLeader([pod('a', true)], { ...lease, leaseTransitions: 5 }, now).problem!, /token mismatch/);
  const expired = pod('a', true, { status: { isLeader: true, fencingToken: 4, validUntil: '2026-12-02T09:59:59Z' } });
  assert.match(singleLeader([expired], lease, now).problem!, /0 pods claim/, 'a passed validUntil does not count');
});

it('allReady and the failover bound', () => {
  assert.equal(allReady([pod('a', true), pod('b', false), pod('c', false)], 3), true);
  assert.equal(allReady([pod('a', true), pod('b', false, { ready: false })], 2), false);
  assert.equal(allReady([pod('a', true)], 3), false);
  assert.equal(failoverBoundMs(15_000, 2_000, 10_000), 29_400);
});
