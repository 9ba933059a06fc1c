import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  BackendError,
  BackendUnavailableError,
  ConflictError,
  InvalidRecordError,
  NotFoundError,
  StoreOpenError,
  StoreReopenedError,
  describeError,
} from '../../errors.js';
import { throwIfAborted } from '../../abort.js';
import type { CallOptions, LeaseRecord, LeaseStore, SuccessorClaimSupport, VersionedRecord, WatchEvent } from '../lease-store.js';
import type { Clock, Timer } from '../../clock.js';
import { encodeSuccessor, withSuccessor } from '../successor-column.js';
import { checkLocalFilesystem, checkSqliteFile } from './file-check.js';
import { MakeDirsError, makeDirs } from '../../util/make-dirs.js';
import { describeIdentity, identityOf, mainAndShmOf, refuseMountPoint, sameFiles, unsafeReplacement, type FileIdentity } from './file-identity.js';
import { foreignLog } from './wal-owner.js';
import { escapeControl } from '../../util/escape-control.js';
import { migrateLeaseVersion } from './lease-version.js';
import { selectRowSql } from './row-select.js';
import { oversizedNotice } from '../bounded-sql.js';
import { changeMark, readConnection, readOnce } from './reader.js';
import {
  recordKey,
  type GroupChanges,
  type GroupRecord,
  type GroupStore,
  type GroupWrite,
  type GroupWriteOutcome,
  type HighWaterRaise,
  type RaisedAndTaken,
  type RaisedHighWater,
  type ShardRecord,
  type VersionedGroupRecord,
} from '../group-store.js';
import { checkGroupWrites, checkRaiseAndTakes } from '../group-writes.js';
import { checkGroupName, checkGroupRecord } from '../group-record-check.js';
import { checkRaise, raiseStored } from '../high-water-raise.js';
import {
  GROUP_SCHEMA,
  MARKS_REPAIR,
  GroupTable,
  hasGroupSchema,
  oversizedGroupNotice,
  readGroup,
  readGroupChanges,
  readGroupFingerprint,
  type StoredGroupRecord,
} from './group-table.js';

/** The pauses between two tries of a write the file's lock refused, then the last one over again: SQLite's own busy handler's first steps. */
const LOCK_RETRY_MS = [1, 2, 5, 10, 15, 20, 25];

/**
 * Leases in one SQLite file shared by processes on one machine.
 *
 * The table is the tutorial's, column for column, so its Python candidates can share the file;
 * leasehold adds only `acquire_time` and `successor` (successor-column.ts), each with a default,
 * which those candidates never write. A writer adds a missing column when it opens the file; a
 * reader (`leasehold status`) never writes and reads a missing column as its default.
 *
 * Compare-and-swap: the version of a row is a digest of all its values and its name's write
 * count, which the file's own triggers move on every write by anyone (the Python candidates
 * know nothing of versions; lease-version.ts), so an update made inside BEGIN IMMEDIATE that
 * finds a different digest has lost a race, and no version ever comes back.
 *
 * Durability: WAL with synchronous=FULL fsyncs the log before COMMIT returns, so a write that
 * returned success survives a process crash and a power loss.
 *
 * better-sqlite3 is synchronous, but a write does not wait on another process's write lock
 * synchronously: it is refused at once and tried again on a timer, for at most the busy timeout
 * (default 1 s) of wall time (write()), so the event loop stays free meanwhile.
 */
export interface SqliteStoreOptions {
  /** How long a write waits for another process's write lock before failing. Default 1000 ms. */
  busyTimeoutMs?: number;
  /**
   * Read an existing file only (`leasehold status`): nothing is created or migrated, and no
   * connection stays open between reads (reader.ts).
   */
  readonly?: boolean;
  /**
   * Told, in one line, when the file was found replaced or deleted and the store reopened it,
   * or refuses to (once per replacement).
   */
  onReopen?: (message: string) => void;
  /** Told, in one line, when a row holds a value over its bound (row-select.ts), once per such row. */
  onOversized?: (message: string) => void;
  /**
   * Accept a file on a network filesystem (NFS, SMB, FUSE...), which is refused otherwise:
   * only when every candidate runs on this one machine (the CLI's --allow-network-filesystem).
   */
  allowNetworkFilesystem?: boolean;
  /** Reads a directory's filesystem type; tests stand in a network filesystem with it. Default fs.statfsSync. */
  statfs?: (path: string) => { type: number };
  /** Paces watch()'s polls; tests pass a FakeClock. Default: real timers that keep no process alive. */
  clock?: Clock;
}

/** watch()'s poll interval by default, and while the caller is eager (the named successor). */
const WATCH_EVERY_MS = 50;
/**
 * The named successor takes over as soon as it sees the release, so its poll bounds the
 * graceful handoff: 5 ms keeps that well inside the 50 ms goal. The cost is CPU in that one
 * standby only (docs/benchmarks.md); the others keep WATCH_EVERY_MS.
 */
export const WATCH_EAGER_EVERY_MS = 5;

