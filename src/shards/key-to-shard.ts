/**
 * Which shard a key belongs to: the one function an app uses to route its work, in any language
 * (docs/shards.md gives test vectors). The FNV-1a 64-bit hash of the key's UTF-8 bytes, as an
 * unsigned number h in [0, 2^64), and the N ranges KEP-5866 defines (Kubernetes' sharded list
 * and watch, `shardRange(object.metadata.uid, ...)`, and kube-state-metrics): shard i is
 * [floor(i × 2^64 / N), floor((i + 1) × 2^64 / N)), the last ending at 2^64. A member can hand
 * its shards' ranges to the API server and get exactly its shards' objects, because the bounds
 * are the API server's to the bit (test/kubernetes/kep-5866-vectors.test.ts checks them against
 * k8s.io/apimachinery's own code).
 */
import { InvalidConfigError } from '../errors.js';
import { MAX_SHARDS } from '../backends/group-store.js';

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = (1n << 64n) - 1n;
const utf8 = new TextEncoder();

/** FNV-1a, 64 bits, over the UTF-8 bytes of `text` (or the bytes given). */
export function fnv1a64(data: string | Uint8Array): bigint {
  const bytes = typeof data === 'string' ? utf8.encode(data) : data;
  let h = FNV_OFFSET;
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV_PRIME) & MASK;
  return h;
}

/** The shard of `key` in a group of `shards` shards (1 to MAX_SHARDS). */
export function shardOf(key: string, shards: number): number {
  checkShardCount(shards);
  // From JavaScript anything may come: undefined would hash as "" (TextEncoder encodes nothing)
  // and a number would throw a TypeError that names neither; every member must agree on the text.
  if (typeof key !== 'string') {
    throw new InvalidConfigError(
      `a key must be a string (its UTF-8 bytes are hashed), got ${key === null ? 'null' : typeof key}: convert it the same way on every member, as String(42)`,
    );
  }
  return shardOfHash(fnv1a64(key), shards);
}

/**
 * The shard whose range holds hash `h`: the i with floor(i × 2^64 / N) ≤ h < floor((i + 1) ×
 * 2^64 / N). floor(i × 2^64 / N) ≤ h holds exactly when i × 2^64 < (h + 1) × N, so the largest
 * such i is floor(((h + 1) × N − 1) / 2^64). (floor(h × N / 2^64), the rule before KEP-5866's,
 * differs where h is a bound that N does not divide exactly: it put h in the shard below.)
 */
export function shardOfHash(h: bigint, shards: number): number {
  return Number(((h + 1n) * BigInt(shards) - 1n) >> 64n);
}

/** The hash range of shard `s` of `shards`: [from, to), to = 2^64 for the last shard. */
export function shardRange(s: number, shards: number): { from: bigint; to: bigint } {
  checkShard(s, shards);
  return { from: rangeBound(s, shards), to: rangeBound(s + 1, shards) };
}

/**
 * The KEP-5866 selector of shard `s` of `shards`: the objects whose metadata.uid hashes into its
 * range, as the API server's parser (k8s.io/apiserver/pkg/sharding) takes it: each bound
 * '0x' and exactly 16 lowercase hex digits, but the last end, 2^64, '0x10000000000000000'.
 */
export function shardSelector(s: number, shards: number): string {
  return shardBounds(s, shards).selector;
}

/** A shard's range as text, the form shards.json, GET /shards and ShardGroup give each owned shard in. */
export interface ShardBounds {
  /** The range's first hash, as the selector writes it: '0x' and 16 lowercase hex digits. */
  start: string;
  /** The first hash past the range: the next shard's start, or '0x10000000000000000' (2^64) for the last shard. */
  end: string;
  /** shardRange(object.metadata.uid, start, end): the shard's KEP-5866 selector. */
  selector: string;
}

/**
 * The bounds already written out, for the last shard count asked (a process runs one group, or a
 * few of one count): shards.json lists every owned shard's bounds at each write, and a pass of
 * takes at N = 4096 writes it once per batch, each time 2 × N/M BigInt divisions and hex strings
 * (docs/benchmarks.md, "Shard writes at N = 4096"). At most N entries, frozen: they are shared.
 */
let written: { shards: number; bounds: (ShardBounds | undefined)[] } = { shards: 0, bounds: [] };

/** Shard `s` of `shards`: its range [start, end) and its selector, as text (shardRange gives the numbers). */
export function shardBounds(s: number, shards: number): Readonly<ShardBounds> {
  checkShard(s, shards);
  if (written.shards !== shards) written = { shards, bounds: [] };
  const known = written.bounds[s];
  if (known) return known;
  const { from, to } = shardRange(s, shards);
  const start = boundHex(from);
  const end = boundHex(to);
  const bounds = Object.freeze({ start, end, selector: rangeSelector(start, end) });
  written.bounds[s] = bounds;
  return bounds;
}

/**
 * One selector for the shards a member owns (any order, each once): the ranges of consecutive
 * shards joined into one, the rest with ' || ', as the API server's parser takes them. null for
 * no shard, since an empty selector would select every object.
 */
export function ownedShardsSelector(owned: readonly number[], shards: number): string | null {
  const sorted = [...new Set(owned)].sort((a, b) => a - b);
  sorted.forEach((s) => checkShard(s, shards));
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    // The bounds written out already (shardBounds): a selector is made at every shards.json write.
    parts.push(rangeSelector(shardBounds(sorted[i]!, shards).start, shardBounds(sorted[j]!, shards).end));
    i = j + 1;
  }
  return parts.length === 0 ? null : parts.join(' || ');
}

/** A range bound as KEP-5866 writes it: '0x' + 16 lowercase hex digits, or 2^64 as 17. */
export function boundHex(bound: bigint): string {
  return `0x${bound.toString(16).padStart(16, '0')}`;
}

function rangeSelector(start: string, end: string): string {
  return `shardRange(object.metadata.uid, '${start}', '${end}')`;
}

/** floor(i × 2^64 / N): KEP-5866's bound i of N (bound N is 2^64). */
function rangeBound(i: number, shards: number): bigint {
  return (BigInt(i) << 64n) / BigInt(shards);
}

function checkShard(s: number, shards: number): void {
  checkShardCount(shards);
  if (!Number.isInteger(s) || s < 0 || s >= shards) throw new InvalidConfigError(`shard must be a whole number from 0 to ${shards - 1}, got ${s}`);
}

export function checkShardCount(shards: number): void {
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new InvalidConfigError(`the shard count must be a whole number from 1 to ${MAX_SHARDS}, got ${String(shards)}`);
  }
}
