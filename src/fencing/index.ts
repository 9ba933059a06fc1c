/** App-side helpers: read the status volume safely, and check fencing tokens at the resource. */
export { readLeadership, type LeadershipView } from '../status/status-reader.js';
export { FencedSqliteResource, type FencedWrite, type ResourceValue } from './fenced-resource.js';
export { shardFenceKey, MAX_FENCE_KEY_BYTES, type FenceClaim } from './claim.js';
export { DEFAULT_FENCE_TABLE } from './fence-table.js';
export { withSqliteFence, createSqliteFenceTable, sqliteFenceDdl, type SqliteDatabase, type SqliteFenceOptions } from './sqlite-fence.js';
export {
  withPostgresFence,
  createPostgresFenceTable,
  postgresFenceDdl,
  postgresFenceFunctionDdl,
  STALE_TOKEN_SQLSTATE,
  DEFAULT_FENCE_FUNCTION,
  type PgPool,
  type PgClient,
  type PgClientBase,
  type PostgresIsolationLevel,
  type PostgresFenceOptions,
  type PostgresFenceTableOptions,
} from './postgres-fence.js';
export { StaleTokenError } from '../errors.js';