interface LeaseRow {
  holder_identity: string;
  fencing_token: number;
  renew_time: number;
  lease_duration_seconds: number;
  acquire_time: number;
  /** successor-column.ts: '' for no claim. */
  successor: string;
  /** lease-version.ts: the name's write count, moved by the file's triggers; 0 in a file without them. */
  write_version: number | null;
  /** The columns over their bound and their sizes, or null (row-select.ts). */
  oversized?: string | null;
}

export class SqliteLeaseStore implements LeaseStore, GroupStore {
  readonly backend = 'sqlite';
  readonly location: string;
  private readonly options: SqliteStoreOptions;
  private db!: Database.Database;
  private selectRow!: Database.Statement<[string], LeaseRow>;
  private insertRow!: Database.Statement;
  private updateRow!: Database.Statement;
  /** Device and inode of the database file, its -wal and its -shm, as opened. */
  private opened: FileIdentity = { main: '-', wal: '-', shm: '-' };
  /** The refusal last reported, so a replacement that lasts is logged once, not per attempt. */
  private refused: string | null = null;
  /** Bumped on every reopen, so a watch re-prepares its statements. */
  private generation = 0;
  /** The table has the `successor` column (a writer adds it; a reader may find an older table). */
  private hasSuccessor = false;
  /** The last oversized-values notice, so a row that keeps them is reported once. */
  private toldOversized: string | null = null;
  /** The group records' statements, and the generation of the file they were prepared on. */
  private groupTable: { table: GroupTable; generation: number; schema: number; schemaVersion: Database.Statement<[], number> } | null = null;
  /** The group rows reported holding values over their bound, so each is told once. */
  private readonly toldOversizedGroups = new Set<string>();
  /** Per lease, the callers' questions "poll quickly now?" (SuccessorClaimSupport.pollQuicklyWhile). */
  private readonly quickWhile = new Map<string, Set<() => boolean>>();
  /**
   * Claims are kept while the table has the `successor` column: a writer always adds it; a reader
   * may find an older table. The watches of a lease poll quickly while a caller's question says so.
   */
  readonly successorClaims: Required<SuccessorClaimSupport> = {
    kept: () => this.hasSuccessor,
    pollQuicklyWhile: (name, named) => {
      const asked = this.quickWhile.get(name) ?? new Set();
      this.quickWhile.set(name, asked);
      asked.add(named);
      return () => {
        asked.delete(named);
        if (asked.size === 0 && this.quickWhile.get(name) === asked) this.quickWhile.delete(name);
      };
    },
  };

  constructor(path: string, options: SqliteStoreOptions = {}) {
    this.location = path;
    this.options = options;
    checkSqliteFile(path);
    // Here, not only in the CLI: every caller (the library too) is refused a file whose locks
    // do not hold across machines. Reading (`leasehold status`) decides nothing.
    if (!options.readonly) checkLocalFilesystem(path, options.allowNetworkFilesystem ?? false, options.statfs);
    if (!options.readonly) this.open();
    else {
      try {
        this.readRow(null);
      } catch (err) {
        throw err instanceof StoreOpenError ? err : setupFailure(path, err);
      }
    }
  }

  /**
   * A reader's one read (reader.ts): the row named `name` (none for null, which only
   * checks that the file opens and has the table).
   */
  /** The row just written, in the same transaction: its version is the one the triggers drew. */
  private writtenRow(name: string): LeaseRow {
    const row = this.selectRow.get(name);
    if (!row) throw new Error(`lease ${name}: the row just written is not there`);
    return row;
  }

  private readRow(name: string | null): LeaseRow | undefined {
    const { value, columns } = readOnce(this.location, this.options.busyTimeoutMs ?? 1000, (select) =>
      name === null ? undefined : (select.get(name) as LeaseRow | undefined),
    );
    this.hasSuccessor = columns.hasSuccessor;
    return value;
  }

  /** A writer's connection, kept open for the store's life. */
  private open(): void {
    const path = this.location;
    refuseMountPoint(path);
    try {
      makeDirs(dirname(path));
    } catch (err) {
      throw new StoreOpenError(`the database's directory ${err instanceof MakeDirsError ? err.message : describeError(err)}`, { cause: err, field: 'db' });
    }
    // Before SQLite opens it: opening would read the file through the log, and a checkpoint copy it in.
    const foreign = foreignLog(path);
    if (foreign) throw new StoreOpenError(`the database file ${path}: ${foreign}`, { field: 'db' });
    let db: Database.Database;
    try {
      db = new Database(path, { timeout: this.options.busyTimeoutMs ?? 1000 });
    } catch (err) {
      throw new StoreOpenError(`cannot open SQLite lease store ${path}: ${explainOpenFailure(path, err)}`, { cause: err });
    }
    this.db = db;
    try {
      // Many processes may open a new file at once: give set-up more patience than a
      // lease operation gets, and retry the WAL switch, which can report busy at once.
      db.pragma('busy_timeout = 10000');
      retryBusy(() => db.pragma('journal_mode = WAL'));
      db.pragma('synchronous = FULL');
      retryBusy(() => this.migrate());
      db.pragma(`busy_timeout = ${Math.round(this.options.busyTimeoutMs ?? 1000)}`);
      // A read-only file (or directory) opens fine and fails only at the first write: find
      // out now, so a candidate that can never lead does not report itself healthy.
      retryBusy(() => db.exec('BEGIN IMMEDIATE; ROLLBACK'));
    } catch (err) {
      db.close();
      throw setupFailure(path, err);
    }
    this.opened = identityOf(path);
    this.refused = null;
    this.generation++;
    this.hasSuccessor = true;
    this.selectRow = db.prepare(selectRowSql({ hasAcquireTime: true, hasSuccessor: true, hasWriteVersion: true }));
    this.insertRow = db.prepare(
      'INSERT INTO leases (name, holder_identity, fencing_token, renew_time, lease_duration_seconds, acquire_time, successor) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.updateRow = db.prepare(
      'UPDATE leases SET holder_identity = ?, fencing_token = ?, renew_time = ?, lease_duration_seconds = ?, acquire_time = ?, successor = ? WHERE name = ?',
    );
  }

