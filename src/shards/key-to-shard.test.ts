import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { boundHex, fnv1a64, ownedShardsSelector, shardBounds, shardOf, shardOfHash, shardRange, shardSelector } from './key-to-shard.js';
import { InvalidConfigError } from '../errors.js';

describe('keys to shards: FNV-1a 64 of the UTF-8 bytes, scaled to N', () => {
  it('FNV-1a 64 matches the published test vectors', () => {
    // From the FNV reference (Fowler, Noll, Vo): the empty string, "a", "foobar".
    assert.equal(fnv1a64('').toString(16), 'cbf29ce484222325');
    assert.equal(fnv1a64('a').toString(16), 'af63dc4c8601ec8c');
    assert.equal(fnv1a64('foobar').toString(16), '85944171f73967e8');
  });

  it('the vectors docs/shards.md prints for other languages', () => {
    // Keep these in step with docs/shards.md: an app in another language checks itself against them.
    assert.equal(shardOf('', 64), 50);
    assert.equal(fnv1a64('customer-42').toString(16), '1e1b8c70eb18f59e');
    assert.equal(shardOf('customer-42', 64), 7);
    assert.equal(fnv1a64('ünïcødé').toString(16), '7fe9369f83b596a0', 'the UTF-8 bytes, not UTF-16 code units');
    assert.equal(shardOf('ünïcødé', 16), 7);
    assert.equal(shardOf('a', 16), 10);
    assert.equal(shardOf('foobar', 256), 133);
    assert.equal(shardOf('ünïcødé', 1), 0);
  });

  it('every shard is one contiguous range, the ranges tile the hash space, and shardOf agrees with them', () => {
    for (const n of [1, 2, 3, 7, 64, 4096]) {
      let next = 0n;
      for (let s = 0; s < n; s++) {
        const r = shardRange(s, n);
        assert.equal(r.from, next, `shard ${s} of ${n} starts where ${s - 1} ended`);
        assert.ok(r.to > r.from);
        next = r.to;
      }
      assert.equal(next, 1n << 64n, `the ranges of ${n} shards end at 2^64`);
    }
    for (let i = 0; i < 2_000; i++) {
      const key = `key-${i}`;
      const n = 1 + (i % 97);
      const s = shardOf(key, n);
      const r = shardRange(s, n);
      const h = fnv1a64(key);
      assert.ok(h >= r.from && h < r.to, `${key}: hash in its shard's range`);
    }
  });

  it("KEP-5866's bounds: floor(i × 2^64 / N), a bound in the shard it starts (test/kubernetes/kep-5866-vectors.test.ts checks them against Kubernetes' code)", () => {
    assert.deepEqual(shardRange(0, 3), { from: 0n, to: 0x5555555555555555n });
    assert.deepEqual(shardRange(1, 3), { from: 0x5555555555555555n, to: 0xaaaaaaaaaaaaaaaan });
    assert.deepEqual(shardRange(2, 3), { from: 0xaaaaaaaaaaaaaaaan, to: 1n << 64n });
    // 2^64 / 3 is not whole: floor(h × N / 2^64), the rule before, put these bounds in the shard below.
    assert.equal(shardOfHash(0x5555555555555554n, 3), 0);
    assert.equal(shardOfHash(0x5555555555555555n, 3), 1);
    assert.equal(shardOfHash(0xaaaaaaaaaaaaaaaan, 3), 2);
    assert.equal(shardOfHash((1n << 64n) - 1n, 3), 2);
    // docs/shards.md's range table: keep in step.
    assert.equal(shardOfHash(0x0010000000000000n, 4096), 1);
    assert.deepEqual(shardRange(1, 4096), { from: 0x0010000000000000n, to: 0x0020000000000000n });
    assert.deepEqual(shardRange(0, 1), { from: 0n, to: 1n << 64n });
    assert.equal(shardOfHash(0n, 4096), 0);
    assert.equal(shardOfHash((1n << 64n) - 1n, 4096), 4095);
  });

  it("each shard's selector is written as the API server's parser takes it: 16 hex digits, 2^64 as 17", () => {
    assert.equal(shardSelector(0, 1), "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')");
    assert.equal(shardSelector(0, 3), "shardRange(object.metadata.uid, '0x0000000000000000', '0x5555555555555555')");
    assert.equal(shardSelector(2, 3), "shardRange(object.metadata.uid, '0xaaaaaaaaaaaaaaaa', '0x10000000000000000')");
    assert.equal(shardSelector(1, 4096), "shardRange(object.metadata.uid, '0x0010000000000000', '0x0020000000000000')");
    assert.equal(boundHex(0xabn), '0x00000000000000ab');
    assert.throws(() => shardSelector(3, 3), /shard must be a whole number from 0 to 2, got 3/);
  });

  it("a shard's bounds are written out once per shard count, not at each call (shards.json lists them at every write)", () => {
    const first = shardBounds(17, 4096);
    assert.equal(shardBounds(17, 4096), first, 'the same bounds, not built again');
    assert.ok(Object.isFrozen(first), 'shared bounds cannot be changed by a caller');
    assert.notEqual(shardBounds(17, 2048).start, first.start, 'another count has its own bounds');
    assert.deepEqual(shardBounds(17, 4096), first, 'and the first count again gives the same values');
  });

  it("each shard's range as text, as shards.json lists it: start and end as the selector writes them, the last end 2^64", () => {
    assert.deepEqual(shardBounds(1, 3), {
      start: '0x5555555555555555',
      end: '0xaaaaaaaaaaaaaaaa',
      selector: "shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')",
    });
    assert.deepEqual(shardBounds(4095, 4096), {
      start: '0xfff0000000000000',
      end: '0x10000000000000000',
      selector: "shardRange(object.metadata.uid, '0xfff0000000000000', '0x10000000000000000')",
    });
    for (const n of [1, 3, 7, 64, 1000]) {
      for (let s = 0; s < n; s++) {
        const b = shardBounds(s, n);
        assert.equal(b.selector, shardSelector(s, n));
        assert.equal(BigInt(b.start), shardRange(s, n).from);
        assert.equal(BigInt(b.end), shardRange(s, n).to);
        if (s + 1 < n) assert.equal(b.end, shardBounds(s + 1, n).start, `shard ${s} of ${n} ends where the next starts`);
      }
    }
    assert.throws(() => shardBounds(3, 3), /shard must be a whole number from 0 to 2, got 3/);
  });

  it("a member's shards in one selector: consecutive shards as one range, the others joined with ||", () => {
    assert.equal(
      ownedShardsSelector([3, 0, 1], 4),
      "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
    );
    assert.equal(ownedShardsSelector([0, 1, 2], 3), "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')");
    assert.equal(ownedShardsSelector([1, 1], 3), shardSelector(1, 3));
    assert.equal(ownedShardsSelector([], 3), null, 'no shard: no selector, not one that selects everything');
    assert.throws(() => ownedShardsSelector([0, 3], 3), /shard must be a whole number from 0 to 2, got 3/);
  });

  it('refuses a key that is not a string (from JavaScript), naming the rule, rather than hashing something else', () => {
    for (const key of [42, null, undefined, { id: 1 }]) {
      assert.throws(
        () => shardOf(key as unknown as string, 16),
        (err: unknown) => err instanceof InvalidConfigError && /^a key must be a string \(its UTF-8 bytes are hashed\), got /.test(err.message),
      );
    }
    assert.equal(shardOf(String(42), 16), shardOf('42', 16));
  });

  it('a lone surrogate (a string that is not valid Unicode) is hashed as U+FFFD, as docs/shards.md says', () => {
    assert.equal(fnv1a64('\ud800'), fnv1a64('\ufffd'));
    assert.equal(fnv1a64('x\udc00y'), fnv1a64('x\ufffdy'));
  });

  it('refuses a shard count outside 1 to 4096, naming the rule', () => {
    for (const n of [0, -1, 4097, 1.5, Number.NaN]) assert.throws(() => shardOf('k', n), /the shard count must be a whole number from 1 to 4096/);
  });
});
