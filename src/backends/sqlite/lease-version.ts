import type Database from 'better-sqlite3';

// The leases' write counts (docs/sqlite.md, "Versions"). A row's version was once only the
// digest of its values, so a row written A, then B, then A again gave version A back, and a
// compare-and-swap that read A before both writes succeeded: the "a version never repeats"
// invariant (DESIGN.md) did not hold for that store. The elector never writes such a sequence
// (every renewal moves renew_time), but the store's contract is for every caller.
//
// So each lease name has a count of its writes in a table of its own, `lease_versions`, moved by
// triggers on every INSERT and UPDATE of `leases`: any writer's write moves it (the tutorial's
// Python candidates and a sqlite3 shell included, which know nothing of it), a write of the same
// values too. A deleted lease keeps its count, so a version read before a delete and a re-create
// never comes back. The count is not a column of `leases`: a column added there goes last, after
// `successor`, and a write that leaves it alone makes SQLite walk a neighbour's huge successor
// value to copy it (32 MiB read, test/sqlite/oversized-values.test.ts); the triggers read only
// NEW.name, the table's first column.

export const LEASE_VERSIONS_TABLE = 'lease_versions';

/**
 * The version column a row select reads: the name's write count; 0 for a row not written since
 * the table was added (as a reader of a file without it reads), 'x' if a neighbour stored
 * something other than an integer there (read bounded, and never equal to a count).
 */
export const WRITE_COUNT_SQL = `coalesce((SELECT CASE WHEN typeof(v.version) = 'integer' THEN v.version ELSE 'x' END FROM ${LEASE_VERSIONS_TABLE} AS v WHERE v.name = leases.name), 0)`;

const COUNT = `INSERT INTO ${LEASE_VERSIONS_TABLE} (name, version) VALUES (NEW.name, 1) ON CONFLICT (name) DO UPDATE SET version = version + 1;`;

/** Creates the table and its triggers when missing; run inside the migration's BEGIN IMMEDIATE transaction, after `leases` exists. */
export function migrateLeaseVersion(db: Database.Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${LEASE_VERSIONS_TABLE} (name TEXT PRIMARY KEY, version INTEGER NOT NULL)`);
  db.exec(`CREATE TRIGGER IF NOT EXISTS leases_version_insert AFTER INSERT ON leases FOR EACH ROW BEGIN
  ${COUNT}
END`);
  db.exec(`CREATE TRIGGER IF NOT EXISTS leases_version_update AFTER UPDATE ON leases FOR EACH ROW BEGIN
  ${COUNT}
END`);
}

/** Whether a file has the write counts (a reader never creates them: it reads 0 without). */
export function hasLeaseVersions(db: Database.Database): boolean {
  return db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?").pluck().get(LEASE_VERSIONS_TABLE) === 1;
}
