// SQL that reads a value only within a bound, shared by the SQL stores. Their tables are shared
// with other processes or roles that may store a value of any size: one over its bound is never
// handed to JavaScript, so a neighbour's 32 MiB successor costs a candidate nothing but the
// server's or the file's work to measure it (`octet_length` reads the stored size, not the value).

/**
 * Bytes a text value of a lease row may have. An identity is at most 253 characters (4 bytes
 * each at most in UTF-8) and a claim is one identity and a time in JSON: 4 KiB holds either.
 */
export const MAX_TEXT_BYTES = 4096;
/** Bytes a number may have in its text form: a number stored as one is far shorter. */
export const MAX_NUMBER_BYTES = 64;

/**
 * The column's value within `max` bytes; over it, a short note of its size, which no rule
 * accepts (not a number, not a claim's JSON, not this candidate's identity).
 */
export function boundedColumn(column: string, max: number): string {
  return `CASE WHEN octet_length(${column}) <= ${max} THEN ${column} ELSE '(a value of ' || octet_length(${column}) || ' bytes)' END AS ${column}`;
}

/** A column `oversized`: "column: N bytes" for each column over its bound, comma-separated, or NULL. */
export function oversizedColumn(columns: [string, number][]): string {
  const parts = columns.map(([c, max]) => `CASE WHEN octet_length(${c}) > ${max} THEN '${c}: ' || octet_length(${c}) || ' bytes, ' ELSE '' END`);
  return `NULLIF(rtrim(${parts.join(' || ')}, ', '), '') AS oversized`;
}

/** The one line a store tells when a row held values over their bound. */
export function oversizedNotice(lease: string, location: string, oversized: string): string {
  return `the lease ${lease} in ${location} holds values over their bound (${oversized}; at most ${MAX_TEXT_BYTES} bytes for a text, ${MAX_NUMBER_BYTES} for a number): each was read as a note of its size, never loaded, and no rule accepts it (a successor claim over it is no claim)`;
}
