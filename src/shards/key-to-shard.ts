/**
 * Which shard a key belongs to: the one function an app uses to route its work, in any language
 * (docs/shards.md gives test vectors). The FNV-1a 64-bit hash of the key's UTF-8 bytes, as an
 * unsigned number h in [0, 2^64); shard = floor(h × N / 2^64). Each shard is then one contiguous
 * range of the hash space, [ceil(s × 2^64 / N), ceil((s + 1) × 2^64 / N)), which is what
 * Kubernetes' sharded list and watch (KEP-5866, `shardRange(object.metadata.uid, ...)`, FNV-1a
 * 64) filters by: a member can hand its shards' ranges to the API server.
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
  return Number((fnv1a64(key) * BigInt(shards)) >> 64n);
}

/** The hash range of shard `s` of `shards`: [from, to), to = 2^64 for the last shard. */
export function shardRange(s: number, shards: number): { from: bigint; to: bigint } {
  checkShardCount(shards);
  if (!Number.isInteger(s) || s < 0 || s >= shards) throw new InvalidConfigError(`shard must be a whole number from 0 to ${shards - 1}, got ${s}`);
  const bound = (i: number) => ((BigInt(i) << 64n) + BigInt(shards) - 1n) / BigInt(shards);
  return { from: bound(s), to: bound(s + 1) };
}

export function checkShardCount(shards: number): void {
  if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) {
    throw new InvalidConfigError(`the shard count must be a whole number from 1 to ${MAX_SHARDS}, got ${String(shards)}`);
  }
}
