import type Database from 'better-sqlite3';
import { ConflictError, InvalidRecordError } from '../../errors.js';
import { escapeControl } from '../../util/escape-control.js';
import { MAX_NUMBER_BYTES, MAX_TEXT_BYTES, boundedColumn, oversizedColumn } from '../bounded-sql.js';
import { recordKey, type GroupRecord } from '../group-store.js';
import { GROUP_KEY_COLUMNS, GROUP_VALUE_COLUMNS, headerOfRow, memberOfRow, shardOfRow } from '../group-columns.js';

// The shard groups' records in the SQLite file (docs/sqlite.md, "The group records"): a table of
// their own, `lease_groups`, so no lease's name can meet a group record's, keyed by (group_name,
// kind, idx). The store (store.ts) runs everything here on its one connection, inside its
// BEGIN IMMEDIATE transactions and its check that the path still names the opened file.
//
// Versions: a counter kept in the file (`lease_groups_version`), drawn by triggers on every
// INSERT and on every UPDATE that leaves `version` alone, so any writer's write moves it, a
// sqlite3 shell's included, and a write of the same values too. It only grows, and a deleted
// record's versions are never drawn again: a version read before a delete and a re-create
// never comes back. The store adds its own file generation to what it hands out (store.ts).
//
// Changes (GroupStore.readGroupChanges): the same counter is the change sequence. SQLite has one
// writer at a time, so versions are drawn in the order their transactions commit, and a reader
// that saw the counter at c has seen every row whose version is ≤ c: the rows past c are all
// that changed since, found through an index on (group_name, version). Files made before the
// index get it the next time a group store opens them (GROUP_SCHEMA's statements are each
// idempotent, and hasGroupSchema asks for the index too).

export const GROUP_TABLE = 'lease_groups';
const VERSION_TABLE = 'lease_groups_version';
/** Per group, the version drawn at its last deletion of a record (the deletion mark: changesSince). */
const DELETIONS_TABLE = 'lease_groups_deletions';
const DELETION_TRIGGER = `${GROUP_TABLE}_deletion`;
const KEY_MOVE_TRIGGER = `${GROUP_TABLE}_key_move`;
const MARK_SEED_TRIGGER = `${GROUP_TABLE}_mark_seed`;
const VERSION_INDEX = 'lease_groups_by_version';
/** The index that finds a group's rows written since a version (changesSince). */
export const CHANGES_INDEX = 'lease_groups_changes';
// Neither index does the other's job. max(version) over the file (the draw) uses only an index
// led by version: on (group_name, version) it walks the whole index (50 groups of 4096: 8.6 ms a
// draw, not 1 µs). A group's rows past a version on (version) alone read every group's newer rows.

/**
 * Draws the next version: from the counter row, or, if someone deleted that row, from past the
 * largest version any record still holds.
 */
const DRAW = `INSERT INTO ${VERSION_TABLE} (id, last) VALUES (1, (SELECT coalesce(max(version), 0) FROM ${GROUP_TABLE}) + 1)
    ON CONFLICT (id) DO UPDATE SET last = last + 1;
  UPDATE ${GROUP_TABLE} SET version = (SELECT last FROM ${VERSION_TABLE} WHERE id = 1) WHERE rowid = NEW.rowid;`;

/** A version past the file's counter: past every version and mark drawn from it so far. */
const PAST_COUNTER = `(SELECT coalesce(max(last), 0) FROM ${VERSION_TABLE}) + 1`;

/**
 * Marks a deletion from OLD's group: draws a version, as a write does, and makes it the group's
 * mark, past its last one even if the counter was reset by hand.
 */
const MARK_DELETION = `INSERT INTO ${VERSION_TABLE} (id, last) VALUES (1, (SELECT coalesce(max(version), 0) FROM ${GROUP_TABLE}) + 1)
    ON CONFLICT (id) DO UPDATE SET last = last + 1;
  INSERT INTO ${DELETIONS_TABLE} (group_name, last) VALUES (OLD.group_name, (SELECT last FROM ${VERSION_TABLE} WHERE id = 1))
    ON CONFLICT (group_name) DO UPDATE SET last = max(excluded.last, last + 1);`;