  /**
   * Deleting or replacing the database file (or its -shm) under a running process leaves that
   * process on the old, unlinked file while newcomers use a new one: two histories, two
   * leaders. Before every operation the path is checked against what was opened; when it
   * names another file (or none) the store reopens the path, so this process sees what
   * newcomers see. The operation that found it fails with StoreReopenedError: a record may
   * have been created and deleted with the old file between two of this process's reads, so
   * a standby already waiting out an absence starts its wait over. After that it is a record
   * that vanished: the sitting leader steps down and recreates it at once with its next token,
   * anyone else waits a lease duration. A reader (`leasehold status --watch`) holds no
   * connection: each of its reads opens what the path names then.
   *
   * It reopens only a clean start: no -wal or -shm of the opened file left beside the path,
   * and no mount over it. Otherwise SQLite would read the new file through the old log and a
   * checkpoint would copy the old file's pages into it (a file bind-mounted over the database
   * lost both histories that way). Then every operation fails with StoreOpenError, writing
   * nothing anywhere, until the path names the opened file again (the mount is removed):
   * the leader steps down at renewDeadline and nobody else can take the lease meanwhile. The
   * old connection stays open and untouched; closed while the path names another file,
   * SQLite neither checkpoints nor deletes the log (it checks the path's inode first).
   */
  private followReplacement(): void {
    // The -wal is stat'ed only once the path names another file: see mainAndShmOf.
    if (sameFiles(mainAndShmOf(this.location), this.opened)) {
      this.refused = null;
      return;
    }
    const now = identityOf(this.location);
    const why = unsafeReplacement(this.location, this.opened, now);
    if (why) {
      const message = `the database file ${this.location} no longer names the file this candidate opened (${describeIdentity(this.opened)} is now ${describeIdentity(now)}) and ${why}: refusing to read or write it until ${this.location} names the opened file again (stop every candidate before replacing a database, and move its -wal and -shm with it)`;
      if (this.refused !== message) {
        this.refused = message;
        this.options.onReopen?.(message);
      }
      throw new StoreOpenError(message);
    }
    const was = this.opened;
    this.db.close();
    this.open();
    const message = `the database file ${this.location} was replaced or deleted (${describeIdentity(was)} is now ${describeIdentity(this.opened)}): reopened it`;
    this.options.onReopen?.(message);
    throw new StoreReopenedError(message);
  }

  private migrate(): void {
    this.db
      .transaction(() => {
        this.db.exec(`CREATE TABLE IF NOT EXISTS leases (
          name TEXT PRIMARY KEY,
          holder_identity TEXT NOT NULL,
          fencing_token INTEGER NOT NULL,
          renew_time REAL NOT NULL,
          lease_duration_seconds REAL NOT NULL
        )`);
        const columns = this.db.prepare('PRAGMA table_info(leases)').all() as { name: string }[];
        if (!columns.some((c) => c.name === 'acquire_time')) {
          this.db.exec('ALTER TABLE leases ADD COLUMN acquire_time REAL NOT NULL DEFAULT 0');
        }
        if (!columns.some((c) => c.name === 'successor')) {
          this.db.exec("ALTER TABLE leases ADD COLUMN successor TEXT NOT NULL DEFAULT ''");
        }
        migrateLeaseVersion(this.db);
      })
      .immediate();
  }

