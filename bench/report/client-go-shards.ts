/**
 * client-go's way of sharding, computed for the same N shards and M members as the shard groups'
 * bench measures (bench/report/shard-report.ts, shard-goals.ts): one Lease per shard, and every
 * member runs client-go's leader election on each of them, as Knative's buckets do. With the
 * same timings, every retry period (2 s: 30 a minute) each shard's holder renews it with one
 * UPDATE (client-go's fast path sends no GET first while its lease is valid:
 * `tryAcquireOrRenew` in tools/leaderelection, v0.37 as test/interop builds it), and each of the M − 1 others GETs it to see
 * whether it is free. Per minute, for the group: N × 30 UPDATEs and N × (M − 1) × 30 GETs,
 * N × 30 × M requests; each member sends N × 30 of them. No LIST and no watch.
 */
import { DEFAULT_T } from '../lib/shard-chain.js';

/** Retry periods a minute with the default timings: 30. */
export const RETRIES_PER_MIN = 60_000 / DEFAULT_T.retryMs;

export interface ClientGoGroupCost {
  /** The holders' renewals a minute: N × 30. */
  updates: number;
  /** The other members' reads a minute: N × (M − 1) × 30. */
  gets: number;
  /** Every request a minute for the group. */
  requests: number;
}

export function clientGoGroupPerMin(shards: number, members: number): ClientGoGroupCost {
  const updates = shards * RETRIES_PER_MIN;
  const gets = shards * (members - 1) * RETRIES_PER_MIN;
  return { updates, gets, requests: updates + gets };
}

/** The model in a sentence, for the doc. */
export const CLIENT_GO_MODEL = [
  "client-go's way, computed: one Lease per shard, and every member runs client-go's leader",
  "election on each (as Knative's buckets do): every retry period the holder renews it with one",
  "UPDATE (client-go's fast path, no GET first) and each of the M − 1 others GETs it, so",
  `N × ${RETRIES_PER_MIN} UPDATEs and N × (M − 1) × ${RETRIES_PER_MIN} GETs a minute for the group, N × ${RETRIES_PER_MIN} × M requests`,
  `(N × ${RETRIES_PER_MIN} per member); no LIST, no watch.`,
].join('\n');
