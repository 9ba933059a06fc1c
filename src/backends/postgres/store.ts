/**
 * Leases in a PostgreSQL table, for candidates on several machines without Kubernetes. The
 * table is the tutorial's `leases` table plus a `version` column:
 *   name TEXT PRIMARY KEY, holder_identity TEXT, fencing_token BIGINT, renew_time and
 *   lease_duration_seconds and acquire_time DOUBLE PRECISION (epoch seconds), version BIGINT,
 *   successor TEXT (a standby's claim to go first, successor-column.ts; optional: a table
 *   without it, that this role may not alter, costs only the fast graceful handoff)
 * - compare-and-swap: `UPDATE ... WHERE name = $1 AND version = $2`; an update that matches no
 *   row lost a race (or the row was deleted): ConflictError. No write is ever blind. A version
 *   never repeats for a lease name, across deletes and re-creates (writeVersion below);
 * - one connection per process, made, kept, bounded and given up by connection.ts: every
 *   statement bounded on the server, a statement nobody waits for cancelled, reconnects backed
 *   off, the session's `synchronous_commit = on`, and the driver's failures as coded errors;
 * - every write notifies the table's channel (notify.ts) with the lease's name, after it
 *   has committed, in a statement of its own: a write never waits on, nor fails with, its
 *   notification (the server's NOTIFY queue can be filled by any role that may connect). The
 *   table's trigger notifies for other writers only. The store LISTENs on its one connection. A notification is a hint to read the row, nothing
 *   more: any role that can connect may send one, so its payload never reaches the elector, and
 *   a flood of them costs at most one read per hint interval. Notifications are lost while the
 *   connection is down, so every reconnect is a hint too;
 * - no password ever appears in a message: errors name the user, host, port and database only.
 */
