/**
 * The Kubernetes cases of the shard groups' bench (`--shard-kube-cases`, bench/options.ts):
 * `NxM` pairs, each a group of N shards measured at M members. The chain (bench/lib/shard-chain.ts)
 * grows one group through its member counts in order, so the pairs become one chain per N, its
 * member counts ascending.
 */

/** Issue 43's Kubernetes cases: N = 256 with M = 8 and 32, N = 4096 with M = 2. */
export const KUBE_CASES_DEFAULT = '256x8,256x32,4096x2';

export interface ShardChainCases {
  shards: number;
  /** Ascending, without repeats. */
  members: number[];
}

/** The bounds of a case, as --shard-sizes and --shard-members have them. */
export const CASE_BOUNDS = { shards: [1, 4096], members: [2, 60] } as const;

/** The chains the pairs name, by N ascending; undefined when the text is not such a list. */
export function parseShardCases(text: string): ShardChainCases[] | undefined {
  const byShards = new Map<number, Set<number>>();
  for (const pair of text.split(',')) {
    const m = /^(\d{1,5})x(\d{1,3})$/.exec(pair);
    if (!m) return undefined;
    const [shards, members] = [Number(m[1]), Number(m[2])];
    const within = (n: number, [lo, hi]: readonly [number, number]) => n >= lo && n <= hi;
    if (!within(shards, CASE_BOUNDS.shards) || !within(members, CASE_BOUNDS.members)) return undefined;
    const ms = byShards.get(shards) ?? new Set<number>();
    if (ms.has(members)) return undefined; // a repeat is a mistake, as in --shard-members
    byShards.set(shards, ms.add(members));
  }
  return [...byShards.entries()].sort(([a], [b]) => a - b).map(([shards, ms]) => ({ shards, members: [...ms].sort((a, b) => a - b) }));
}

/** The cases as given on the command line, back from the chains: `256x8,256x32,4096x2`. */
export const formatShardCases = (chains: readonly ShardChainCases[]): string => chains.flatMap((c) => c.members.map((m) => `${c.shards}x${m}`)).join(',');
