/**
 * leasehold's key-to-shard function against Kubernetes' own sharding code (KEP-5866), so that a
 * member's shardSelector(s, N) lists and watches exactly the objects shardOf puts in shard s.
 *
 * The reference is test/interop/kep-5866-vectors (built by test/support/build-kep-5866-vectors.sh):
 * the hash is k8s.io/apimachinery's sharding.HashField, a hash is compared with a bound by its
 * HexLess, each selector is parsed by the API server's parser (k8s.io/apiserver/pkg/sharding) and
 * matched by apimachinery's Selector.Matches. The bounds floor(i × 2^64 / N) themselves come
 * from the KEP's rule written again in Go with math/big: no released apimachinery has a function
 * that splits the space into N ranges.
 *
 * The bounds of every N in 1..4096 (as digests, 8.4 million bounds). The keys' shards and the
 * hashes either side of each bound for fewer N (every count in 1..128, every power of two with its
 * neighbours, seeded ones up to 4096: all 4096 for 10,000 keys is 41 million BigInt steps, too slow
 * for a test); 10,000 keys, most of them random UTF-8 text with characters of one to four bytes.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { buildTool } from '../support/build-tool.js';
import { prng } from '../support/prng.js';
import { boundHex, fnv1a64, ownedShardsSelector, shardOf, shardOfHash, shardRange, shardSelector } from '../../src/shards/key-to-shard.js';

interface Reference {
  modules: string[];
  hashes: string[];
  boundsDigests: string[];
  bounds: Record<string, string[]>;
  boundaryShards: Record<string, number[]>;
  keyShards: Record<string, number[]>;
  selectorsParsed: number;
  matchesChecked: number;
  selectorFailures: string[];
}

const MAX = 4096;
const random = prng(5866);

/** Characters from each UTF-8 length: ASCII, Latin and Greek, CJK, and astral (emoji), never a lone surrogate. */
function randomKey(): string {
  const ranges: [number, number][] = [
    [0x20, 0x7e],
    [0xa0, 0x7ff],
    [0x800, 0xd7ff],
    [0xe000, 0xfffd],
    [0x10000, 0x10ffff],
  ];
  const length = 1 + Math.floor(random() * 24);
  let key = '';
  for (let i = 0; i < length; i++) {
    const [lo, hi] = ranges[Math.floor(random() * ranges.length)]!;
    key += String.fromCodePoint(lo + Math.floor(random() * (hi - lo + 1)));
  }
  return key;
}

/** A UID as the API server writes one (what a selector hashes), from the seeded generator. */
function randomUid(): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const keys = ['', 'a', 'foobar', 'customer-42', 'ünïcødé', ...Array.from({ length: 2_000 }, randomUid)];
while (keys.length < 10_000) keys.push(randomKey());

const powers = Array.from({ length: 13 }, (_, k) => 2 ** k).flatMap((p) => [p - 1, p, p + 1]);
const wide = [
  ...new Set([
    ...Array.from({ length: 128 }, (_, i) => i + 1),
    ...powers,
    1000,
    3000,
    ...Array.from({ length: 32 }, () => 129 + Math.floor(random() * (MAX - 128))),
  ]),
]
  .filter((n) => n >= 1 && n <= MAX)
  .sort((a, b) => a - b);
// Every shard's selector is parsed by the API server's parser and matched per key: fewer counts.
const selectorNs = [...new Set([...Array.from({ length: 16 }, (_, i) => i + 1), ...powers, 1000, 3000])]
  .filter((n) => n >= 1 && n <= MAX)
  .sort((a, b) => a - b);

// A member's owned shards: runs of neighbours (one range each), lone shards, the first and the last.
const ownedCases = [
  { n: 3, owned: [0, 2] },
  { n: 7, owned: [1, 2, 3, 5] },
  { n: 1000, owned: [0, 1, 2, 500, 998, 999] },
  { n: 4095, owned: Array.from({ length: 64 }, () => Math.floor(random() * 4095)) },
];

const bounds = (n: number) => [...Array.from({ length: n }, (_, s) => boundHex(shardRange(s, n).from)), boundHex(shardRange(n - 1, n).to)];

