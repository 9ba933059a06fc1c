/**
 * Follows the shards.json of every member of a shard group for the shard groups' bench
 * (bench/scenarios/shards.ts): every few ms it stats each file and reads it only when it was
 * replaced (the sidecar renames a new file into place: a new inode), so 33 members with 1,024
 * shards each cost the bench a stat each per poll, not a parse. Each version read is kept with
 * the `updatedAt` its member wrote (bench/lib/shard-settle.ts computes the figures from them).
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { FileVersion } from './shard-settle.js';

export interface FollowedMember {
  id: string;
  statusDir: string;
}

interface ShardsJson {
  owned: { shard: number }[];
  validUntil: string | null;
  updatedAt: string;
}

export class ShardFiles {
  /** Every version seen since the last forget(), per member, in the order read. */
  readonly history = new Map<string, FileVersion[]>();
  private readonly stamp = new Map<string, string>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly members: () => readonly FollowedMember[],
    everyMs = 5,
  ) {
    this.timer = setInterval(() => this.poll(), everyMs);
  }

  /** Reads now whatever changed (also called by the bench before it judges a state). */
  poll(): void {
    for (const m of this.members()) {
      const file = join(m.statusDir, 'shards.json');
      let stamp: string;
      try {
        const s = statSync(file, { bigint: true });
        stamp = `${s.ino}:${s.mtimeNs}:${s.size}`;
      } catch {
        continue; // not written yet
      }
      if (this.stamp.get(m.id) === stamp) continue;
      let parsed: ShardsJson;
      try {
        parsed = JSON.parse(readFileSync(file, 'utf8')) as ShardsJson;
      } catch {
        continue; // replaced between the stat and the read: the next poll reads the new one
      }
      this.stamp.set(m.id, stamp);
      const v: FileVersion = {
        at: Date.parse(parsed.updatedAt),
        owned: parsed.owned.map((o) => o.shard).sort((a, b) => a - b),
        validUntil: parsed.validUntil === null ? null : Date.parse(parsed.validUntil),
      };
      const versions = this.history.get(m.id) ?? [];
      if (versions.at(-1)?.at !== v.at) versions.push(v);
      this.history.set(m.id, versions);
    }
  }

  /** Each member's latest version. */
  latest(ids: readonly string[] = this.members().map((m) => m.id)): Map<string, FileVersion | undefined> {
    return new Map(ids.map((id) => [id, this.history.get(id)?.at(-1)]));
  }

  /** Drops every member's versions but the latest: a new step's figures start from there. */
  forget(): void {
    for (const [id, versions] of this.history) this.history.set(id, versions.slice(-1));
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
