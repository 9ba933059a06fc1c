/**
 * The SQL stores' shard-group table (SQLite's group-table.ts, PostgreSQL's group-store.ts): one
 * row per record, keyed by these columns; the schemas are in docs/sqlite.md and docs/postgres.md.
 */
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
