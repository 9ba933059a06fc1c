import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { balanced, movedShards, ownedAgainAt, ownedSince, ownerMap, ownersOf, type FileVersion } from './shard-settle.js';

const v = (at: number, owned: number[], validUntil: number | null = 1_000_000): FileVersion => ({ at, owned, validUntil });

describe('shard-settle', () => {
  it('balanced: every shard once, each member floor or ceil; an expired file owns nothing', () => {
    const latest = new Map([
      ['a', v(1, [0, 1])],
      ['b', v(1, [2])],
    ]);
    assert.equal(balanced(latest, ['a', 'b'], 3, 10), true);
    assert.equal(balanced(latest, ['a', 'b'], 4, 10), false, 'shard 3 owned by nobody');
    assert.equal(balanced(new Map([...latest, ['b', v(1, [1])]]), ['a', 'b'], 3, 10), false, 'shard 1 twice, shard 2 by nobody');
    assert.equal(balanced(new Map([...latest, ['b', v(1, [2], 5)]]), ['a', 'b'], 3, 10), false, "b's file expired at 5");
    assert.equal(
      balanced(
        new Map([
          ['a', v(1, [0, 1, 2])],
          ['b', v(1, [])],
        ]),
        ['a', 'b'],
        3,
        10,
      ),
      false,
      '3 and 0: not floor or ceil of 1.5',
    );
  });

  it('ownersOf and movedShards: a shard owned by another member, or by nobody on one side, moved', () => {
    const before = ownerMap(
      ownersOf(
        new Map([
          ['a', v(1, [0, 1])],
          ['b', v(1, [2, 3])],
        ]),
        10,
      ),
    );
    const after = ownerMap(
      ownersOf(
        new Map([
          ['a', v(1, [0])],
          ['b', v(1, [2, 3])],
          ['c', v(1, [1])],
        ]),
        10,
      ),
    );
    assert.equal(movedShards(before, after, 4), 1);
    assert.equal(movedShards(before, new Map([...after].filter(([s]) => s !== 3)), 4), 2);
    assert.deepEqual(
      ownersOf(
        new Map([
          ['a', v(1, [0])],
          ['b', v(1, [0])],
        ]),
        10,
      ).get(0),
      ['a', 'b'],
    );
  });

  it('ownedSince: the first version of the last run of equal lists', () => {
    assert.equal(ownedSince([v(1, [0]), v(2, [0, 1]), v(3, [0, 1]), v(4, [0, 1])]), 2);
    assert.equal(ownedSince([v(1, [0, 1]), v(2, [0]), v(3, [0, 1])]), 3);
    assert.equal(ownedSince([v(7, [])]), 7);
    assert.equal(ownedSince([]), undefined);
  });

  it("ownedAgainAt: each shard's first listing by another member since the change, not before it, not by the one gone", () => {
    const history = new Map([
      ['gone', [v(0, [0, 1, 2]), v(105, [])]],
      ['a', [v(50, [3]), v(110, [0, 3]), v(130, [0, 3])]],
      ['b', [v(90, [1, 4]), v(120, [1, 4]), v(140, [1, 2, 4])]],
    ]);
    const got = ownedAgainAt(history, [0, 1, 2], 'gone', 100);
    assert.deepEqual(
      [...got],
      [
        [0, 110],
        [1, 120],
        [2, 140],
      ],
    );
    assert.deepEqual([...ownedAgainAt(history, [5], 'gone', 100)], [[5, undefined]]);
  });
});
