/**
 * What the cluster tier's shard sampler (test/cluster/shard-sampler.ts) judges in the
 * `shards.json` files it reads, kept pure so that shard-ownership.test.ts can show each judgement
 * fails when it should. A file's `owned` counts only while its `validUntil` is ahead when read
 * (the rule apps follow, docs/shards.md).
 */

/** One member's shards.json as read at `at` (epoch ms): shard -> token, only what counted then. */
export interface ShardsRead {
  uid: string;
  identity: string;
  owned: Map<number, number>;
  at: number;
}

/** A shards.json of `group` as it counts at `at`; null for another group's; throws on a file that is not JSON. */
export function parseShards(uid: string, text: string, at: number, group: string): ShardsRead | null {
  const s = JSON.parse(text) as { group?: string; identity?: string; owned?: { shard: number; fencingToken: number }[]; validUntil?: string | null };
  if (s.group !== group) return null;
  const valid = s.validUntil ? Date.parse(s.validUntil) > at : false;
  return { uid, identity: s.identity ?? '?', owned: new Map(valid ? (s.owned ?? []).map((o) => [o.shard, o.fencingToken]) : []), at };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Judges rounds of reads, each round every member's file once, in read order:
 *   - no shard owned by two members at once: two files of one round that list a shard are a
 *     violation only when the file read first still lists it (same token) when read again after
 *     the other, so a move between the two reads is not taken for an overlap (counted instead);
 *   - every shard's token only grows: a file read later that lists a lower token than one already
 *     seen means an old owner still believed after a newer one had taken the shard.
 */
export class OwnershipJudge {
  readonly violations: string[] = [];
  movesBetweenReads = 0;
  /** Each shard's highest token seen, by whom and when. */
  readonly highest = new Map<number, { token: number; identity: string; at: number }>();

  /** One round; `reread(uid)` reads that member's file again, now. */
  round(reads: ShardsRead[], reread: (uid: string) => ShardsRead | null): void {
    for (const r of reads) {
      for (const [shard, token] of r.owned) {
        const h = this.highest.get(shard);
        if (h && token < h.token) {
          this.violations.push(`shard ${shard}: ${r.identity} listed token ${token} at ${iso(r.at)}, after ${h.identity} listed ${h.token} at ${iso(h.at)}`);
        }
        if (!h || token > h.token) this.highest.set(shard, { token, identity: r.identity, at: r.at });
      }
    }
    const first = new Map<number, ShardsRead>();
    for (const r of reads) {
      for (const shard of r.owned.keys()) {
        const f = first.get(shard);
        if (!f) {
          first.set(shard, r);
          continue;
        }
        const again = reread(f.uid);
        if (again && again.owned.get(shard) === f.owned.get(shard)) {
          this.violations.push(
            `shard ${shard}: owned by ${f.identity} (token ${f.owned.get(shard)}, read at ${iso(f.at)} and again at ${iso(again.at)}) and by ${r.identity} (token ${r.owned.get(shard)}, read at ${iso(r.at)})`,
          );
        } else this.movesBetweenReads++;
      }
    }
  }
}
