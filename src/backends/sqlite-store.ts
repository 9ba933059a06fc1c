import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  BackendError,
  BackendUnavailableError,
  ConflictError,
  NotFoundError,
  StoreOpenError,
} from '../errors.js';
import type { LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from './lease-store.js';
import { checkSqliteFile } from './sqlite-file-check.js';

/**
 * Leases in one SQLite file shared by processes on one machine.
 *
 * The table is the tutorial's, column for column, so its Python candidates can share the file;
 * leasehold adds only `acquire_time`, with a default, which those candidates never write.
 *
 * Compare-and-swap: the version of a row is a digest of all its values. Every write by any
 * peer (the Python candidates know nothing of versions) changes `renew_time` or the holder, so
 * an update made inside BEGIN IMMEDIATE that finds a different digest has lost a race.
 *
 * Durability: WAL with synchronous=FULL fsyncs the log before COMMIT returns, so a write that
 * returned success survives a process crash and a power loss.
 *
 * better-sqlite3 is synchronous: a write waits on the busy timeout while another process holds
 * the write lock, blocking this process's event loop for at most that long (default 1 s).
 */
export interface SqliteStoreOptions {
  /** How long a write waits for another process's write lock before failing. Default 1000 ms. */
  busyTimeoutMs?: number;
  /** Open an existing file for reading only (`leasehold status`): nothing is created or migrated. */
  readonly?: boolean;
}

interface LeaseRow {
  holder_identity: string;
  fencing_token: number;
  renew_time: number;
  lease_duration_seconds: number;
  acquire_time: number;
}

export class SqliteLeaseStore implements LeaseStore {
  readonly backend = 'sqlite';
  readonly location: string;
  private readonly db: Database.Database;
  private readonly selectRow: Database.Statement<[string], LeaseRow>;
  private readonly insertRow: Database.Statement;
  private readonly updateRow: Database.Statement;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    this.location = path;
    checkSqliteFile(path);
    const readonly = options.readonly ?? false;
    try {
      if (!readonly) mkdirSync(dirname(path), { recursive: true });
      this.db = new Database(path, { timeout: options.busyTimeoutMs ?? 1000, readonly, fileMustExist: readonly });
    } catch (err) {
      throw new StoreOpenError(`cannot open SQLite lease store ${path}: ${(err as Error).message}`, { cause: err });
    }
    let hasAcquireTime = true;
    try {
      if (!readonly) {
        // Many processes may open a new file at once: give set-up more patience than a
        // lease operation gets, and retry the WAL switch, which can report busy at once.
        this.db.pragma('busy_timeout = 10000');
        retryBusy(() => this.db.pragma('journal_mode = WAL'));
        this.db.pragma('synchronous = FULL');
        retryBusy(() => this.migrate());
        this.db.pragma(`busy_timeout = ${Math.round(options.busyTimeoutMs ?? 1000)}`);
      } else {
        const columns = this.db.prepare('PRAGMA table_info(leases)').all() as { name: string }[];
        if (columns.length === 0) throw new Error('it has no leases table');
        hasAcquireTime = columns.some((c) => c.name === 'acquire_time');
      }
    } catch (err) {
      this.db.close();
      throw new StoreOpenError(`cannot prepare SQLite lease store ${path}: ${(err as Error).message}`, { cause: err });
    }
    this.selectRow = this.db.prepare(
      `SELECT holder_identity, fencing_token, renew_time, lease_duration_seconds, ${hasAcquireTime ? 'acquire_time' : '0 AS acquire_time'} FROM leases WHERE name = ?`,
    );
    if (readonly) {
      this.insertRow = this.updateRow = this.db.prepare('SELECT 1');
      return;
    }
    this.insertRow = this.db.prepare(
      'INSERT INTO leases (name, holder_identity, fencing_token, renew_time, lease_duration_seconds, acquire_time) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.updateRow = this.db.prepare(
      'UPDATE leases SET holder_identity = ?, fencing_token = ?, renew_time = ?, lease_duration_seconds = ?, acquire_time = ? WHERE name = ?',
    );
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
      })
      .immediate();
  }

  async get(name: string): Promise<VersionedRecord | null> {
    const row = this.run('get', () => this.selectRow.get(name));
    return row ? { record: toRecord(row), version: versionOf(row) } : null;
  }

  async create(name: string, record: LeaseRecord): Promise<string> {
    const row = toRow(record);
    return this.run('create', () =>
      this.db
        .transaction(() => {
          if (this.selectRow.get(name)) throw new ConflictError(`lease ${name} already exists`);
          this.insertRow.run(name, row.holder_identity, row.fencing_token, row.renew_time, row.lease_duration_seconds, row.acquire_time);
          return versionOf(row);
        })
        .immediate(),
    );
  }

  async update(name: string, record: LeaseRecord, expectedVersion: string): Promise<string> {
    const row = toRow(record);
    return this.run('update', () =>
      this.db
        .transaction(() => {
          const current = this.selectRow.get(name);
          if (!current) throw new NotFoundError(`lease ${name} does not exist`);
          if (versionOf(current) !== expectedVersion) {
            throw new ConflictError(`lease ${name} changed since it was read`);
          }
          this.updateRow.run(row.holder_identity, row.fencing_token, row.renew_time, row.lease_duration_seconds, row.acquire_time, name);
          return versionOf(row);
        })
        .immediate(),
    );
  }

  /**
   * Polls `PRAGMA data_version`, which changes when another connection commits to the file.
   * It reads only the WAL index (no lock, no disk I/O in the common case), so polling every
   * 50 ms is cheap. Fires on any commit to the file, not only to `name`, and carries no
   * record, so standbys keep their timed retries (reads here cost no network).
   */
  watch(_name: string, onEvent: (e: WatchEvent) => void, _onHealth?: (healthy: boolean) => void, everyMs = 50): () => void {
    const stmt = this.db.prepare('PRAGMA data_version').pluck();
    let last = stmt.get() as number;
    const timer = setInterval(() => {
      if (!this.db.open) return;
      try {
        const v = stmt.get() as number;
        if (v !== last) {
          last = v;
          onEvent({});
        }
      } catch {
        // a busy or closed database: the elector's own retries cover it
      }
    }, everyMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  /** Runs one statement or transaction, turning SQLite's errors into leasehold's. */
  private run<T>(op: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) throw err;
      const code = (err as { code?: string }).code ?? '';
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
        throw new BackendUnavailableError(`SQLite ${op} on ${this.location}: database is locked by another process`, { cause: err });
      }
      throw new BackendError(`SQLite ${op} on ${this.location} failed: ${(err as Error).message}`, { cause: err });
    }
  }
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

function toRecord(row: LeaseRow): LeaseRecord {
  return {
    holderIdentity: row.holder_identity,
    leaseDurationSeconds: row.lease_duration_seconds,
    acquireTime: row.acquire_time > 0 ? new Date(row.acquire_time * 1000) : null,
    renewTime: new Date(row.renew_time * 1000),
    leaseTransitions: row.fencing_token,
  };
}

function toRow(r: LeaseRecord): LeaseRow {
  const renew = r.renewTime ?? new Date();
  return {
    holder_identity: r.holderIdentity,
    fencing_token: r.leaseTransitions,
    renew_time: renew.getTime() / 1000,
    lease_duration_seconds: r.leaseDurationSeconds,
    acquire_time: r.acquireTime ? r.acquireTime.getTime() / 1000 : 0,
  };
}

/** All of a row's values; any write by any peer changes at least renew_time or the holder. */
function versionOf(row: LeaseRow): string {
  return JSON.stringify([row.holder_identity, row.fencing_token, row.renew_time, row.lease_duration_seconds, row.acquire_time]);
}
