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
  return notifyTrigger(fn, channelName(schema, table), 'name');
}

/**
 * The trigger function both tables' triggers call: it notifies `channel` with the written row's
 * `column` (the lease's name, the group's), except in a transaction that notifies after its
 * commit itself (NOTIFIES_AFTER_COMMIT).
 */
function notifyTrigger(fn: string, channel: string, column: string): string {
  return `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF current_setting('${NOTIFIES_AFTER_COMMIT}', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('${channel}', CASE WHEN TG_OP = 'DELETE' THEN OLD.${column} ELSE NEW.${column} END);
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
 * The shard groups' table (docs/design.md, "Shard groups"; group-store.ts), in the lease table's
 * schema: a table of its own, so no lease's name can meet a group record's.
 */
export const GROUP_TABLE = 'lease_groups';

/** The groups table's trigger functions: named after its channel, as the leases table's. */
export function groupFunctions(schema: string): { notify: string; version: string } {
  const channel = channelName(schema, GROUP_TABLE);
  return { notify: `"${schema}"."${channel}"`, version: `"${schema}"."${channel}_version"` };
}

/**
 * Statements that make the groups table (in one transaction): the table; a trigger that gives
 * every written row a new version, the writing transaction's id, whoever writes it (a version
 * read from a committed row was written by another transaction than any later state of that
 * row, so it never comes back, across deletes and re-creates); and the notifying trigger, as the
 * leases table's, with the group's name as its payload.
 */
export function groupCreateStatements(schema: string): string[] {
  const qualified = `"${schema}"."${GROUP_TABLE}"`;
  const fn = groupFunctions(schema);
  return [
    `CREATE TABLE IF NOT EXISTS ${qualified} (
  group_name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('group', 'member', 'shard')),
  idx INTEGER NOT NULL,
  holder_identity TEXT NOT NULL DEFAULT '',
  session BIGINT,
  state TEXT,
  renew_time_ms BIGINT,
  lease_duration_seconds DOUBLE PRECISION,
  token BIGINT,
  owner_slot INTEGER,
  owner_session BIGINT,
  acquire_time_ms BIGINT,
  shards INTEGER,
  created_at_ms BIGINT,
  version BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (group_name, kind, idx)
)`,
    `CREATE OR REPLACE FUNCTION ${fn.version}() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  NEW.version := txid_current();
  RETURN NEW;
END
$f$`,
    `DROP TRIGGER IF EXISTS leasehold_version ON ${qualified}`,
    `CREATE TRIGGER leasehold_version BEFORE INSERT OR UPDATE ON ${qualified} FOR EACH ROW EXECUTE FUNCTION ${fn.version}()`,
    notifyTrigger(fn.notify, channelName(schema, GROUP_TABLE), 'group_name'),
    `DROP TRIGGER IF EXISTS leasehold_notify ON ${qualified}`,
    `CREATE TRIGGER leasehold_notify AFTER INSERT OR UPDATE OR DELETE ON ${qualified} FOR EACH ROW EXECUTE FUNCTION ${fn.notify}()`,
  ];
}

/**
 * The groups table's statements as one statement, for leasehold to run on its one connection
 * (shared with the elector's statements, so never a BEGIN ... COMMIT of several): under the
 * advisory lock that creating a table takes, and only while the table is missing.
 */
export function groupCreateBlock(schema: string): string {
  const body = groupCreateStatements(schema)
    .map((s) => `    EXECUTE $q$${s}$q$;`)
    .join('\n');
  return `DO $leasehold$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('leasehold:${schema}.${GROUP_TABLE}'));
  IF to_regclass('"${schema}"."${GROUP_TABLE}"') IS NULL THEN
${body}
  END IF;
END
$leasehold$`;
}

/** The grants a role needs on a table. */
function grantsOn(schema: string, tables: string[], role: string): string[] {
  return [
    ...(schema === 'public' ? [] : [`GRANT USAGE ON SCHEMA "${schema}" TO "${role}";`]),
    ...tables.map((t) => `GRANT SELECT, INSERT, UPDATE ON "${schema}"."${t}" TO "${role}";`),
  ];
}

/**
 * What an administrator runs for a role without DDL rights: everything, in one transaction,
 * then the grants. The ALTER TABLE does nothing to a table just created; it brings a table
 * made by an earlier leasehold up to date, so the one script serves both. The shard groups'
 * table comes with it (unless the lease table itself has that name: then groups cannot be used).
 */
export function adminScript(schema: string, table: string, role: string): string {
  const groups = table === GROUP_TABLE ? [] : groupCreateStatements(schema);
  return [
    'BEGIN;',
    ...createStatements(schema, table).map((s) => `${s};`),
    `${addSuccessorStatement(schema, table)};`,
    ...groups.map((s) => `${s};`),
    'COMMIT;',
    ...grantsOn(schema, groups.length > 0 ? [table, GROUP_TABLE] : [table], role),
  ].join('\n');
}

/** What an administrator runs to make the groups table alone, for a role without DDL rights. */
export function groupAdminScript(schema: string, role: string): string {
  return ['BEGIN;', ...groupCreateStatements(schema).map((s) => `${s};`), 'COMMIT;', ...grantsOn(schema, [GROUP_TABLE], role)].join('\n');
}
