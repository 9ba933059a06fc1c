/**
 * How long each shard went without an owner as the apps see it: fed one snapshot at a time
 * (every member's owned shards, read as the apps read them, at one moment), it notes, for each
 * shard that no member listed for a while, which member listed it last before the gap, which
 * one first after it, and how long the gap lasted (from the last snapshot that listed it to the
 * first that listed it again; a sampling period longer than the truth at most).
 */
export interface ShardGap {
  shard: number;
  from: string;
  to: string;
  /** The last snapshot that listed it before the gap (ms since the epoch). */
  lastOwnedAt: number;
  /** The first that listed it again. */
  ownedAgainAt: number;
  ms: number;
}

export class ShardGaps {
  readonly gaps: ShardGap[] = [];
  /** Snapshots taken so far: a failure tells whether the sampler ran at all. */
  samples = 0;
  /**
   * The last snapshot. A test that waits for an end state should judge it here, not on reads of
   * its own: a read of its own can see the move that ends a gap before the sampler's next
   * snapshot does, and the gap is then not recorded yet when the test looks.
   */
  latest: ReadonlyMap<string, readonly number[]> | null = null;
  /** Each shard's owner in the last snapshot that listed it, and when. */
  private readonly last = new Map<number, { id: string; at: number; listed: boolean }>();

  /** One snapshot: member id -> the shards it owns now. */
  observe(at: number, owners: ReadonlyMap<string, readonly number[]>): void {
    this.samples++;
    this.latest = owners;
    const now = new Map<number, string>();
    for (const [id, shards] of owners) for (const s of shards) now.set(s, id);
    for (const [s, seen] of this.last) if (!now.has(s) && seen.listed) this.last.set(s, { ...seen, listed: false });
    for (const [s, id] of now) {
      const seen = this.last.get(s);
      if (seen && !seen.listed) this.gaps.push({ shard: s, from: seen.id, to: id, lastOwnedAt: seen.at, ownedAgainAt: at, ms: at - seen.at });
      this.last.set(s, { id, at, listed: true });
    }
  }

  /** The gaps that ended with member `to` owning the shard, after `since`. */
  movedTo(to: string, since: number): ShardGap[] {
    return this.gaps.filter((g) => g.to === to && g.ownedAgainAt >= since);
  }
}