  // better-sqlite3 is synchronous: a call either has not started (an aborted signal refuses
  // it, nothing written) or completes before anything else runs, so there is nothing to cancel.
  async get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    throwIfAborted(opts);
    const row = this.run('get', () => (this.options.readonly ? this.readRow(name) : this.selectRow.get(name)));
    if (row) this.tellOversized(name, row);
    return row ? { record: toRecord(row), version: versionOf(row) } : null;
  }

  async create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    throwIfAborted(opts);
    this.refuseWrite('create');
    const row = toRow(record);
    return this.write('create', opts, () =>
      this.db
        .transaction(() => {
          if (this.selectRow.get(name)) throw new ConflictError(`lease ${name} already exists`);
          this.insertRow.run(name, row.holder_identity, row.fencing_token, row.renew_time, row.lease_duration_seconds, row.acquire_time, row.successor);
          return versionOf(this.writtenRow(name));
        })
        .immediate(),
    );
  }

  async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    throwIfAborted(opts);
    this.refuseWrite('update');
    const row = toRow(record);
    return this.write('update', opts, () =>
      this.db
        .transaction(() => {
          const current = this.selectRow.get(name);
          if (!current) throw new ConflictError(`lease ${name} was deleted since it was read`);
          if (versionOf(current) !== expectedVersion) {
            throw new ConflictError(`lease ${name} changed since it was read`);
          }
          this.updateRow.run(row.holder_identity, row.fencing_token, row.renew_time, row.lease_duration_seconds, row.acquire_time, row.successor, name);
          return versionOf(this.writtenRow(name));
        })
        .immediate(),
    );
  }

  /**
   * Polls `PRAGMA data_version`, which changes when another connection commits to the file.
   * It reads only the WAL index (no lock, no disk I/O in the common case), so polling every
   * 50 ms is cheap. On a change it reads the one row and reports it when its version moved
   * (a deletion as `record: null`), so a candidate sees every state the row passes through
   * that lasts longer than the poll. It never reports itself healthy: standbys keep their
   * timed reads (which cost no network here) and notice a replaced file through them.
   *
   * Before each wait it asks the questions registered for `name` through
   * successorClaims.pollQuicklyWhile: while one says true (this candidate is the named
   * successor) it waits WATCH_EAGER_EVERY_MS instead, so the release is seen at once.
   * `opts.everyMs` replaces the slow interval (the bench polls faster); the quick one is never
   * slower than it.
   */
  watch(name: string, onEvent: (e: WatchEvent) => void, _onHealth?: (healthy: boolean) => void, opts: { everyMs?: number } = {}): () => void {
    const slowMs = opts.everyMs ?? WATCH_EVERY_MS;
    const quickMs = Math.min(slowMs, WATCH_EAGER_EVERY_MS);
    const poll = this.options.readonly ? this.readerPoll(name, onEvent) : this.writerPoll(name, onEvent);
    return this.pollChain(() => (this.quickNow(name) ? quickMs : slowMs), poll);
  }

  /** A candidate's poll: `PRAGMA data_version` on its open connection (writerChanged). */
  private writerPoll(name: string, onEvent: (e: WatchEvent) => void): () => void {
    const changed = this.writerChanged();
    // A busy or closed database at a poll: the elector's own retries cover it.
    return this.rowPoll(name, changed, () => this.selectRow.get(name), versionOrNull(this.selectRow.get(name)), onEvent);
  }

  /**
   * A reader's poll: it holds no connection, so it watches changeMark (the file's inode and the
   * WAL index header in the -shm: readerChanged) and reads the row when that moved.
   */
  private readerPoll(name: string, onEvent: (e: WatchEvent) => void): () => void {
    const changed = this.readerChanged();
    let lastRow: string | null = null;
    try {
      lastRow = versionOrNull(this.readRow(name));
    } catch {
      // unreadable now: the first poll that reads it reports it
    }
    // A busy or replaced file at a poll: the reader's own reads report it.
    return this.rowPoll(name, changed, () => this.readRow(name), lastRow, onEvent);
  }

  /**
   * The lease watch's poll on either side: once `changed` says the file moved, the row is read
   * and reported when its version moved (a deletion as `record: null`). A read that fails is
   * passed over: the next change reads it again.
   */
  private rowPoll(
    name: string,
    changed: () => boolean,
    read: () => LeaseRow | undefined,
    lastVersion: string | null,
    onEvent: (e: WatchEvent) => void,
  ): () => void {
    let lastRow = lastVersion;
    return () => {
      if (!changed()) return;
      try {
        const row = read();
        if (row) this.tellOversized(name, row);
        const version = versionOrNull(row);
        if (version === lastRow) return;
        lastRow = version;
        onEvent({ record: row ? { record: toRecord(row), version: version! } : null });
      } catch {
        // busy, closed or replaced: see each poll
      }
    };
  }

  // The shard groups' records (group-table.ts): the same file, connection, transactions and
  // checks of the path as the leases. A version handed out carries the generation of the file it
  // was read from: one read before this process found the file replaced never matches again.

  async listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    throwIfAborted(opts);
    checkGroupName(group);
    const stored = this.run('group list', () =>
      this.options.readonly
        ? readConnection(this.location, this.options.busyTimeoutMs ?? 1000, (db) => readGroup(db, group, this.location))
        : this.groups().records(group),
    );
    return stored.map((s) => this.versioned(group, s));
  }

  /**
   * The rows written since the cursor (group-table.ts, changesSince). The cursor is
   * `generation.counter`, as a version is: one from before this process found the file
   * replaced, or malformed, gets a full read. One from an earlier process on the same file
   * continues, since the counter lives in the file.
   */
  async readGroupChanges(group: string, cursor: string | undefined, opts?: CallOptions): Promise<GroupChanges> {
    throwIfAborted(opts);
    checkGroupName(group);
    const changes = this.run('group changes', () => {
      const m = cursor === undefined ? null : /^(\d+)\.(\d{1,15})$/.exec(cursor);
      const since = m && Number(m[1]) === this.generation ? Number(m[2]) : undefined;
      return this.options.readonly
        ? readConnection(this.location, this.options.busyTimeoutMs ?? 1000, (db) => readGroupChanges(db, group, since, this.location))
        : this.groups().changesSince(group, since);
    });
    return {
      records: changes.records.map((s) => this.versioned(group, s)),
      cursor: this.groupVersion(changes.cursor),
      full: changes.full,
      // A mark is a version of the file's counter: handed out as versions are, with the generation.
      ...('mark' in changes.deletions
        ? { deletionMark: changes.deletions.mark === null ? null : this.groupVersion(changes.deletions.mark) }
        : { total: changes.deletions.total }),
    };
  }

  async createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    throwIfAborted(opts);
    checkGroupRecord(group, record);
    this.refuseWrite('group create');
    return this.write('group create', opts, () => {
      const table = this.groups();
      return this.groupVersion(this.db.transaction(() => table.create(group, record)).immediate());
    });
  }

  async updateGroupRecord(group: string, record: GroupRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    throwIfAborted(opts);
    checkGroupRecord(group, record);
    this.refuseWrite('group update');
    return this.write('group update', opts, () => {
      const table = this.groups();
      const expected = this.ownVersion(expectedVersion);
      if (expected === null) {
        throw new ConflictError(
          `group ${group} record ${record.kind}/${record.index}: version ${JSON.stringify(expectedVersion)} was not read from ${this.location} as it is now`,
        );
      }
      return this.groupVersion(this.db.transaction(() => table.replace(group, record, expected)).immediate());
    });
  }

  /**
   * The header's highWater raised inside one BEGIN IMMEDIATE transaction: read, raised
   * (high-water-raise.ts) and written with no other writer in between, so no member loses a
   * race on it (the compare-and-swap raise of 32 members lost 150 of them in one leave).
   */
  async raiseHighWater(group: string, raise: HighWaterRaise, opts?: CallOptions): Promise<RaisedHighWater> {
    throwIfAborted(opts);
    checkGroupName(group);
    checkRaise(group, raise, Number.MAX_SAFE_INTEGER);
    this.refuseWrite('group raise');
    return this.write('group raise', opts, () => {
      const table = this.groups();
      return this.db.transaction(() => this.raiseIn(table, group, raise, '')).immediate();
    });
  }

  /**
   * A batch in one BEGIN IMMEDIATE transaction: each row its own compare-and-swap (the single
   * calls' create and replace), a lost one reported in its place and the others committed.
   * better-sqlite3 answers synchronously, so the heartbeat cannot be queued behind it: it runs
   * after it, and the batch is short (docs/benchmarks.md: 4096 rows in a few milliseconds).
   */
  async writeGroupRecords(group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]> {
    throwIfAborted(opts);
    checkGroupWrites(group, writes);
    this.refuseWrite('group batch');
    if (writes.length === 0) return [];
    return this.write('group batch', opts, () => {
      const table = this.groups();
      return this.db.transaction(() => writes.map((w) => this.writeInBatch(table, group, w))).immediate();
    });
  }

  /**
   * The raise and the takes it reserves tokens for in one BEGIN IMMEDIATE transaction
   * (GroupStore.raiseAndTake): the header's raise as raiseHighWater makes it, then each take as
   * writeGroupRecords writes it, with token from + 1 + i. One wait for the file's lock where
   * there were two: after a leave at N = 4096, M = 32 the 31 takers' raises waited on one another
   * up to 850 ms before their batches queued again (docs/benchmarks.md).
   */
  async raiseAndTake(group: string, raise: Omit<HighWaterRaise, 'count'>, takes: readonly GroupWrite[], opts?: CallOptions): Promise<RaisedAndTaken> {
    throwIfAborted(opts);
    const full = checkRaiseAndTakes(group, raise, takes);
    this.refuseWrite('group take');
    return this.write('group take', opts, () => {
      const table = this.groups();
      return this.db
        .transaction(() => {
          const { from, header } = this.raiseIn(table, group, full, ', nothing was taken');
          const outcomes = takes.map((w, i) => this.writeInBatch(table, group, { ...w, record: { ...(w.record as ShardRecord), token: from + 1 + i } }));
          return { from, header, outcomes };
        })
        .immediate();
    });
  }

  /** The header's raise inside the caller's transaction (raiseHighWater, raiseAndTake): read, raised and written with no other writer between. */
  private raiseIn(table: GroupTable, group: string, raise: HighWaterRaise, refused: string): RaisedHighWater {
    const stored = table.header(group);
    if (!stored || stored.record.kind !== 'group')
      throw new NotFoundError(`group ${group} has no header in ${this.location}: its highWater was not raised${refused}`);
    const { from, raised } = raiseStored(group, stored.record, raise, Number.MAX_SAFE_INTEGER);
    return { from, header: { record: raised, version: this.groupVersion(table.replace(group, raised, stored.version)) } };
  }

  /** One write of a batch, inside its transaction: its own compare-and-swap, a lost one reported in its place. */
  private writeInBatch(table: GroupTable, group: string, { record, expectedVersion }: GroupWrite): GroupWriteOutcome {
    try {
      if (expectedVersion === null) return { written: true, version: this.groupVersion(table.create(group, record)) };
      const expected = this.ownVersion(expectedVersion);
      if (expected === null)
        return {
          written: false,
          conflict: `group ${group} record ${recordKey(record)}: version ${JSON.stringify(expectedVersion)} was not read from ${this.location} as it is now`,
        };
      return { written: true, version: this.groupVersion(table.replace(group, record, expected)) };
    } catch (err) {
      if (err instanceof ConflictError) return { written: false, conflict: err.message };
      throw err;
    }
  }

  /**
   * Hints at changes of the group's records, by the lease watch's means: a poll of `PRAGMA
   * data_version` (a reader: changeMark), and on a change, the group's fingerprint (its largest
   * version and its deletion mark: GroupTable.fingerprint), so a write to another group is not a hint. Never healthy,
   * like the lease watch: members keep their timed lists. `opts.everyMs` replaces the interval.
   */
  watchGroup(group: string, onChange: () => void, _onHealth?: (healthy: boolean) => void, opts: { everyMs?: number } = {}): () => void {
    checkGroupName(group);
    const fingerprint = (): string => {
      try {
        if (this.options.readonly)
          return readConnection(this.location, this.options.busyTimeoutMs ?? 1000, (db) => readGroupFingerprint(db, group, this.location));
        // Read only: a watch never creates the table (a file no group has written has none). The
        // statements this connection prepared for the group records, once it has: preparing
        // them at each change was work repeated at every write while a shard group moved.
        const table = this.groupTable?.generation === this.generation ? this.groupTable.table : null;
        return `${this.generation}:${table ? table.fingerprint(group) : readGroupFingerprint(this.db, group, this.location)}`;
      } catch {
        return 'unreadable'; // busy or replaced: the next change reads it again
      }
    };
    const changed = this.options.readonly ? this.readerChanged() : this.writerChanged();
    let last = fingerprint();
    return this.pollChain(
      () => opts.everyMs ?? WATCH_EVERY_MS,
      () => {
        if (!changed()) return;
        const now = fingerprint();
        if (now !== last) {
          last = now;
          onChange();
        }
      },
    );
  }

  /** A candidate's change detector: `PRAGMA data_version` on its connection, re-prepared after a reopen. */
  private writerChanged(): () => boolean {
    let generation = this.generation;
    let stmt = this.db.prepare('PRAGMA data_version').pluck();
    let lastData = stmt.get() as number;
    return () => {
      if (!this.db.open) return false;
      try {
        if (generation !== this.generation) {
          generation = this.generation;
          stmt = this.db.prepare('PRAGMA data_version').pluck();
          lastData = NaN;
        }
        const v = stmt.get() as number;
        if (v === lastData) return false;
        lastData = v;
        return true;
      } catch {
        return false; // a busy or closed database: the member's own lists cover it
      }
    };
  }

  /** A reader's change detector: changeMark, without a connection. */
  private readerChanged(): () => boolean {
    let lastMark = changeMark(this.location);
    return () => {
      const mark = changeMark(this.location);
      if (mark === lastMark) return false;
      lastMark = mark;
      return true;
    };
  }

  /**
   * The group records' statements on the open connection: the table and its triggers are
   * created the first time this file is asked for a group (a file no group uses keeps only the
   * tutorial's table), in a BEGIN IMMEDIATE transaction, as migrate() creates the leases table.
   */
  private groups(): GroupTable {
    // The schema's version too: a trigger or table of the group records dropped by hand (or an
    // older backup restored in place) is made again, and the statements prepared for what is
    // there, not kept reading a deletion mark that no longer moves (or a table that is gone).
    const held = this.groupTable?.generation === this.generation ? this.groupTable : null;
    const schemaVersion = held?.schemaVersion ?? this.db.prepare<[], number>('PRAGMA schema_version').pluck();
    if (held && held.schema === schemaVersion.get()) return held.table;
    // Made where missing; and the deletion marks moved (MARKS_REPAIR) where something was, or the
    // schema changed under this store (made again by hand), in one transaction. Not at every
    // open: each member's start would make every other read its group in full.
    const changedUnder = held !== null;
    if (changedUnder || !hasGroupSchema(this.db)) {
      this.db
        .transaction(() => {
          if (!hasGroupSchema(this.db)) for (const statement of GROUP_SCHEMA) this.db.exec(statement);
          for (const statement of MARKS_REPAIR) this.db.exec(statement);
        })
        .immediate();
    }
    const table = new GroupTable(this.db, this.location);
    this.groupTable = { table, generation: this.generation, schema: schemaVersion.get()!, schemaVersion };
    return table;
  }

  /**
   * The file's version inside a version this store handed out, or null for one it did not: after
   * any reopen (run() checks the path first), only versions read from this file count.
   */
  private ownVersion(version: string): number | null {
    const m = /^(\d+)\.(\d+)$/.exec(version);
    return m && Number(m[1]) === this.generation && Number.isSafeInteger(Number(m[2])) ? Number(m[2]) : null;
  }

  private groupVersion(version: number): string {
    return `${this.generation}.${version}`;
  }

  private versioned(group: string, s: StoredGroupRecord): VersionedGroupRecord {
    const told = `${group}/${s.record.kind}/${s.record.index}`;
    if (s.oversized === null) this.toldOversizedGroups.delete(told);
    else if (!this.toldOversizedGroups.has(told)) {
      this.toldOversizedGroups.add(told);
      this.options.onOversized?.(oversizedGroupNotice(group, `${s.record.kind}/${s.record.index}`, this.location, s.oversized));
    }
    return { record: s.record, version: this.groupVersion(s.version) };
  }

  private refuseWrite(op: string): void {
    if (this.options.readonly) throw new BackendError(`SQLite ${op} on ${this.location}: this store was opened read-only`);
  }

  /** Tells onOversized once per row that holds values over their bound. */
  private tellOversized(name: string, row: LeaseRow): void {
    const over = row.oversized ?? null;
    if (over === this.toldOversized) return;
    this.toldOversized = over;
    if (over === null) return;
    this.options.onOversized?.(oversizedNotice(name, this.location, over));
  }

  /** Whether a caller asks the watches of `name` to poll quickly now; asked before each wait. */
  private quickNow(name: string): boolean {
    for (const named of this.quickWhile.get(name) ?? []) {
      try {
        if (named() === true) return true;
      } catch {
        // the caller's question failed: the cheap rate is always safe
      }
    }
    return false;
  }

  /**
   * Runs `poll` after each wait of `waitMs()` until the returned function is called: a chain of
   * single timers, not an interval, so each wait is chosen when it starts. Both watches poll so.
   */
  private pollChain(waitMs: () => number, poll: () => void): () => void {
    let stopped = false;
    let timer: Timer | null = null;
    const next = () => {
      if (stopped) return;
      timer = this.after(waitMs(), () => {
        timer = null;
        poll();
        next();
      });
    };
    next();
    return () => {
      stopped = true;
      timer?.cancel();
    };
  }

  /** A timer that never keeps the process alive (the elector's own timers do). */
  private after(ms: number, fn: () => void): Timer {
    if (this.options.clock) return this.options.clock.setTimer(fn, ms);
    const handle = setTimeout(fn, ms);
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  }

  async close(): Promise<void> {
    if (this.db?.open) this.db.close();
  }

  /**
   * A write: run() with the file's lock waited for here, asynchronously, not by SQLite. Its own
   * busy handler sleeps synchronously (the whole process stalled: timers, a sidecar's HTTP server,
   * `run`'s kill) and counts the sleeps it asked for, not the time that passed, so under load a
   * 448 ms busy timeout was seen to hold the event loop 870 ms, past the lease's expiry
   * (docs/guarantees.md). So each try runs with busy_timeout 0 and SQLITE_BUSY comes back at once;
   * the next try follows a few milliseconds later on a timer, until busyTimeoutMs of wall time has
   * passed since the first or the call is cancelled (`signal`). A refused try wrote nothing (BEGIN
   * IMMEDIATE takes the lock first), so trying the whole transaction again is what SQLite's own
   * retry does. With `waitForLock: false` (CallOptions) there is one try only.
   */
  private async write<T>(op: string, opts: CallOptions | undefined, fn: () => T): Promise<T> {
    const waitMs = opts?.waitForLock === false ? 0 : (this.options.busyTimeoutMs ?? 1000);
    const until = performance.now() + waitMs;
    for (let tries = 0; ; tries++) {
      try {
        return this.run(op, () => this.withoutBusyWait(fn));
      } catch (err) {
        const leftMs = until - performance.now();
        if (!(err instanceof BackendUnavailableError) || leftMs <= 0) throw err;
        await new Promise((resolve) => setTimeout(resolve, Math.min(leftMs, LOCK_RETRY_MS[Math.min(tries, LOCK_RETRY_MS.length - 1)]!)));
        throwIfAborted(opts);
      }
    }
  }

  /** Runs `fn` with SQLite's busy handler off: a lock another connection holds is SQLITE_BUSY at once. */
  private withoutBusyWait<T>(fn: () => T): T {
    this.db.pragma('busy_timeout = 0');
    try {
      return fn();
    } finally {
      this.db.pragma(`busy_timeout = ${Math.round(this.options.busyTimeoutMs ?? 1000)}`);
    }
  }

  /** Runs one statement or transaction, turning SQLite's errors into leasehold's. */
  private run<T>(op: string, fn: () => T): T {
    try {
      if (!this.options.readonly) this.followReplacement();
      return fn();
    } catch (err) {
      if (
        err instanceof ConflictError ||
        err instanceof NotFoundError ||
        err instanceof StoreOpenError ||
        err instanceof StoreReopenedError ||
        err instanceof InvalidRecordError
      )
        throw err;
      const code = (err as { code?: string }).code ?? '';
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
        throw new BackendUnavailableError(`SQLite ${op} on ${this.location}: database is locked by another process`, { cause: err });
      }
      // A constraint of the table (a CHECK, NOT NULL) refuses the record: no retry will pass it.
      if (code.startsWith('SQLITE_CONSTRAINT'))
        throw new InvalidRecordError(`SQLite ${op} on ${this.location} refused the record: ${describeError(err)}`, { cause: err });
      throw new BackendError(`SQLite ${op} on ${this.location} failed: ${describeError(err)}`, { cause: err });
    }
  }
}

