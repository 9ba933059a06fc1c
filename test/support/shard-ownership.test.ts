import { it } from 'node:test';
import assert from 'node:assert/strict';
import { OwnershipJudge, parseShards, type ShardsRead } from './shard-ownership.js';

const T = Date.parse('2026-12-02T10:00:00Z');
const read = (identity: string, owned: [number, number][], at: number): ShardsRead => ({ uid: identity, identity, owned: new Map(owned), at });

it('parseShards: owned counts only within validUntil, and only for the group', () => {
  const file = (validUntil: string | null, group = 'g') =>
    JSON.stringify({ group, identity: 'a', owned: [{ shard: 3, fencingToken: 7 }], validUntil, members: 1, shards: 8 });
  assert.deepEqual([...parseShards('u', file('2026-12-02T10:00:05Z'), T, 'g')!.owned], [[3, 7]]);
  assert.deepEqual([...parseShards('u', file('2026-12-02T09:59:59Z'), T, 'g')!.owned], [], 'past validUntil: owns nothing');
  assert.deepEqual([...parseShards('u', file(null), T, 'g')!.owned], [], 'no session: owns nothing');
  assert.equal(parseShards('u', file('2026-12-02T10:00:05Z', 'other'), T, 'g'), null);
  assert.throws(() => parseShards('u', '{"group":"g","own', T, 'g'));
});

it('OwnershipJudge: one shard in two files of a round is an overlap when the first still lists it on a reread, a move when not', () => {
  const overlap = new OwnershipJudge();
  const a = read('a', [[3, 5]], T);
  overlap.round([a, read('b', [[3, 6]], T + 1)], () => read('a', [[3, 5]], T + 2));
  assert.equal(overlap.violations.length, 1);
  assert.match(overlap.violations[0]!, /shard 3: owned by a \(token 5, .*\) and by b \(token 6/);

  const move = new OwnershipJudge();
  move.round([a, read('b', [[3, 6]], T + 1)], () => read('a', [], T + 2));
  assert.deepEqual(move.violations, []);
  assert.equal(move.movesBetweenReads, 1);
  // The first member's pod gone meanwhile: a move too.
  const gone = new OwnershipJudge();
  gone.round([a, read('b', [[3, 6]], T + 1)], () => null);
  assert.deepEqual(gone.violations, []);
});

it('OwnershipJudge: a token lower than one already seen for the shard is a violation, across rounds; equal or higher is not', () => {
  const j = new OwnershipJudge();
  j.round([read('b', [[3, 6]], T)], () => null);
  j.round([read('b', [[3, 6]], T + 10)], () => null);
  j.round([read('c', [[3, 7]], T + 20)], () => null);
  assert.deepEqual(j.violations, []);
  j.round([read('b', [[3, 6]], T + 30)], () => null);
  assert.equal(j.violations.length, 1);
  assert.match(j.violations[0]!, /shard 3: b listed token 6 at .*, after c listed 7/);
  assert.equal(j.highest.get(3)!.token, 7);
});