/** The tables and triggers, each created only when missing; run inside a BEGIN IMMEDIATE transaction. */
export const GROUP_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS ${GROUP_TABLE} (
    group_name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('group', 'member', 'shard')),
    idx INTEGER NOT NULL,
    holder_identity TEXT NOT NULL DEFAULT '',
    session INTEGER,
    state TEXT,
    renew_time_ms INTEGER,
    lease_duration_seconds REAL,
    token INTEGER,
    owner_slot INTEGER,
    owner_session INTEGER,
    acquire_time_ms INTEGER,
    shards INTEGER,
    created_at_ms INTEGER,
    version INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (group_name, kind, idx)
  )`,
  `CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL)`,
  // The draw's max(version) is evaluated on every write, the counter row there or not: without
  // an index it reads every row of every group, and a batch of N writes reads N times N rows
  // (4096 shards: 10 s, not milliseconds). With it, max() is one step down the index.
  `CREATE INDEX IF NOT EXISTS ${VERSION_INDEX} ON ${GROUP_TABLE} (version)`,
  `CREATE TRIGGER IF NOT EXISTS ${GROUP_TABLE}_version_insert AFTER INSERT ON ${GROUP_TABLE} FOR EACH ROW BEGIN
  ${DRAW}
END`,
  // Only when the write left `version` alone: the trigger's own UPDATE sets it, so it never fires
  // itself again, even with recursive_triggers on.
  `CREATE TRIGGER IF NOT EXISTS ${GROUP_TABLE}_version_update AFTER UPDATE ON ${GROUP_TABLE} FOR EACH ROW WHEN NEW.version IS OLD.version BEGIN
  ${DRAW}
END`,
  `CREATE INDEX IF NOT EXISTS ${CHANGES_INDEX} ON ${GROUP_TABLE} (group_name, version)`,
  // A deletion leaves no row to bring as a change: it draws a version of its own and marks its
  // group with it, so a read shows a deletion since the last by a mark one step down an index,
  // where a count of the group's records is a pass over them (4,100 entries at N = 4096, in
  // every read and at every change the watch sees). Any writer's deletion, a sqlite3 shell's
  // included: the trigger is the file's. A group's mark only grows, even past a counter reset
  // by hand (its row deleted). A REPLACE that conflicts on the key fires it only with
  // recursive_triggers on, and costs a full read then; without, the key's new row is a change.
  // What no mark shows (docs/design.md): a REPLACE by hand that conflicts on the rowid.
  `CREATE TABLE IF NOT EXISTS ${DELETIONS_TABLE} (group_name TEXT PRIMARY KEY, last INTEGER NOT NULL)`,
  `CREATE TRIGGER IF NOT EXISTS ${DELETION_TRIGGER} AFTER DELETE ON ${GROUP_TABLE} FOR EACH ROW BEGIN
  ${MARK_DELETION}
END`,
  // Every group written has a mark, from its first record: a group without one (its row deleted
  // by hand) reads as unknown, so the reader reads it in full, never as "none since". Past the
  // counter, so a row made again differs from any mark a reader holds. An upsert, not OR IGNORE:
  // the outer statement's conflict policy (a REPLACE INTO, an INSERT OR ABORT) would override it.
  `CREATE TRIGGER IF NOT EXISTS ${MARK_SEED_TRIGGER} AFTER INSERT ON ${GROUP_TABLE} FOR EACH ROW BEGIN
  INSERT INTO ${DELETIONS_TABLE} (group_name, last) VALUES (NEW.group_name, ${PAST_COUNTER})
    ON CONFLICT (group_name) DO NOTHING;
END`,
  // An UPDATE of a key column (by hand: no store writes one) takes the record from its old key:
  // a deletion there, as a count of the group's records would show it.
  `CREATE TRIGGER IF NOT EXISTS ${KEY_MOVE_TRIGGER} AFTER UPDATE OF group_name, kind, idx ON ${GROUP_TABLE} FOR EACH ROW
  WHEN OLD.group_name IS NOT NEW.group_name OR OLD.kind IS NOT NEW.kind OR OLD.idx IS NOT NEW.idx BEGIN
  ${MARK_DELETION}
