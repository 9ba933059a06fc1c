/**
 * The fence table's name (and the SQL function's): checked against the SQL identifier rule and
 * quoted, since a name is put into statements as text (it cannot be a bound parameter).
 */
import { InvalidConfigError } from '../errors.js';
import { escapeControl } from '../util/escape-control.js';

/** One row per key: the highest token accepted for it. */
export const DEFAULT_FENCE_TABLE = 'leasehold_fences';

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;
const IDENT_RULE = 'a lowercase SQL identifier (letters, digits, _; at most 63 characters; not starting with a digit)';
const SQLITE_RULE = `must be ${IDENT_RULE}`;
const POSTGRES_RULE = `must be name or schema.name, each ${IDENT_RULE}`;

/** `"leasehold_fences"`: the SQLite table, quoted. */
export function sqliteFenceTable(table: unknown = DEFAULT_FENCE_TABLE): string {
  if (typeof table !== 'string' || !IDENT.test(table)) {
    throw new InvalidConfigError(`invalid fence table ${describeName(table)}: ${SQLITE_RULE}`, { field: 'table', rule: SQLITE_RULE });
  }
  return `"${table}"`;
}

/** Where a name without a schema lives: the lease store's rule too (backends/postgres/config.ts). */
export const DEFAULT_FENCE_SCHEMA = 'public';

/**
 * A PostgreSQL name, `name` or `schema.name`, qualified and quoted: `"public"."leasehold_fences"`.
 * Never left to `search_path`: writers whose paths differ (the `"$user"` schema comes first by
 * default, a session's temporary tables before all) would each check a fence of their own.
 */
export function postgresName(what: 'table' | 'function', value: unknown): string {
  const parts = typeof value === 'string' ? value.split('.') : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((p) => IDENT.test(p))) {
    throw new InvalidConfigError(`invalid fence ${what} ${describeName(value)}: ${POSTGRES_RULE}`, { field: what, rule: POSTGRES_RULE });
  }
  return (parts.length === 1 ? [DEFAULT_FENCE_SCHEMA, ...parts] : parts).map((p) => `"${p}"`).join('.');
}

function describeName(name: unknown): string {
  if (typeof name !== 'string') return name === null ? 'null' : typeof name;
  return escapeControl(JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name));
}