/**
 * A failure to set the store up, as leasehold's error. Another process holding a transaction
 * open is an outage of the store, not bad input: status exits 3, and a sidecar or run exits 1
 * (a restart tries again).
 */
function setupFailure(path: string, err: unknown): Error {
  if (/^SQLITE_(BUSY|LOCKED)/.test((err as { code?: string }).code ?? '')) {
    return new BackendUnavailableError(
      `cannot set up SQLite lease store ${path}: the database is locked by another process (a transaction held open?) and stayed locked past the set-up's patience`,
      { cause: err },
    );
  }
  return new StoreOpenError(`cannot prepare SQLite lease store ${path}: ${explainOpenFailure(path, err)}`, { cause: err });
}

/** Runs `fn`, retrying for up to 10 s while SQLite reports the file busy or locked. */
function retryBusy<T>(fn: () => T): T {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return fn();
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      if (!/^SQLITE_(BUSY|LOCKED)/.test(code) || Date.now() > deadline) throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 + Math.random() * 40);
    }
  }
}

/**
 * SQLite's "disk I/O error" when the -shm says the log holds frames that the -wal does not:
 * the -wal was deleted while other processes had the database open. They keep writing to the
 * deleted log, and the last of them to close copies it into the database file.
 */
function explainOpenFailure(path: string, err: unknown): string {
  const code = (err as { code?: string }).code ?? '';
  if (code.startsWith('SQLITE_IOERR')) {
    const size = (p: string) => {
      try {
        return statSync(p).size;
      } catch {
        return -1;
      }
    };
    // A WAL header is 32 bytes: less is a log with no frames (or none at all).
    if (size(`${path}-shm`) > 0 && size(`${path}-wal`) < 32) {
      return `its -wal was deleted while other processes still had it open (its -shm describes a log that is gone; they keep the lease history in the deleted log). Stop every process using ${path}: the last to exit writes that log back into ${path}; then start again. Never delete a -wal or -shm alone (SQLite: ${describeError(err)})`;
    }
  }
  return describeError(err);
}

