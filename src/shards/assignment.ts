/**
 * Who should own which shard: one pure function every member computes alike from the same
 * inputs (the live members and the current owners), so no coordinator is needed
 * (docs/design.md, "Assignment"). Balanced: every member gets floor(N/M) or ceil(N/M). Few
 * moves: a member keeps what it owns up to its quota, so a join moves only the newcomer's share
 * and a leave only the leaver's shards.
 */

/** A live member as the assignment sees it: a key unique to its session, and its identity. */
export interface AssignedMember {
  /** Unique per session (its slot and session): what the target names. */
  key: string;
  identity: string;
}

/**
 * The target owner (a member's key) of each shard 0..shards−1, or null for every shard when no
 * member is live. `owners[s]` is the key of shard s's current owner when that owner is one of
 * `members`, else null (free, or owned by a session that is not live).
 */
export function assignShards(group: string, shards: number, members: readonly AssignedMember[], owners: readonly (string | null)[]): (string | null)[] {
  const target: (string | null)[] = new Array<string | null>(shards).fill(null);
  const m = members.length;
  if (m === 0) return target;
  const hashes = memberHashes(group, members);
  const held = new Map<string, number[]>(members.map((x) => [x.key, []]));
  for (let s = 0; s < shards; s++) {
    const o = owners[s];
    if (o != null) held.get(o)?.push(s);
  }
  const quota = quotasOf(shards, members, hashes, (key) => held.get(key)!.length);
  const room = new Map<string, number>();
  for (const x of members) {
    const h = hashes.get(x.key)!;
    const q = quota.get(x.key)!;
    const all = held.get(x.key)!;
    // It keeps the shards it ranks highest, up to its quota: all of them when they fit (most
    // members most of the time, and every member after a leave), with no shard scored. Else each
    // score computed once: a sort that scored both sides of each comparison cost most of a turn
    // at N = 4096.
    const keep =
      all.length <= q
        ? all
        : all
            .map((s) => ({ s, score: score(h, s) }))
            .sort((a, b) => b.score - a.score || a.s - b.s)
            .slice(0, q)
            .map((k) => k.s);
    for (const s of keep) target[s] = x.key;
    room.set(x.key, q - keep.length);
  }
  // Every other shard, in order, to the member with room that ranks it highest. By position in
  // `members`, without a lookup by key per shard and member.
  const seeds = members.map((x) => hashes.get(x.key)!);
  const rooms = members.map((x) => room.get(x.key)!);
  for (let s = 0; s < shards; s++) {
    if (target[s] !== null) continue;
    let best = -1;
    let bestScore = -1;
    for (let i = 0; i < m; i++) {
      if (rooms[i]! <= 0) continue;
      const sc = score(seeds[i]!, s);
      if (sc > bestScore || (sc === bestScore && best !== -1 && cmp(members[i]!.key, members[best]!.key) < 0)) {
        best = i;
        bestScore = sc;
      }
    }
    target[s] = members[best]!.key;
    rooms[best]!--;
  }
  return target;
}

/**
 * How many shards each member is assigned: floor(N/M), and one more for the first N mod M in
 * order. The extra shards of the remainder go to those that hold the most now (fewest moves),
 * then by hash: every member orders them alike. `held(key)`: how many shards member `key` owns.
 */
export function quotasOf(
  shards: number,
  members: readonly AssignedMember[],
  hashes: ReadonlyMap<string, number>,
  held: (key: string) => number,
): Map<string, number> {
  const base = Math.floor(shards / members.length);
  const extra = shards % members.length;
  const order = [...members].sort((a, b) => held(b.key) - held(a.key) || hashes.get(b.key)! - hashes.get(a.key)! || cmp(a.key, b.key));
  return new Map(order.map((x, i) => [x.key, base + (i < extra ? 1 : 0)]));
}

/** The members' rendezvous seeds by key (memberHash). */
export function memberHashes(group: string, members: readonly AssignedMember[]): Map<string, number> {
  return new Map(members.map((x) => [x.key, memberHash(group, x.identity, x.key)]));
}

/** A member's 32-bit rendezvous seed: FNV-1a 32 of `group/identity/key`. */
function memberHash(group: string, identity: string, key: string): number {
  let h = 0x811c9dc5;
  for (const ch of `${group}/${identity}/${key}`) {
    const c = ch.codePointAt(0)!;
    h = Math.imul(h ^ (c & 0xff), 0x01000193);
    if (c > 0xff) h = Math.imul(h ^ (c >>> 8), 0x01000193);
  }
  return h >>> 0;
}

/** Rendezvous weight of shard `s` for a member: a 32-bit mix of its seed and the shard (murmur3's finaliser). */
function score(seed: number, s: number): number {
  let h = (seed ^ Math.imul(s + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
