/**
 * The SQL that makes a lease table, as leasehold runs it and as docs/postgres.md prints it for
 * an administrator (a test checks the page against this function and runs the page's SQL):
 * the table, a trigger function that notifies the table's channel with the lease's name only,
 * and the trigger. DROP TRIGGER IF EXISTS + CREATE TRIGGER rather than CREATE OR REPLACE
 * TRIGGER (PostgreSQL 14 or later): EXECUTE FUNCTION needs PostgreSQL 11, nothing here newer.
 */
import { channelName } from './notify.js';

/** The trigger function: named after the channel, so two tables never share (or replace) one. */
export function notifyFunction(schema: string, table: string): string {
  return `"${schema}"."${channelName(schema, table)}"`;
}

/**
 * Set by leasehold's own sessions: the trigger then leaves the notification to them, and they
 * send it after their write has committed. A notification sent inside the write's transaction
 * is queued at commit, and with the server's NOTIFY queue full (any role that may connect can
 * fill it) the commit fails: the election would stop. Other writers are still notified for.
 */
export const NOTIFIES_AFTER_COMMIT = 'leasehold.notifies_after_commit';

/**
 * The trigger function's statement (also how leasehold brings an earlier body up to date, under
 * `fn`: the earliest leasehold named its function after the table, not the channel).
 */
export function notifyFunctionStatement(schema: string, table: string, fn = notifyFunction(schema, table)): string {
  return `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF current_setting('${NOTIFIES_AFTER_COMMIT}', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('${channelName(schema, table)}', CASE WHEN TG_OP = 'DELETE' THEN OLD.name ELSE NEW.name END);
  RETURN NULL;
END
$f$`;
}

/** Statements leasehold runs to create a missing table (in one transaction). */
export function createStatements(schema: string, table: string): string[] {
  const qualified = `"${schema}"."${table}"`;
  const fn = notifyFunction(schema, table);
  return [
    `CREATE TABLE IF NOT EXISTS ${qualified} (
  name TEXT PRIMARY KEY,
  holder_identity TEXT NOT NULL,
  fencing_token BIGINT NOT NULL,
  renew_time DOUBLE PRECISION NOT NULL,
  lease_duration_seconds DOUBLE PRECISION NOT NULL,
  acquire_time DOUBLE PRECISION NOT NULL DEFAULT 0,
  version BIGINT NOT NULL DEFAULT 1,
  successor TEXT NOT NULL DEFAULT ''
)`,
    notifyFunctionStatement(schema, table),
    `DROP TRIGGER IF EXISTS leasehold_notify ON ${qualified}`,
    `CREATE TRIGGER leasehold_notify AFTER INSERT OR UPDATE OR DELETE ON ${qualified} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
  ];
}

/**
 * Adds the successor claim's column (successor-column.ts) to a table made before it existed.
 * Without it leasehold works as before, less the fast graceful handoff.
 */
export function addSuccessorStatement(schema: string, table: string): string {
  return `ALTER TABLE "${schema}"."${table}" ADD COLUMN IF NOT EXISTS successor TEXT NOT NULL DEFAULT ''`;
}

/**
 * What an administrator runs for a role without DDL rights: everything, in one transaction,
 * then the grants. The ALTER TABLE does nothing to a table just created; it brings a table
 * made by an earlier leasehold up to date, so the one script serves both.
 */
export function adminScript(schema: string, table: string, role: string): string {
  const grants = [
    ...(schema === 'public' ? [] : [`GRANT USAGE ON SCHEMA "${schema}" TO "${role}";`]),
    `GRANT SELECT, INSERT, UPDATE ON "${schema}"."${table}" TO "${role}";`,
  ];
  return ['BEGIN;', ...createStatements(schema, table).map((s) => `${s};`), `${addSuccessorStatement(schema, table)};`, 'COMMIT;', ...grants].join('\n');
}
