/**
 * What the shard groups' bench (bench/scenarios/shards.ts) computes from the members'
 * shards.json files as it saw them: who owns what, whether the group is balanced, how many
 * shards a change moved, and when each shard was owned again. Pure: the files are read by
 * bench/lib/shard-files.ts; here only their versions, each with the `updatedAt` its member
 * wrote (so the times are the members' own, not when the bench got round to reading).
 */

/** One version of a member's shards.json. */
export interface FileVersion {
  /** Its `updatedAt`, ms since the epoch: when the member wrote it. */
  at: number;
  /** The shards it lists, ascending. */
  owned: readonly number[];
  /** Its `validUntil` (ms), null while the member has no session. */
  validUntil: number | null;
}

/** The shards a version says its member owns at `now`, by the app's rule: listed, and validUntil still ahead. */
export const ownedAt = (v: FileVersion | undefined, now: number): readonly number[] => (v && v.validUntil !== null && v.validUntil > now ? v.owned : []);

/** Each shard's owners in the members' latest versions at `now` (more than one would be a safety bug). */
export function ownersOf(latest: ReadonlyMap<string, FileVersion | undefined>, now: number): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const [id, v] of latest) for (const s of ownedAt(v, now)) out.set(s, [...(out.get(s) ?? []), id]);
  return out;
}

/**
 * Whether the members `ids` own every one of the `shards` shards exactly once between them, each
 * floor(N/M) or ceil(N/M) (docs/design.md, "Assignment").
 */
export function balanced(latest: ReadonlyMap<string, FileVersion | undefined>, ids: readonly string[], shards: number, now: number): boolean {
  const lo = Math.floor(shards / ids.length);
  const hi = Math.ceil(shards / ids.length);
  const seen = new Set<number>();
  for (const id of ids) {
    const owned = ownedAt(latest.get(id), now);
    if (owned.length < lo || owned.length > hi) return false;
    for (const s of owned) {
      if (seen.has(s)) return false;
      seen.add(s);
    }
  }
  return seen.size === shards;
}

/** Shard → its one owner, from a balanced state (ownersOf's first owner of each). */
export const ownerMap = (owners: ReadonlyMap<number, string[]>): Map<number, string> => new Map([...owners].map(([s, ids]) => [s, ids[0]!]));

/** How many shards have another owner after than before (a shard owned by nobody on one side counts as moved). */
export function movedShards(before: ReadonlyMap<number, string>, after: ReadonlyMap<number, string>, shards: number): number {
  let moved = 0;
  for (let s = 0; s < shards; s++) if (before.get(s) !== after.get(s)) moved++;
  return moved;
}

/**
 * When a member's current set of shards began: the `at` of the first version of the last run of
 * versions that list the same shards (renewals rewrite the file with the same list). Undefined
 * for a member with no version.
 */
export function ownedSince(versions: readonly FileVersion[]): number | undefined {
  if (versions.length === 0) return undefined;
  const last = versions.at(-1)!.owned;
  let i = versions.length - 1;
  while (i > 0 && sameList(versions[i - 1]!.owned, last)) i--;
  return versions[i]!.at;
}

/**
 * For each of `shards`: the first time a member other than `gone` listed it in a version written
 * at or after `since` (undefined while none has). The members' versions are in the order they
 * were written.
 */
export function ownedAgainAt(
  history: ReadonlyMap<string, readonly FileVersion[]>,
  shards: readonly number[],
  gone: string,
  since: number,
): Map<number, number | undefined> {
  const out = new Map<number, number | undefined>(shards.map((s) => [s, undefined]));
  for (const [id, versions] of history) {
    if (id === gone) continue;
    for (const v of versions) {
      if (v.at < since) continue;
      for (const s of v.owned) {
        if (!out.has(s)) continue;
        const t = out.get(s);
        if (t === undefined || v.at < t) out.set(s, v.at);
      }
    }
  }
  return out;
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