describe("KEP-5866: leasehold's shards are the API server's ranges, to the bit", () => {
  let ref: Reference;
  let request: {
    owned: { n: number; owned: number[]; selector: string | null; shards: number[] }[];
    all: number;
    keys: string[];
    wide: number[];
    selectors: { n: number; selectors: string[]; shards: number[] }[];
  };
  before(() => {
    const bin = buildTool('build-kep-5866-vectors.sh');
    request = {
      owned: ownedCases.map(({ n, owned }) => ({ n, owned, selector: ownedShardsSelector(owned, n), shards: keys.map((k) => shardOf(k, n)) })),
      all: MAX,
      keys,
      wide,
      selectors: selectorNs.map((n) => ({
        n,
        selectors: Array.from({ length: n }, (_, s) => shardSelector(s, n)),
        shards: keys.map((k) => shardOf(k, n)),
      })),
    };
    ref = JSON.parse(execFileSync(bin, { input: JSON.stringify(request), maxBuffer: 1 << 30 }).toString()) as Reference;
  });

  it("is compared with apimachinery's and apiserver's released sharding code", () => {
    assert.ok(
      ref.modules.some((m) => /^k8s\.io\/apimachinery v0\.3[6-9]\./.test(m)),
      ref.modules.join(', '),
    );
    assert.ok(
      ref.modules.some((m) => /^k8s\.io\/apiserver v0\.3[6-9]\./.test(m)),
      ref.modules.join(', '),
    );
  });

  it("hashes every key as apimachinery's HashField (FNV-1a 64 of the UTF-8 bytes)", () => {
    assert.equal(ref.hashes.length, keys.length);
    assert.ok(keys.filter((k) => [...k].some((c) => c.codePointAt(0)! > 0x7f)).length > 7_000, 'most keys are not ASCII');
    keys.forEach((k, i) => assert.equal(boundHex(fnv1a64(k)), ref.hashes[i], `hash of ${JSON.stringify(k)}`));
  });

  it('has the range bounds floor(i × 2^64 / N) of every N from 1 to 4096, written as the API server writes them', () => {
    assert.equal(ref.boundsDigests.length, MAX);
    const differ: number[] = [];
    for (let n = 1; n <= MAX; n++) {
      if (createHash('sha256').update(bounds(n).join('\n')).digest('hex') !== ref.boundsDigests[n - 1]) differ.push(n);
    }
    assert.deepEqual(differ, [], 'the counts whose bounds differ');
    // The counts tried below, bound by bound, so that a difference shows where it is.
    for (const n of wide) assert.deepEqual(bounds(n), ref.bounds[n], `the bounds of N = ${n}`);
  });

  it("puts each of the API server's bounds in the shard it starts, and the hash just below it in the shard before", () => {
    for (const n of wide) {
      const ours: number[] = [];
      for (let i = 1; i < n; i++) {
        // The reference's bound, not ours: the rule is checked apart from our bounds.
        const b = BigInt(ref.bounds[n]![i]!);
        ours.push(shardOfHash(b - 1n, n), shardOfHash(b, n));
      }
      assert.deepEqual(ours, ref.boundaryShards[n], `the shards either side of each bound of N = ${n}`);
    }
  });

  it('puts every key in the shard whose range holds its hash, by apimachinery', () => {
    const hashes = keys.map((k) => fnv1a64(k));
    for (const n of wide) {
      const ours = hashes.map((h) => shardOfHash(h, n));
      assert.deepEqual(ours, ref.keyShards[n], `the shards of N = ${n}`);
    }
    // shardOf itself (the hash, then the shard), as sent for the selectors' check.
    for (const { n, shards } of request.selectors) assert.deepEqual(shards, ref.keyShards[n], `shardOf(key, ${n})`);
  });

  it("gives selectors the API server's parser takes as they are, which match each key's shard and not its neighbours, and a member's owned shards' selector that matches their keys only", () => {
    assert.deepEqual(ref.selectorFailures, []);
    assert.equal(ref.selectorsParsed, selectorNs.reduce((a, n) => a + n, 0) + ownedCases.length);
    assert.ok(ref.matchesChecked >= keys.length * (selectorNs.length + ownedCases.length), `${ref.matchesChecked} matches checked`);
  });
});
