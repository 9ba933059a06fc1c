/**
 * The SQL stores' shard-group table (SQLite's group-table.ts, PostgreSQL's group-store.ts): one
 * row per record, keyed by these columns; the schemas are in docs/sqlite.md and docs/postgres.md.
 */
import type { ShardRecord } from './group-store.js';

export const GROUP_KEY_COLUMNS = ['group_name', 'kind', 'idx'] as const;

/** A record's values, in the order both stores write them; those another kind does not use are NULL. */
export const GROUP_VALUE_COLUMNS = [
  'holder_identity',
  'session',
  'state',
  'renew_time_ms',
  'lease_duration_seconds',
  'token',
  'owner_slot',
  'owner_session',
  'acquire_time_ms',
  'shards',
  'created_at_ms',
] as const;

/** How a store reads its own row's values, each refusing (InvalidRecordError) what no group store writes. */
export interface GroupRowReaders<V> {
  /** A whole number from 0 to 2^53 − 1. */
  count(column: string, value: V): number;
  /** Null, or milliseconds since the epoch. */
  time(column: string, value: V): Date | null;
}

/** The columns a shard's row holds its record in, as the store's driver gives them. */
export interface ShardColumns<V> {
  owner_slot: V;
  owner_session: V;
  token: V;
  acquire_time_ms: V;
}

/** The shard record a row holds, read by the store's readers: free when it names no owner. */
export function shardOfRow<V>(row: ShardColumns<V>, index: number, holderIdentity: string, read: GroupRowReaders<V>): ShardRecord {
  const free = row.owner_slot === null && row.owner_session === null;
  return {
    kind: 'shard',
    index,
    holderIdentity,
    owner: free ? null : { slot: read.count('owner_slot', row.owner_slot), session: read.count('owner_session', row.owner_session) },
    token: read.count('token', row.token),
    acquireTime: read.time('acquire_time_ms', row.acquire_time_ms),
  };
}