function toRecord(row: LeaseRow): LeaseRecord {
  if (!Number.isSafeInteger(row.fencing_token) || row.fencing_token < 0) {
    // Any peer can store any text there: escaped, it cannot forge a line or drive a terminal.
    throw new InvalidRecordError(`the stored fencing token ${escapeControl(String(row.fencing_token))} is not an integer from 0 to ${Number.MAX_SAFE_INTEGER}`);
  }
  return withSuccessor(
    {
      holderIdentity: row.holder_identity,
      leaseDurationSeconds: row.lease_duration_seconds,
      acquireTime: row.acquire_time > 0 ? dateOrNull(row.acquire_time) : null,
      renewTime: dateOrNull(row.renew_time),
      leaseTransitions: row.fencing_token,
    },
    row.successor,
  );
}

/** Seconds since the epoch as a Date; null when a peer wrote something no Date can hold. */
function dateOrNull(seconds: number): Date | null {
  const d = new Date(seconds * 1000);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** The values a write sets; the file's triggers move the write count. */
function toRow(r: LeaseRecord): Omit<LeaseRow, 'write_version'> {
  const renew = r.renewTime ?? new Date();
  return {
    holder_identity: r.holderIdentity,
    fencing_token: r.leaseTransitions,
    renew_time: renew.getTime() / 1000,
    lease_duration_seconds: r.leaseDurationSeconds,
    acquire_time: r.acquireTime ? r.acquireTime.getTime() / 1000 : 0,
    successor: encodeSuccessor(r.successor),
  };
}

function versionOrNull(row: LeaseRow | undefined): string | null {
  return row ? versionOf(row) : null;
}

/**
 * All of a row's values and its write counter (lease-version.ts): any write by anyone moves the
 * counter, so no version comes back. The values stay in it for a file whose table has no
 * counter yet (read by `status` before any leasehold of this version wrote it), where any
 * write by any peer changes at least renew_time or the holder.
 */
function versionOf(row: LeaseRow): string {
  return JSON.stringify([
    row.holder_identity,
    row.fencing_token,
    row.renew_time,
    row.lease_duration_seconds,
    row.acquire_time,
    row.successor,
    row.write_version,
  ]);
}