END`,
];

/**
 * Moves every group's deletion mark past the counter, so it differs from any a reader holds from
 * before, whatever was deleted while marks were not kept: run by a writer that finds a schema
 * object missing (a file made before marks, marks or their triggers dropped by hand, an older
 * backup restored in place) or the schema changed while it held its statements (dropped and
 * made again by hand). Every reader then reads each group in full once. Inside the BEGIN
 * IMMEDIATE that makes what is missing.
 */
export const MARKS_REPAIR = [
  `UPDATE ${DELETIONS_TABLE} SET last = max(last + 1, ${PAST_COUNTER})`,
  `INSERT INTO ${DELETIONS_TABLE} (group_name, last)
    SELECT group_name, ${PAST_COUNTER} FROM ${GROUP_TABLE} WHERE true GROUP BY group_name
    ON CONFLICT (group_name) DO NOTHING`,
];
const SCHEMA_OBJECTS = [
  GROUP_TABLE,
  VERSION_TABLE,
  VERSION_INDEX,
  `${GROUP_TABLE}_version_insert`,
  `${GROUP_TABLE}_version_update`,
  CHANGES_INDEX,
  DELETIONS_TABLE,
  DELETION_TRIGGER,
  KEY_MOVE_TRIGGER,
  MARK_SEED_TRIGGER,
];
/** What deletion marks need: a file made before them has none until a group store opens it to write. */
const DELETION_OBJECTS = [DELETIONS_TABLE, DELETION_TRIGGER, KEY_MOVE_TRIGGER, MARK_SEED_TRIGGER];

/** Whether the file has every table and trigger of the group records (nothing to create). */
export function hasGroupSchema(db: Database.Database): boolean {
  const found = db
    .prepare(`SELECT count(*) FROM sqlite_schema WHERE name IN (${SCHEMA_OBJECTS.map(() => '?').join(', ')})`)
    .pluck()
    .get(...SCHEMA_OBJECTS);
  return found === SCHEMA_OBJECTS.length;
}

/** Whether the file marks deletions (DELETIONS_TABLE and its trigger): else a read counts the group's records. */
function marksDeletions(db: Database.Database): boolean {
  const found = db
    .prepare(`SELECT count(*) FROM sqlite_schema WHERE name IN (${DELETION_OBJECTS.map(() => '?').join(', ')})`)
    .pluck()
    .get(...DELETION_OBJECTS);
  return found === DELETION_OBJECTS.length;
}

/** Whether the file has the records' table (a reader finds none in a file no group has used). */
export function hasGroupTable(db: Database.Database): boolean {
  return db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").pluck().get(GROUP_TABLE) === 1;
}

/** A row as read: every value bounded in SQL (bounded-sql.ts), as the leases' row-select.ts reads them. */
interface GroupRow {
  kind: unknown;
  idx: unknown;
  holder_identity: unknown;
  session: unknown;
  state: unknown;
  renew_time_ms: unknown;
  lease_duration_seconds: unknown;
  token: unknown;
  owner_slot: unknown;
  owner_session: unknown;
  acquire_time_ms: unknown;
  shards: unknown;
  created_at_ms: unknown;
  version: unknown;
  oversized: string | null;
}

const BOUNDS: [string, number][] = [
  ['kind', MAX_NUMBER_BYTES],
  ['idx', MAX_NUMBER_BYTES],
  ['holder_identity', MAX_TEXT_BYTES],
  ['session', MAX_NUMBER_BYTES],
  ['state', MAX_NUMBER_BYTES],
  ['renew_time_ms', MAX_NUMBER_BYTES],
  ['lease_duration_seconds', MAX_NUMBER_BYTES],
  ['token', MAX_NUMBER_BYTES],
  ['owner_slot', MAX_NUMBER_BYTES],
  ['owner_session', MAX_NUMBER_BYTES],
  ['acquire_time_ms', MAX_NUMBER_BYTES],
  ['shards', MAX_NUMBER_BYTES],
  ['created_at_ms', MAX_NUMBER_BYTES],
  ['version', MAX_NUMBER_BYTES],
];
const SELECT_LIST = `SELECT ${BOUNDS.map(([c, max]) => boundedColumn(c, max)).join(', ')}, ${oversizedColumn(BOUNDS)} FROM ${GROUP_TABLE} WHERE group_name = ?`;
const COLUMNS = [...GROUP_KEY_COLUMNS, ...GROUP_VALUE_COLUMNS] as const;
type Values = Record<(typeof COLUMNS)[number], string | number | null>;

/** A group's records as stored: each with the file's version (a number) and a note when values were over their bound. */
export interface StoredGroupRecord {
  record: GroupRecord;
  version: number;
  oversized: string | null;
}

/** What changed in a group since a version of the file's counter (GroupStore.readGroupChanges). */
export interface StoredGroupChanges {
  records: StoredGroupRecord[];
  /** The counter as this read saw it: every version up to it has been read. */
  cursor: number;
  full: boolean;
  /**
   * How a deletion since an earlier read shows (GroupStore's DeletionEvidence): the version drawn
   * at the group's last deletion (0 before any; null: the group has no mark, a reader cannot
   * tell), or in a file made before deletion marks and not yet opened by a group store to write,
   * the group's count of records.
   */
  deletions: { mark: number | null } | { total: number };
}

/** The group records' statements on one connection (prepared once the table exists). */
export class GroupTable {
  private readonly list: Database.Statement<[string], GroupRow>;
  private readonly headerRow: Database.Statement<[string], GroupRow>;
  private readonly versionOf: Database.Statement<[string, string, number], number>;
  /** Whether the file marks deletions (marksDeletions); else the group's records are counted. */
  private readonly marks: boolean;
  /** The group's deletion mark where the file marks deletions, else its count of records. */
  private readonly deletionsOf: Database.Statement<{ g: string }, number | null>;
  private readonly fingerprintOf: Database.Statement<{ g: string }, { v: number | null; d: number | null }>;
  private readonly listSince: Database.Statement<[string, number], GroupRow>;
  private readonly counter: Database.Statement<[], number>;
  private readonly insert: Database.Statement<[Values]>;
  private readonly update: Database.Statement<[Values]>;

  constructor(
    private readonly db: Database.Database,
    /** The file, for messages. */
    private readonly location: string,
  ) {
    this.list = db.prepare(SELECT_LIST);
    this.headerRow = db.prepare(`${SELECT_LIST} AND kind = 'group' AND idx = 0`);
    this.versionOf = db.prepare<[string, string, number], number>(`SELECT version FROM ${GROUP_TABLE} WHERE group_name = ? AND kind = ? AND idx = ?`).pluck();
    this.listSince = db.prepare(`${SELECT_LIST} AND version > ?`);
    // The counter, or (its row deleted) the largest version, which the next draw goes past.
    this.counter = db
      .prepare<[], number>(
        `SELECT coalesce((SELECT CASE WHEN typeof(last) = 'integer' THEN last END FROM ${VERSION_TABLE} WHERE id = 1), (SELECT max(version) FROM ${GROUP_TABLE}), 0)`,
      )
      .pluck();
    this.marks = marksDeletions(db);
    // One step down an index where the file marks deletions, else a pass over the group's.
    const deletions = this.marks
      ? `(SELECT last FROM ${DELETIONS_TABLE} WHERE group_name = @g)`
      : `(SELECT count(*) FROM ${GROUP_TABLE} WHERE group_name = @g)`;
    this.deletionsOf = db.prepare<{ g: string }, number | null>(`SELECT ${deletions}`).pluck();
    // A deletion of the group's record with the largest version lowers that; another's, only the deletions.
    this.fingerprintOf = db.prepare(`SELECT (SELECT max(version) FROM ${GROUP_TABLE} WHERE group_name = @g) AS v, ${deletions} AS d`);
    const named = COLUMNS.map((c) => `@${c}`).join(', ');
    this.insert = db.prepare(`INSERT INTO ${GROUP_TABLE} (${COLUMNS.join(', ')}) VALUES (${named}) ON CONFLICT (group_name, kind, idx) DO NOTHING`);
    this.update = db.prepare(
      `UPDATE ${GROUP_TABLE} SET ${GROUP_VALUE_COLUMNS.map((c) => `${c} = @${c}`).join(', ')} WHERE group_name = @group_name AND kind = @kind AND idx = @idx`,
    );
  }

  /** Every record of `group`; InvalidRecordError for a row no group store wrote. */
  records(group: string): StoredGroupRecord[] {
    return this.list.all(group).map((row) => fromRow(group, row, this.location));
  }

  /**
   * The records written since the counter was at `since`, or all of them (`full`) when there is
   * no `since` or the counter is now below it (the file was replaced or its counter reset: its
   * versions are another sequence). In one read transaction, so the counter and the rows agree.
   */
  changesSince(group: string, since: number | undefined): StoredGroupChanges {
    return this.db
      .transaction(() => {
        const read = this.counter.get();
        const counter = typeof read === 'number' && Number.isSafeInteger(read) ? read : 0;
        const full = since === undefined || counter < since;
        const rows = full ? this.list.all(group) : this.listSince.all(group, since);
        const records = rows.map((row) => fromRow(group, row, this.location));
        // A row written by hand with a version past the counter: continue past it, not before.
        const cursor = records.reduce((max, r) => Math.max(max, r.version), counter);
        // In the same snapshot as the rows: a deletion committed after them moves it after them.
        const deletions = this.marks
          ? { mark: this.deletionsOf.get({ g: group }) ?? null }
          : { total: full ? records.length : this.deletionsOf.get({ g: group })! };
        return { records, cursor, full, deletions };
      })
      .deferred();
  }

  /**
   * What changes with every write to the group's records: their largest version, since every
   * write draws a version past every version in the file, and their deletion mark (in a file
   * without marks, their count), since a deletion draws none of theirs.
   */
  fingerprint(group: string): string {
    const { v, d } = this.fingerprintOf.get({ g: group })!;
    return `${d ?? '-'}/${v ?? '-'}`;
  }

  /** The group's header as stored, or undefined when it has none. */
  header(group: string): StoredGroupRecord | undefined {
    const row = this.headerRow.get(group);
    return row ? fromRow(group, row, this.location) : undefined;
  }

  /** Inserts the record; ConflictError when one with its kind and index exists. Call inside a transaction. */
  create(group: string, record: GroupRecord): number {
    if (this.insert.run(toValues(group, record)).changes === 0)
      throw new ConflictError(`group ${group} record ${recordKey(record)} already exists in ${this.location}`);
    return this.versionOf.get(group, record.kind, record.index)!;
  }

  /** Replaces the record if its version is still `expected`; ConflictError otherwise. Call inside a transaction. */
  replace(group: string, record: GroupRecord, expected: number): number {
    const current = this.versionOf.get(group, record.kind, record.index);
    if (current === undefined) throw new ConflictError(`group ${group} record ${recordKey(record)} was deleted since it was read (${this.location})`);
    if (current !== expected) throw new ConflictError(`group ${group} record ${recordKey(record)} changed since it was read (${this.location})`);
    this.update.run(toValues(group, record));
    return this.versionOf.get(group, record.kind, record.index)!;
  }
}

/** The group's records through a reader's one-off connection: none when no group has used the file. */
export function readGroup(db: Database.Database, group: string, location: string): StoredGroupRecord[] {
  return hasGroupTable(db) ? new GroupTable(db, location).records(group) : [];
}

/** The group's changes (GroupTable.changesSince) through a reader's one-off connection. */
export function readGroupChanges(db: Database.Database, group: string, since: number | undefined, location: string): StoredGroupChanges {
  return hasGroupTable(db) ? new GroupTable(db, location).changesSince(group, since) : { records: [], cursor: 0, full: true, deletions: { total: 0 } };
}

/** The fingerprint (GroupTable.fingerprint) through a reader's one-off connection. */
export function readGroupFingerprint(db: Database.Database, group: string, location: string): string {
  return hasGroupTable(db) ? new GroupTable(db, location).fingerprint(group) : 'absent';
}

/** The one line a store tells when a group's row held values over their bound. */
export function oversizedGroupNotice(group: string, key: string, location: string, oversized: string): string {
  return `the record ${key} of group ${group} in ${location} holds values over their bound (${oversized}; at most ${MAX_TEXT_BYTES} bytes for a text, ${MAX_NUMBER_BYTES} for a number): each was read as a note of its size, never loaded, and no rule accepts it (a holder over it is nobody's identity)`;
}

