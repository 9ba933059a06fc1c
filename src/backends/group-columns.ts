/**
 * The SQL stores' shard-group table (SQLite's group-table.ts, PostgreSQL's group-store.ts): one
 * row per record, keyed by these columns; the schemas are in docs/sqlite.md and docs/postgres.md.
 */
import type { GroupHeader, MemberSlot, ShardRecord } from './group-store.js';

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
  /** Refuses `value` of `column`: it is not `rule` (InvalidRecordError naming the row). */
  bad(column: string, value: unknown, rule: string): never;
}

/** The columns the group header's row holds its record in: highWater in `token`, the longest lease announced in `lease_duration_seconds`. */
export interface HeaderColumns<V> {
  shards: V;
  created_at_ms: V;
  token: V;
  lease_duration_seconds: unknown;
}

/** The group header a row at index 0 holds; `token` and `lease_duration_seconds` NULL in rows written before they were kept. */
export function headerOfRow<V>(row: HeaderColumns<V>, index: number, read: GroupRowReaders<V>): GroupHeader {
  if (index !== 0) read.bad('idx', index, '0 (the group header)');
  const longest = row.lease_duration_seconds;
  return {
    kind: 'group',
    index: 0,
    shards: read.count('shards', row.shards),
    createdAt: read.time('created_at_ms', row.created_at_ms) ?? read.bad('created_at_ms', null, 'a time'),
    ...(row.token === null ? {} : { highWater: read.count('token', row.token) }),
    ...(longest === null
      ? {}
      : {
          longestLeaseSeconds:
            typeof longest === 'number' && Number.isFinite(longest) && longest > 0 ? longest : read.bad('lease_duration_seconds', longest, 'a positive number'),
        }),
  };
}

/** The columns a member slot's row holds its record in. */
export interface MemberColumns<V> {
  session: V;
  state: unknown;
  renew_time_ms: V;
  lease_duration_seconds: unknown;
}

/** The member slot a row holds. */
export function memberOfRow<V>(row: MemberColumns<V>, index: number, holderIdentity: string, read: GroupRowReaders<V>): MemberSlot {
  const { state, lease_duration_seconds: duration } = row;
  return {
    kind: 'member',
    index,
    holderIdentity,
    session: read.count('session', row.session),
    state: state === 'active' || state === 'leaving' ? state : read.bad('state', state, '"active" or "leaving"'),
    renewTime: read.time('renew_time_ms', row.renew_time_ms),
    leaseDurationSeconds: typeof duration === 'number' && Number.isFinite(duration) ? duration : read.bad('lease_duration_seconds', duration, 'a number'),
  };
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
