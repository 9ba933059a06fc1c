// The one SELECT of a lease row, with every value bounded in SQL. The table is shared with other
// processes that may store anything in any column (SQLite keeps a text or a blob of any size in
// a column of any type): a value over its bound is never handed to JavaScript, so a neighbour's
// 32 MiB successor costs a candidate nothing but the bytes SQLite reads to measure it.

/**
 * Bytes a text value of the row may have. An identity is at most 253 characters (4 bytes each
 * at most in UTF-8) and a claim is one identity and a time in JSON: 4 KiB holds either with room.
 */
export const MAX_TEXT_BYTES = 4096;
/** Bytes a number may have in its text form: a number SQLite stores as one is far shorter. */
export const MAX_NUMBER_BYTES = 64;

/** Columns a reader may find missing in an older table, each read as its default then. */
export interface RowColumns {
  hasAcquireTime: boolean;
  hasSuccessor: boolean;
}

/**
 * `octet_length` reads a value's size from the record without loading it: the value itself is
 * read only when within the bound. Over it, the column reads as a short note with its size,
 * which no rule accepts (not a number, not a claim's JSON, not an identity: a holder over the
 * bound is someone else, never this candidate).
 */
function bounded(column: string, max: number): string {
  return `CASE WHEN octet_length(${column}) <= ${max} THEN ${column} ELSE '(a value of ' || octet_length(${column}) || ' bytes)' END AS ${column}`;
}

/** "column: N bytes" for each column over its bound, comma-separated, or NULL. */
function oversized(columns: [string, number][]): string {
  const parts = columns.map(([c, max]) => `CASE WHEN octet_length(${c}) > ${max} THEN '${c}: ' || octet_length(${c}) || ' bytes, ' ELSE '' END`);
  return `NULLIF(rtrim(${parts.join(' || ')}, ', '), '') AS oversized`;
}

export function selectRowSql({ hasAcquireTime, hasSuccessor }: RowColumns): string {
  const limits: [string, number][] = [
    ['holder_identity', MAX_TEXT_BYTES],
    ['fencing_token', MAX_NUMBER_BYTES],
    ['renew_time', MAX_NUMBER_BYTES],
    ['lease_duration_seconds', MAX_NUMBER_BYTES],
  ];
  if (hasAcquireTime) limits.push(['acquire_time', MAX_NUMBER_BYTES]);
  if (hasSuccessor) limits.push(['successor', MAX_TEXT_BYTES]);
  const columns = limits.map(([c, max]) => bounded(c, max));
  if (!hasAcquireTime) columns.push('0 AS acquire_time');
  if (!hasSuccessor) columns.push("'' AS successor");
  return `SELECT ${columns.join(', ')}, ${oversized(limits)} FROM leases WHERE name = ?`;
}