const ms = (d: Date | null): number | null => (d ? d.getTime() : null);

function toValues(group: string, r: GroupRecord): Values {
  const values: Values = {
    group_name: group,
    kind: r.kind,
    idx: r.index,
    holder_identity: '',
    session: null,
    state: null,
    renew_time_ms: null,
    lease_duration_seconds: null,
    token: null,
    owner_slot: null,
    owner_session: null,
    acquire_time_ms: null,
    shards: null,
    created_at_ms: null,
  };
  switch (r.kind) {
    case 'group':
      // The header's token column holds the group's high-water token, and its lease_duration_seconds
      // the longest lease announced (each NULL: written before it existed; no new column, so a
      // file an older version made needs no migration, and an older version reading it ignores both).
      return {
        ...values,
        shards: r.shards,
        created_at_ms: r.createdAt.getTime(),
        token: r.highWater ?? null,
        lease_duration_seconds: r.longestLeaseSeconds ?? null,
      };
    case 'member':
      return {
        ...values,
        holder_identity: r.holderIdentity,
        session: r.session,
        state: r.state,
        renew_time_ms: ms(r.renewTime),
        lease_duration_seconds: r.leaseDurationSeconds,
      };
    case 'shard':
      return {
        ...values,
        holder_identity: r.holderIdentity,
        token: r.token,
        owner_slot: r.owner?.slot ?? null,
        owner_session: r.owner?.session ?? null,
        acquire_time_ms: ms(r.acquireTime),
      };
  }
}

