// The one SELECT of a lease row.

/** Columns a reader may find missing in an older table, each read as its default then. */
export interface RowColumns {
  hasAcquireTime: boolean;
  hasSuccessor: boolean;
}

export function selectRowSql({ hasAcquireTime, hasSuccessor }: RowColumns): string {
  return `SELECT holder_identity, fencing_token, renew_time, lease_duration_seconds, ${hasAcquireTime ? 'acquire_time' : '0 AS acquire_time'}, ${hasSuccessor ? 'successor' : "'' AS successor"} FROM leases WHERE name = ?`;
}