import type pg from 'pg';
import { realClock } from '../../clock.js';
import { BackendError, ConflictError, InvalidRecordError, LeaseholdError, StoreOpenError, describeError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { CallOptions, LeaseRecord, LeaseStore, SuccessorClaimSupport, VersionedRecord, WatchEvent } from '../lease-store.js';
import { DEFAULT_POSTGRES_TABLE, describeTarget, parseTableName } from './config.js';
import { PostgresConnection, codedError, connectionSettings, loadDriver } from './connection.js';
import type { GroupStore, GroupWrite, HighWaterRaise, RaisedAndTaken, RaisedHighWater } from '../group-store.js';
import { HoldsGroupStore } from '../held-group-store.js';
import { PostgresGroupStore } from './group-store.js';
import { HintThrottle, channelName } from './notify.js';
import { NOTIFIES_AFTER_COMMIT, addSuccessorStatement, adminScript, createStatements, notifyFunctionStatement } from './schema.js';
import { encodeSuccessor, withSuccessor } from '../successor-column.js';
import { MAX_TEXT_BYTES, boundedColumn, oversizedColumn, oversizedNotice } from '../bounded-sql.js';

export { MAX_BACKENDS } from './connection.js';
/** At most one read per this, however many notifications arrive. */
const DEFAULT_HINT_INTERVAL_MS = 250;
/**
 * How long adding the successor column may wait for the table's lock. ALTER TABLE queues for
 * an exclusive lock, and every read and write of the table queues behind it meanwhile: the
 * applications sharing the database must not stall for leasehold's upgrade. If it cannot have
 * the lock at once, this process runs without the column and a later start tries again.
 */
const ADD_COLUMN_LOCK_TIMEOUT_MS = 200;
/**
 * The version every write gives the row: the writing transaction's id (64 bits with its epoch,
 * never reused by the server) above 2^62. A version counted per row (`version + 1`) started
 * again at 1 when the row was deleted and re-created, so a version read before the deletion
 * became current again and a write from that old read was accepted. The offset keeps these
 * versions clear of the small ones an earlier leasehold counted up from 1 in the same table.
 */
const WRITE_VERSION = 'txid_current() + 4611686018427387904';
/** A notification that could not be sent is logged at most once per this. */
const HINT_FAILURE_LOG_INTERVAL_MS = 60_000;
/** The largest value of the version column (BIGINT): anything past it was never issued. */
const MAX_BIGINT = 9223372036854775807n;

export interface PostgresStoreOptions {
  /** A postgres:// URL; when absent, the PG* variables and ~/.pgpass (as psql reads them). */
  url?: string | undefined;
  /** `schema.table` or `table` (schema public). Default public.leases. */
  table?: string | undefined;
  /** Bound on connecting, ms. Default 5000. */
  connectTimeoutMs?: number | undefined;
  /**
   * The caller's bound on one request, ms (the elector's requestTimeout). The server ends a
   * statement at 80% of it (statement_timeout; a lock wait at 90% of that, lock_timeout), before
   * the caller gives up, so nothing is left running for nobody. Default 5000.
   */
  requestTimeoutMs?: number | undefined;
  /** At most one hint (one re-read) per this many ms. Default 250. */
  hintIntervalMs?: number | undefined;
  log?: Logger | undefined;
  /** Only read (`leasehold status`): a missing table is an error, never created. */
  readonly?: boolean | undefined;
}

interface Row {
  holder_identity: string;
  fencing_token: string;
  renew_time: number;
  lease_duration_seconds: number;
  acquire_time: number;
  version: string;
  successor: string;
  /** bounded-sql.ts: the columns over their bound and their sizes, or null. */
  oversized?: string | null;
}

const BOUNDED: [string, number][] = [['holder_identity', MAX_TEXT_BYTES]];
const BOUNDED_WITH_SUCCESSOR: [string, number][] = [...BOUNDED, ['successor', MAX_TEXT_BYTES]];

const COLUMNS = ['name', 'holder_identity', 'fencing_token', 'renew_time', 'lease_duration_seconds', 'acquire_time', 'version'];

interface Watcher {
  name: string;
  hints: HintThrottle;
  onHealth?: ((healthy: boolean) => void) | undefined;
}

export class PostgresLeaseStore extends HoldsGroupStore implements LeaseStore, GroupStore {
  readonly backend = 'postgres';
  readonly location: string;
  private readonly qualified: string;
  private readonly channel: string;
  private readonly conn: PostgresConnection;
  private readonly watchers = new Map<number, Watcher>();
  private watchSeq = 0;
  /**
   * leasehold notifies its own writes after they commit. False only while the table's trigger
   * is an earlier one that notifies inside every write, which this role may not replace.
   */
  private notifyAfterCommit = true;
  /** When a notification that could not be sent was last logged (performance.now() ms). */
  private hintFailureLoggedAt = -Infinity;
  /** What is wrong with the store that will not fix itself (the table was dropped); null when fine. */
  private problemText: string | null = null;
  /** The last oversized-values notice, so a row that keeps them is told once. */
  private toldOversized: string | null = null;
  /** The table has the `successor` column, found or added at open. */
  private hasSuccessor = false;
  /** Opened to read only (`leasehold status`). */
  private readOnly = false;
  /** The shard groups' records (group-store.ts), on this store's connection: each group call goes to it (HoldsGroupStore). */
  protected readonly groups: PostgresGroupStore;

  /** The header raised in one statement (PostgresGroupStore.raiseHighWater); Kubernetes has no such call. */
  raiseHighWater(group: string, raise: HighWaterRaise, opts?: CallOptions): Promise<RaisedHighWater> {
    return this.groups.raiseHighWater(group, raise, opts);
  }

  /** The raise and its takes in one statement (PostgresGroupStore.raiseAndTake). */
  raiseAndTake(group: string, raise: Omit<HighWaterRaise, 'count'>, takes: readonly GroupWrite[], opts?: CallOptions): Promise<RaisedAndTaken> {
    return this.groups.raiseAndTake(group, raise, takes, opts);
  }

  private constructor(
    driver: typeof import('pg').default,
    private readonly config: pg.ClientConfig,
    private readonly schema: string,
    private readonly table: string,
    statementTimeoutMs: number,
    private readonly hintIntervalMs: number,
    private readonly log: Logger | undefined,
  ) {
    super();
    this.qualified = `"${schema}"."${table}"`;
    this.channel = channelName(schema, table);
    this.location = `table ${schema}.${table} on ${describeTarget(config)}`;
    this.conn = new PostgresConnection(
      driver,
      { config, statementTimeoutMs, channel: this.channel, location: this.location, log },
      {
        connected: (client) => this.groups.connected(client),
        up: () => {
          for (const w of this.watchers.values()) {
            w.onHealth?.(true);
            w.hints.hint(); // whatever happened while we were not listening
          }
          this.groups.up();
        },
        down: () => {
          for (const w of this.watchers.values()) w.onHealth?.(false);
          this.groups.down();
        },
        notified: (lease) => {
          for (const w of this.watchers.values()) if (w.name === lease) w.hints.hint();
        },
        answered: () => {
          this.problemText = null;
        },
        wanted: () => this.watchers.size > 0 || this.groups.watching(),
        translate: (err, op) => this.translate(err, op),
      },
    );
    this.groups = new PostgresGroupStore(
      {
        target: describeTarget(config),
        role: describeTarget(config).split('@')[0]!,
        hintIntervalMs,
        readOnly: () => this.readOnly,
        log,
        query: (op, sql, params, opts) => this.conn.query(op, sql, params, opts),
        current: () => this.conn.current,
        send: (client, sql, params) => this.conn.send(client, sql, params),
      },
      schema,
      table,
    );
  }

  /**
   * Connects, creates the table if it is missing (when the role may), and checks its columns.
   * Everything that will not fix itself is a StoreOpenError here, at start: a failed
   * authentication, a missing database, no permission on the table, a table with the wrong
   * columns. An unreachable server, or a table locked past the statement bound, is
   * BackendUnavailableError (the caller decides); opening never waits longer than the connect
   * bound plus a few statement bounds.
   */
  static async open(opts: PostgresStoreOptions): Promise<PostgresLeaseStore> {
    const { schema, table } = parseTableName(opts.table ?? DEFAULT_POSTGRES_TABLE);
    const { config, statementTimeoutMs } = connectionSettings(opts.url, opts.connectTimeoutMs, opts.requestTimeoutMs);
    const driver = await loadDriver();
    const store = new PostgresLeaseStore(driver, config, schema, table, statementTimeoutMs, opts.hintIntervalMs ?? DEFAULT_HINT_INTERVAL_MS, opts.log);
    store.readOnly = opts.readonly ?? false;
    try {
      const client = await store.conn.connect();
      await store.ensureTable(client, opts.readonly ?? false);
    } catch (err) {
      await store.close();
      throw store.translate(err, 'open');
    }
    return store;
  }

  private async ensureTable(client: pg.Client, readonly: boolean): Promise<void> {
    const present = async () =>
      (await client.query<{ ok: boolean }>('SELECT to_regclass($1) IS NOT NULL AS ok', [`${this.schema}.${this.table}`])).rows[0]?.ok === true;
    const exists = await present();
    if (!exists && readonly)
      throw new StoreOpenError(
        `no lease table ${this.schema}.${this.table} on ${describeTarget(this.config)}: no candidate has run with it yet, or it was dropped`,
      );
    if (!exists) {
      try {
        // Candidates starting together would race to create it (CREATE TABLE IF NOT EXISTS is
        // not safe against itself): one creates it under a transaction-scoped advisory lock,
        // the others wait on the lock and then find it.
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`leasehold:${this.schema}.${this.table}`]);
        if (!(await present())) for (const statement of createStatements(this.schema, this.table)) await client.query(statement);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        const code = (err as { code?: string }).code;
        if (code === '42501' || code === '3F000') {
          const role = describeTarget(this.config).split('@')[0]!;
          throw new StoreOpenError(
            `${this.location}: the table does not exist and this role may not create it (${describeError(err)}); have an administrator run (docs/postgres.md): ${adminScript(this.schema, this.table, role).replace(/\s+/g, ' ')}`,
            { cause: err },
          );
        }
        throw this.translate(err, 'create table');
      }
    }
    // No permission to read or write it is found now, not at the first election.
    try {
      await client.query(`SELECT 1 FROM ${this.qualified} WHERE false FOR UPDATE`);
    } catch (err) {
      if ((err as { code?: string }).code === '42501') {
        throw new StoreOpenError(
          `${this.location}: no permission on the table (${describeError(err)}); grant it with: GRANT SELECT, INSERT, UPDATE ON ${this.schema}.${this.table} TO <role>`,
          { cause: err },
        );
      }
      throw this.translate(err, 'check table');
    }
    // From the catalog, which every role may read (information_schema hides what it may not use).
    const cols = await client.query<{ column_name: string }>(
      'SELECT attname AS column_name FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped',
      [`${this.schema}.${this.table}`],
    );
    const have = new Set(cols.rows.map((r) => r.column_name));
    const missing = COLUMNS.filter((c) => !have.has(c));
    if (missing.length > 0) {
      throw new StoreOpenError(
        `${this.location} has the wrong columns: missing ${missing.join(', ')}; leasehold needs ${COLUMNS.join(', ')} (see docs/postgres.md)`,
      );
    }
    this.hasSuccessor = have.has('successor') || (!readonly && (await this.addSuccessor(client)));
    // The trigger counts only if it notifies this table's channel: one made by an older
    // leasehold notified `leasehold_<schema>_<table>`, which nobody listens to any more.
    const trigger = await client.query<{ proname: string; nspname: string; prosrc: string }>(
      "SELECT p.proname, n.nspname, p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace n ON n.oid = p.pronamespace WHERE t.tgrelid = to_regclass($1) AND t.tgname = 'leasehold_notify'",
      [`${this.schema}.${this.table}`],
    );
    let triggerFn = trigger.rows[0]?.proname;
    // A trigger as an earlier leasehold made it notifies inside every write, on this table's
    // channel or (the earliest) on another: its body is brought up to date either way.
    if (triggerFn !== undefined && !trigger.rows[0]!.prosrc.includes(NOTIFIES_AFTER_COMMIT)) {
      const fn = `"${trigger.rows[0]!.nspname.replace(/"/g, '""')}"."${triggerFn.replace(/"/g, '""')}"`;
      const quiet = !readonly && (await this.quietTrigger(client, fn));
      // Replaced, it notifies this table's channel; kept, one on another channel hints nobody,
      // so leasehold's writes still notify after they commit.
      if (quiet) triggerFn = this.channel;
      else if (triggerFn === this.channel) this.notifyAfterCommit = false;
    }
    if (triggerFn === undefined)
      this.log?.warn('postgres table without the leasehold_notify trigger: standbys learn of changes by re-reading', { store: this.location });
    else if (triggerFn !== this.channel)
      this.log?.warn(
        'postgres table with an older leasehold_notify trigger (it notifies another channel): leasehold notifies from its own writes; recreate the trigger with the SQL in docs/postgres.md',
        { store: this.location },
      );
  }

  /**
   * Replaces the body of this table's trigger function, made by an earlier leasehold, with one
   * that leaves leasehold's own writes to notify after they commit (CREATE OR REPLACE keeps the
   * function, so the trigger and the table are not touched, nor locked). A role that does not
   * own the function keeps the earlier one: its writes fail while the NOTIFY queue is full, and
   * it says once what an administrator runs.
   */
  private async quietTrigger(client: pg.Client, fn: string): Promise<boolean> {
    const sql = notifyFunctionStatement(this.schema, this.table, fn);
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`leasehold:${this.schema}.${this.table}`]);
      await client.query(sql);
      await client.query('COMMIT');
      this.log?.info("postgres table: the leasehold_notify trigger now leaves leasehold's writes to notify after they commit", { store: this.location });
      return true;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      const code = (err as { code?: string }).code ?? '';
      // The advisory lock is one any role that may connect can hold: waiting it out must not
      // keep every candidate from starting. 55P03: a lock not had in time; 57014: the statement bound.
      if (code === '55P03' || code === '57014') {
        this.log?.warn(
          `postgres table with an earlier leasehold_notify trigger function, which notifies inside every write and which could not be replaced now (${describeError(err)}): another session holds the lock leasehold changes the table under; while another session fills the server's NOTIFY queue, every lease write fails; the next start tries again`,
          { store: this.location },
        );
        return false;
      }
      if (code !== '42501') throw this.translate(err, 'update the trigger function');
      this.log?.warn(
        `postgres table with an earlier leasehold_notify trigger function, which notifies inside every write and which this role may not replace (${describeError(err)}): while another session fills the server's NOTIFY queue, every lease write fails; an administrator runs: ${sql.replace(/\s+/g, ' ')};`,
        { store: this.location },
      );
      return false;
    }
  }

  /**
   * Tells the listeners of a write that has committed: its own statement, not awaited. A
   * notification is only a hint (standbys read on their own at the record's expiry and at the
   * safety re-read), so one that fails (the NOTIFY queue full, the connection gone) is logged at
   * most once per HINT_FAILURE_LOG_INTERVAL_MS and never fails the write.
   */
  private hintAfterCommit(name: string): void {
    const client = this.conn.current;
    if (!this.notifyAfterCommit || !client) return;
    this.conn.send(client, 'SELECT pg_notify($1, $2)', [this.channel, name]).catch((err: unknown) => {
      const now = performance.now();
      if (now - this.hintFailureLoggedAt < HINT_FAILURE_LOG_INTERVAL_MS) return;
      this.hintFailureLoggedAt = now;
      this.log?.warn('postgres notification not sent: standbys learn of changes by re-reading', { store: this.location, error: describeError(err) });
    });
  }

  /**
   * Adds the successor column to a table made before it, under the advisory lock that table
   * creation takes, when this role may (it owns the table). A role that may not, or a table
   * busy past ADD_COLUMN_LOCK_TIMEOUT_MS, leaves the table as it is: leasehold works as before
   * without the fast graceful handoff, and says once what an administrator runs.
   */
  private async addSuccessor(client: pg.Client): Promise<boolean> {
    const sql = addSuccessorStatement(this.schema, this.table);
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`leasehold:${this.schema}.${this.table}`]);
      // Another candidate may have added it while this one waited on the lock: then no ALTER,
      // whose exclusive lock would stall the table for nothing.
      const found = await client.query(
        "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'successor' AND attnum > 0 AND NOT attisdropped",
        [`${this.schema}.${this.table}`],
      );
      if (found.rows.length === 0) {
        await client.query(`SET LOCAL lock_timeout = ${ADD_COLUMN_LOCK_TIMEOUT_MS}`);
        await client.query(sql);
      }
      await client.query('COMMIT');
      this.log?.info('postgres table: added the successor column (fast graceful handoff)', { store: this.location });
      return true;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      const code = (err as { code?: string }).code ?? '';
      // 42501: not the table's owner; 55P03: the table is busy; 57014: the statement bound.
      if (!/^(42501|55P03|57014)$/.test(code)) throw this.translate(err, 'add the successor column');
      this.log?.info(
        `postgres table without the successor column, which this role may not add now (${describeError(err)}): leasehold works as before, without the fast graceful handoff; to have it, an administrator runs: ${sql};`,
        { store: this.location },
      );
      return false;
    }
  }

  /** Claims are kept while the table has the `successor` column: found or added at open (docs/postgres.md). */
  readonly successorClaims: SuccessorClaimSupport = { kept: () => this.hasSuccessor };

  async get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    const r = await this.conn.query<Row>(
      'get',
      // The text columns are any size another role with rights on the table stored: bounded-sql.ts.
      `SELECT ${boundedColumn('holder_identity', MAX_TEXT_BYTES)}, fencing_token, renew_time, lease_duration_seconds, acquire_time, version, ${this.hasSuccessor ? `${boundedColumn('successor', MAX_TEXT_BYTES)}, ${oversizedColumn(BOUNDED_WITH_SUCCESSOR)}` : `'' AS successor, ${oversizedColumn(BOUNDED)}`} FROM ${this.qualified} WHERE name = $1`,
      [name],
      opts,
    );
    const row = r.rows[0];
    if (row?.oversized && row.oversized !== this.toldOversized) this.log?.warn(oversizedNotice(name, this.location, row.oversized), { store: this.location });
    this.toldOversized = row?.oversized ?? null;
    return row ? { record: toRecord(row), version: String(row.version) } : null;
  }

  async create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    // Without the column, the claim is dropped (successorClaims.kept() false: nobody claims).
    const r = await this.conn.query<{ version: string }>(
      'create',
      `WITH w AS (
         INSERT INTO ${this.qualified} (name, holder_identity, fencing_token, renew_time, lease_duration_seconds, acquire_time, version${this.hasSuccessor ? ', successor' : ''})
         VALUES ($1, $2, $3, $4, $5, $6, ${WRITE_VERSION}${this.hasSuccessor ? ', $7' : ''}) ON CONFLICT (name) DO NOTHING RETURNING version
       ) SELECT version FROM w`,
      [name, ...values(record), ...(this.hasSuccessor ? [encodeSuccessor(record.successor)] : [])],
      opts,
    );
    if (r.rows.length === 0) throw new ConflictError(`lease ${name} already exists in ${this.location}`);
    this.hintAfterCommit(name);
    return String(r.rows[0]!.version);
  }

  async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    if (!/^\d{1,19}$/.test(expectedVersion) || BigInt(expectedVersion) > MAX_BIGINT)
      throw new ConflictError(`lease ${name}: version ${JSON.stringify(expectedVersion)} is not one this store issued`);
    const r = await this.conn.query<{ version: string }>(
      'update',
      `WITH w AS (
         UPDATE ${this.qualified}
         SET holder_identity = $3, fencing_token = $4, renew_time = $5, lease_duration_seconds = $6, acquire_time = $7, version = ${WRITE_VERSION}${this.hasSuccessor ? ', successor = $8' : ''}
         WHERE name = $1 AND version = $2 RETURNING version
       ) SELECT version FROM w`,
      [name, expectedVersion, ...values(record), ...(this.hasSuccessor ? [encodeSuccessor(record.successor)] : [])],
      opts,
    );
    if (r.rows.length === 0) throw new ConflictError(`lease ${name} changed or was deleted since version ${expectedVersion} was read (${this.location})`);
    this.hintAfterCommit(name);
    return String(r.rows[0]!.version);
  }

  /**
   * Hints for one lease on the store's connection: every event is empty ("read it again"),
   * whatever the notification said, and at most one per hint interval. Healthy while the
   * connection is up and listening; every reconnect is a hint, since notifications sent while
   * it was down are lost.
   */
  watch(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    const id = this.watchSeq++;
    const hints = new HintThrottle(realClock, this.hintIntervalMs, () => onEvent({}));
    this.watchers.set(id, { name, hints, onHealth });
    if (this.conn.current) onHealth?.(true);
    else void this.conn.connect().catch(() => {}); // health follows the connection
    return () => {
      hints.cancel();
      this.watchers.delete(id);
    };
  }

  /**
   * What is wrong with the store that will not fix itself, for health and readiness (the
   * table was dropped under the candidates); null while the last request found the table.
   */
  problem(): string | null {
    return this.problemText;
  }

  async close(): Promise<void> {
    const closing = this.conn.close();
    for (const w of this.watchers.values()) w.hints.cancel();
    this.watchers.clear();
    this.groups.close();
    await closing;
  }

  /** One coded error per failure, naming the store but never the password: a dropped table is this store's problem() too. */
  private translate(err: unknown, op: string): LeaseholdError {
    const what = `postgres ${op} on ${this.location}`;
    if (!(err instanceof LeaseholdError) && (err as { code?: string }).code === '42P01' && op.startsWith('group ')) {
      return new BackendError(
        `${what}: the shard groups' table does not exist (it was dropped): recreate it with the SQL in docs/postgres.md, or restart leasehold to create it`,
        { cause: err },
      );
    }
    if (!(err instanceof LeaseholdError) && (err as { code?: string }).code === '42P01') {
      this.problemText = `the lease table ${this.schema}.${this.table} does not exist (it was dropped): recreate it with the SQL in docs/postgres.md, or restart leasehold to create it`;
      return new BackendError(`${what}: ${this.problemText}`, { cause: err });
    }
    return codedError(err, what, this.conn.statementTimeoutMs);
  }
}

function values(r: LeaseRecord): unknown[] {
  return [r.holderIdentity, r.leaseTransitions, (r.renewTime?.getTime() ?? 0) / 1000, r.leaseDurationSeconds, (r.acquireTime?.getTime() ?? 0) / 1000];
}

function toRecord(row: Row): LeaseRecord {
  const token = Number(row.fencing_token);
  if (!Number.isSafeInteger(token) || token < 0) {
    throw new InvalidRecordError(`the row's fencing_token ${row.fencing_token} is not an integer from 0 to ${Number.MAX_SAFE_INTEGER}`);
  }
  const time = (s: number) => (s > 0 && Number.isFinite(s) ? new Date(Math.round(s * 1000)) : null);
  return withSuccessor(
    {
      holderIdentity: row.holder_identity,
      leaseDurationSeconds: Number(row.lease_duration_seconds),
      acquireTime: time(Number(row.acquire_time)),
      renewTime: time(Number(row.renew_time)),
      leaseTransitions: token,
    },
    row.successor,
  );
}