/**
 * The record a row holds. Any process that can write the file can store anything in it: a value
 * no group store writes is an InvalidRecordError naming the row (escaped: it cannot forge a line
 * or drive a terminal), never a record guessed at. A holder over its bound reads as a note of its
 * size (`oversized` says so), which is nobody's identity.
 */
function fromRow(group: string, row: GroupRow, location: string): StoredGroupRecord {
  const where = `the row of group ${group} ${escapeControl(String(row.kind))}/${escapeControl(String(row.idx))} in ${location}`;
  const bad = (column: string, value: unknown, rule: string): never => {
    throw new InvalidRecordError(`${where} holds ${column} ${escapeControl(JSON.stringify(value) ?? String(value))}, which is not ${rule}`);
  };
  const count = (column: string, value: unknown): number =>
    typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : bad(column, value, `an integer from 0 to ${Number.MAX_SAFE_INTEGER}`);
  const time = (column: string, value: unknown): Date | null => {
    if (value === null) return null;
    const d = new Date(typeof value === 'number' && Number.isSafeInteger(value) ? value : Number.NaN);
    return Number.isNaN(d.getTime()) ? bad(column, value, 'null or milliseconds since the epoch') : d;
  };
  const readers = { count, time, bad };
  const index = count('idx', row.idx);
  const version = count('version', row.version);
  const holderIdentity = typeof row.holder_identity === 'string' ? row.holder_identity : bad('holder_identity', row.holder_identity, 'a text');
  let record: GroupRecord;
  switch (row.kind) {
    case 'group':
      record = headerOfRow(row, index, readers);
      break;
    case 'member':
      record = memberOfRow(row, index, holderIdentity, readers);
      break;
    case 'shard':
      record = shardOfRow(row, index, holderIdentity, readers);
      break;
    default:
      return bad('kind', row.kind, 'group, member or shard');
  }
  return { record, version, oversized: row.oversized };
}
