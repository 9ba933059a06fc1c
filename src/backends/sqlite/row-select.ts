import { WRITE_COUNT_SQL } from './lease-version.js';
import { MAX_NUMBER_BYTES, MAX_TEXT_BYTES, boundedColumn, oversizedColumn } from '../bounded-sql.js';

// The one SELECT of a lease row, with every value bounded in SQL (bounded-sql.ts). SQLite keeps a
// text or a blob of any size in a column of any type, so every column is bounded, numbers too.

/** Columns a reader may find missing in an older table, each read as its default then. */
export interface RowColumns {
  hasAcquireTime: boolean;
  hasSuccessor: boolean;
  /** lease-version.ts: the `lease_versions` table, which a file no leasehold of this version has written yet lacks. */
  hasWriteVersion: boolean;
}

export function selectRowSql({ hasAcquireTime, hasSuccessor, hasWriteVersion }: RowColumns): string {
  const limits: [string, number][] = [
    ['holder_identity', MAX_TEXT_BYTES],
    ['fencing_token', MAX_NUMBER_BYTES],
    ['renew_time', MAX_NUMBER_BYTES],
    ['lease_duration_seconds', MAX_NUMBER_BYTES],
  ];
  if (hasAcquireTime) limits.push(['acquire_time', MAX_NUMBER_BYTES]);
  if (hasSuccessor) limits.push(['successor', MAX_TEXT_BYTES]);
  const columns = limits.map(([c, max]) => boundedColumn(c, max));
  if (!hasAcquireTime) columns.push('0 AS acquire_time');
  if (!hasSuccessor) columns.push("'' AS successor");
  columns.push(hasWriteVersion ? `${WRITE_COUNT_SQL} AS write_version` : '0 AS write_version');
  return `SELECT ${columns.join(', ')}, ${oversizedColumn(limits)} FROM leases WHERE name = ?`;
}
