import type Database from 'better-sqlite3';

// The leases table's write counter (docs/sqlite.md, "Versions"). A row's version was once only
// the digest of its values, so a row written A, then B, then A again gave version A back, and a
// compare-and-swap that read A before both writes succeeded: the "a version never repeats"
// invariant (DESIGN.md) did not hold for that store. The elector never writes such a sequence
// (every renewal moves renew_time), but the store's contract is for every caller.
//
// So every row carries `write_version`, drawn from a counter in the file by triggers on every
// INSERT and on every UPDATE that leaves it alone: any writer's write moves it (the tutorial's
// Python candidates and a sqlite3 shell included, which know nothing of it), a write of the same
// values too. The counter only grows and survives deletes, so a version read before a delete
// and a re-create never comes back. The group records do the same (group-table.ts).

export const LEASE_VERSION_COLUMN = 'write_version';
const COUNTER_TABLE = 'leases_version';

/** Past the largest version any row holds if someone deleted the counter's row. */
const DRAW = `INSERT INTO ${COUNTER_TABLE} (id, last) VALUES (1, (SELECT coalesce(max(${LEASE_VERSION_COLUMN}), 0) FROM leases) + 1)
    ON CONFLICT (id) DO UPDATE SET last = last + 1;
  UPDATE leases SET ${LEASE_VERSION_COLUMN} = (SELECT last FROM ${COUNTER_TABLE} WHERE id = 1) WHERE rowid = NEW.rowid;`;

/**
 * Adds the column, the counter and its triggers when missing; run inside the migration's
 * BEGIN IMMEDIATE transaction, after the leases table exists.
 */
export function migrateLeaseVersion(db: Database.Database, columns: readonly string[]): void {
  if (!columns.includes(LEASE_VERSION_COLUMN)) {
    db.exec(`ALTER TABLE leases ADD COLUMN ${LEASE_VERSION_COLUMN} INTEGER NOT NULL DEFAULT 0`);
  }
  db.exec(`CREATE TABLE IF NOT EXISTS ${COUNTER_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL)`);
  db.exec(`CREATE TRIGGER IF NOT EXISTS leases_version_insert AFTER INSERT ON leases FOR EACH ROW BEGIN
  ${DRAW}
END`);
  // Only when the write left the column alone: the trigger's own UPDATE sets it, so it never
  // fires itself again, even with recursive_triggers on.
  db.exec(`CREATE TRIGGER IF NOT EXISTS leases_version_update AFTER UPDATE ON leases FOR EACH ROW WHEN NEW.${LEASE_VERSION_COLUMN} IS OLD.${LEASE_VERSION_COLUMN} BEGIN
  ${DRAW}
END`);
}
