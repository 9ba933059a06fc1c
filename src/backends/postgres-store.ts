/**
 * Leases in a PostgreSQL table, for candidates on several machines without Kubernetes. The
 * table is the tutorial's `leases` table plus a `version` column:
 *   name TEXT PRIMARY KEY, holder_identity TEXT, fencing_token BIGINT, renew_time and
 *   lease_duration_seconds and acquire_time DOUBLE PRECISION (epoch seconds), version BIGINT
 * - compare-and-swap: `UPDATE ... WHERE name = $1 AND version = $2`, and `version + 1`; an
 *   update that matches no row lost a race (or the row was deleted): ConflictError. No write is
 *   ever blind;
 * - durability: the session sets `synchronous_commit = on`, so a write that returned success
 *   is flushed to the server's WAL, whatever the server's default;
 * - every write notifies `leasehold_<table>` in the same statement (delivered at commit), and
 *   the store LISTENs on its one connection: standbys learn of a release at once. A watch is a
 *   hint: notifications are lost while the connection is down, so on every reconnect the watch
 *   reports "something may have changed" and the elector re-reads;
 * - one connection per process, reconnected with backoff; a call whose signal aborts while its
 *   query is in flight destroys the connection, so nothing is left hanging on a dead server;
 * - no password ever appears in a message: errors name the user, host, port and database only.
 */
import type pg from 'pg';
import { abortReason, throwIfAborted } from '../abort.js';
import { BackendError, BackendUnavailableError, ConflictError, InvalidRecordError, LeaseholdError, StoreOpenError } from '../errors.js';
import type { Logger } from '../log.js';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from './lease-store.js';
import { DEFAULT_POSTGRES_TABLE, clientConfig, describeTarget, parseTableName } from './postgres-config.js';
import { loadDriver as loadOptional } from './driver.js';

export interface PostgresStoreOptions {
  /** A postgres:// URL; when absent, the PG* variables and ~/.pgpass (as psql reads them). */
  url?: string | undefined;
  /** `schema.table` or `table` (schema public). Default public.leases. */
  table?: string | undefined;
  /** Bound on connecting, ms. Default 5000. */
  connectTimeoutMs?: number | undefined;
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
}

const COLUMNS = ['name', 'holder_identity', 'fencing_token', 'renew_time', 'lease_duration_seconds', 'acquire_time', 'version'];
let driver: typeof pg | null = null;

/**
 * Loads node-postgres. At load it probes for Cloudflare Workers: where `navigator` is missing
 * (Node 20) it constructs a fetch `Response`, which loads undici, whose HTTP parser is
 * WebAssembly, which a Node without the JIT (`--jitless`, how the image runs) may not have: the
 * process would crash. A `navigator` is lent for the probe only.
 */
async function loadDriver(): Promise<typeof pg> {
  if (driver) return driver;
  const lent = typeof (globalThis as { navigator?: unknown }).navigator === 'undefined';
  if (lent) Object.defineProperty(globalThis, 'navigator', { value: { userAgent: `Node.js/${process.versions.node}` }, configurable: true });
  try {
    driver = (await loadOptional('pg', 'postgres', () => import('pg'))).default;
    return driver;
  } finally {
    if (lent) delete (globalThis as { navigator?: unknown }).navigator;
  }
}

export class PostgresLeaseStore implements LeaseStore {
  readonly backend = 'postgres';
  readonly location: string;
  private readonly qualified: string;
  private readonly channel: string;
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private closed = false;
  private failures = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private readonly watchers = new Map<number, { name: string; onEvent: (e: WatchEvent) => void; onHealth?: ((healthy: boolean) => void) | undefined }>();
  private watchSeq = 0;
  /** The table has no notify trigger (made by hand): leasehold's own writes notify in their statement. */
  private notifyInStatement = false;

  private constructor(
    private readonly pg: typeof import('pg').default,
    private readonly config: pg.ClientConfig,
    private readonly schema: string,
    private readonly table: string,
    private readonly log: Logger | undefined,
  ) {
    this.qualified = `"${schema}"."${table}"`;
    this.channel = `leasehold_${schema}_${table}`.slice(0, 63);
    this.location = `table ${schema}.${table} on ${describeTarget(config)}`;
  }

  /**
   * Connects, creates the table if it is missing (when the role may), and checks its columns.
   * Everything that will not fix itself is a StoreOpenError here, at start: a failed
   * authentication, a missing database, no permission on the table, a table with the wrong
   * columns. An unreachable server is BackendUnavailableError (the caller decides).
   */
  static async open(opts: PostgresStoreOptions): Promise<PostgresLeaseStore> {
    const { schema, table } = parseTableName(opts.table ?? DEFAULT_POSTGRES_TABLE);
    const config = clientConfig(opts.url, opts.connectTimeoutMs ?? 5_000);
    const store = new PostgresLeaseStore(await loadDriver(), config, schema, table, opts.log);
    try {
      const client = await store.connection();
      await store.ensureTable(client, opts.readonly ?? false);
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  private async ensureTable(client: pg.Client, readonly: boolean): Promise<void> {
    const createSql = `CREATE TABLE IF NOT EXISTS ${this.qualified} (
  name TEXT PRIMARY KEY,
  holder_identity TEXT NOT NULL,
  fencing_token BIGINT NOT NULL,
  renew_time DOUBLE PRECISION NOT NULL,
  lease_duration_seconds DOUBLE PRECISION NOT NULL,
  acquire_time DOUBLE PRECISION NOT NULL DEFAULT 0,
  version BIGINT NOT NULL DEFAULT 1
)`;
    // A trigger notifies every change, by anyone (a DELETE in psql, a peer that knows nothing of
    // NOTIFY); leasehold's own writes also notify in their statement, for tables made without it.
    const fn = `"${this.schema}"."${`${this.table}_leasehold_notify`.slice(0, 63)}"`;
    // The payload is the row as written (or as deleted), so a standby observes a renewal without
    // reading, as a Kubernetes watch event carries the object.
    const triggerSql = `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN
  IF TG_OP = 'DELETE' THEN PERFORM pg_notify('${this.channel}', json_build_object('deleted', true, 'name', OLD.name, 'holder_identity', OLD.holder_identity,
    'fencing_token', OLD.fencing_token, 'renew_time', OLD.renew_time, 'lease_duration_seconds', OLD.lease_duration_seconds, 'acquire_time', OLD.acquire_time, 'version', OLD.version)::text);
  ELSE PERFORM pg_notify('${this.channel}', json_build_object('name', NEW.name, 'holder_identity', NEW.holder_identity, 'fencing_token', NEW.fencing_token,
    'renew_time', NEW.renew_time, 'lease_duration_seconds', NEW.lease_duration_seconds, 'acquire_time', NEW.acquire_time, 'version', NEW.version)::text);
  END IF; RETURN NULL; END $f$;
CREATE OR REPLACE TRIGGER leasehold_notify AFTER INSERT OR UPDATE OR DELETE ON ${this.qualified} FOR EACH ROW EXECUTE FUNCTION ${fn}()`;
    const present = async () =>
      (await client.query<{ ok: boolean }>('SELECT to_regclass($1) IS NOT NULL AS ok', [`${this.schema}.${this.table}`])).rows[0]?.ok === true;
    const exists = { rows: [{ ok: await present() }] };
    if (!exists.rows[0]?.ok && readonly)
      throw new StoreOpenError(`no lease table ${this.schema}.${this.table} on ${describeTarget(this.config)}: no candidate has run with it yet`);
    if (!exists.rows[0]?.ok) {
      try {
        // Candidates starting together would race to create it (CREATE TABLE IF NOT EXISTS is
        // not safe against itself): one creates it under a transaction-scoped advisory lock,
        // the others wait on the lock and then find it.
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`leasehold:${this.schema}.${this.table}`]);
        if (!(await present())) {
          await client.query(createSql);
          await client.query(triggerSql);
        }
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        const code = (err as { code?: string }).code;
        if (code === '42501' || code === '3F000') {
          throw new StoreOpenError(
            `${this.location}: the table does not exist and this role may not create it (${describeError(err)}); have an administrator run: ${createSql.replace(/\s+/g, ' ')}; ${triggerSql.replace(/\s+/g, ' ')}`,
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
    const trigger = await client.query("SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = 'leasehold_notify'", [
      `${this.schema}.${this.table}`,
    ]);
    this.notifyInStatement = trigger.rows.length === 0;
    if (this.notifyInStatement)
      this.log?.warn('postgres table without the leasehold_notify trigger: standbys learn of changes by re-reading', { store: this.location });
  }

  async get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    const r = await this.query<Row>(
      'get',
      `SELECT holder_identity, fencing_token, renew_time, lease_duration_seconds, acquire_time, version FROM ${this.qualified} WHERE name = $1`,
      [name],
      opts,
    );
    const row = r.rows[0];
    return row ? { record: toRecord(row), version: String(row.version) } : null;
  }

  async create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    const r = await this.query<{ version: string }>(
      'create',
      `WITH w AS (
         INSERT INTO ${this.qualified} (name, holder_identity, fencing_token, renew_time, lease_duration_seconds, acquire_time, version)
         VALUES ($1, $2, $3, $4, $5, $6, 1) ON CONFLICT (name) DO NOTHING RETURNING version
       ) SELECT version, CASE WHEN $8 THEN pg_notify($7, $1) END FROM w`,
      [name, ...values(record), this.channel, this.notifyInStatement],
      opts,
    );
    if (r.rows.length === 0) throw new ConflictError(`lease ${name} already exists in ${this.location}`);
    return String(r.rows[0]!.version);
  }

  async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    if (!/^\d{1,18}$/.test(expectedVersion)) throw new ConflictError(`lease ${name}: version ${JSON.stringify(expectedVersion)} is not one this store issued`);
    const r = await this.query<{ version: string }>(
      'update',
      `WITH w AS (
         UPDATE ${this.qualified}
         SET holder_identity = $3, fencing_token = $4, renew_time = $5, lease_duration_seconds = $6, acquire_time = $7, version = version + 1
         WHERE name = $1 AND version = $2 RETURNING version
       ) SELECT version, CASE WHEN $9 THEN pg_notify($8, $1) END FROM w`,
      [name, expectedVersion, ...values(record), this.channel, this.notifyInStatement],
      opts,
    );
    if (r.rows.length === 0) throw new ConflictError(`lease ${name} changed or was deleted since version ${expectedVersion} was read (${this.location})`);
    return String(r.rows[0]!.version);
  }

  /**
   * Notifications for one lease on the store's connection. Healthy while the connection is up
   * and listening; every reconnect reports an empty event, since notifications sent while it
   * was down are lost.
   */
  watch(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    const id = this.watchSeq++;
    this.watchers.set(id, { name, onEvent, onHealth });
    if (this.client) onHealth?.(true);
    else void this.connection().catch(() => {}); // health follows the connection
    return () => {
      this.watchers.delete(id);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const c = this.client ?? (await this.connecting?.catch(() => null)) ?? null;
    this.client = null;
    this.watchers.clear();
    await c?.end().catch(() => {});
  }

  /** The open connection, or a new one (LISTENing, synchronous_commit on). */
  private connection(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    if (this.closed) return Promise.reject(new BackendUnavailableError(`${this.location}: the store is closed`));
    this.connecting ??= (async () => {
      const client = new this.pg.Client(this.config);
      client.on('error', () => this.dropped(client)); // reported by the next call; never thrown
      client.on('end', () => this.dropped(client));
      client.on('notification', (n) => {
        if (n.channel !== this.channel) return;
        const e = parseNotification(n.payload ?? '');
        for (const w of this.watchers.values()) if (w.name === e.name) w.onEvent(e.event);
      });
      try {
        await client.connect();
        await client.query('SET synchronous_commit = on');
        await client.query(`LISTEN "${this.channel}"`);
      } catch (err) {
        await client.end().catch(() => {});
        throw this.translate(err, 'connect');
      }
      if (this.closed) {
        await client.end().catch(() => {});
        throw new BackendUnavailableError(`${this.location}: the store is closed`);
      }
      this.client = client;
      this.failures = 0;
      for (const w of this.watchers.values()) {
        w.onHealth?.(true);
        w.onEvent({}); // whatever happened while we were not listening
      }
      return client;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  /** The connection broke: watchers go unhealthy, and a reconnect is scheduled with backoff. */
  private dropped(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    for (const w of this.watchers.values()) w.onHealth?.(false);
    if (this.closed || this.watchers.size === 0 || this.reconnectTimer) return;
    const delay = Math.min(5_000, 100 * 2 ** Math.min(this.failures++, 6));
    this.log?.warn('postgres connection lost; reconnecting', { store: this.location, inMs: delay });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.connection().catch(() => this.dropped(client));
    }, delay);
    this.reconnectTimer.unref();
  }

  private async query<R extends pg.QueryResultRow>(op: string, sql: string, params: unknown[], opts: CallOptions | undefined): Promise<pg.QueryResult<R>> {
    throwIfAborted(opts);
    const client = await this.connection();
    throwIfAborted(opts);
    const signal = opts?.signal;
    // A query in flight cannot be taken back: on abort the connection is destroyed, which ends
    // it on our side (the server rolls back a statement whose client vanished before commit).
    const onAbort = () => {
      this.dropped(client);
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await client.query<R>(sql, params);
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      throw this.translate(err, op);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** One coded error per failure, naming the store but never the password. */
  private translate(err: unknown, op: string): LeaseholdError {
    if (err instanceof LeaseholdError) return err;
    const code = (err as { code?: string }).code ?? '';
    const what = `postgres ${op} on ${this.location}`;
    if (code === '28P01' || code === '28000') return new StoreOpenError(`${what}: authentication failed (${describeError(err)})`, { cause: err });
    if (code === '3D000') return new StoreOpenError(`${what}: ${describeError(err)}`, { cause: err });
    if (code === '42501') return new StoreOpenError(`${what}: no permission (${describeError(err)})`, { cause: err });
    if (code === '22003') return new InvalidRecordError(`${what}: ${describeError(err)}`, { cause: err });
    // A server certificate the client refuses is a misconfiguration (sslmode, sslrootcert), not an outage.
    if (
      /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|CERT_\w+|ERR_TLS_CERT_ALTNAME_INVALID)$/.test(
        code,
      )
    ) {
      return new StoreOpenError(`${what}: the server's certificate was refused (${describeError(err)}): check sslmode and sslrootcert`, { cause: err });
    }
    if (/server does not support SSL/i.test(describeError(err)))
      return new StoreOpenError(`${what}: ${describeError(err)} (sslmode asks for TLS)`, { cause: err });
    // Connection-level failures (refused, reset, timed out, the server shutting down): retry later.
    if (/^(08|57P)/.test(code) || /^E[A-Z]+$/.test(code) || /timeout|terminated|Connection/i.test(describeError(err))) {
      return new BackendUnavailableError(`${what}: ${describeError(err)}`, { cause: err });
    }
    return new BackendError(`${what}: ${describeError(err)}`, { cause: err });
  }
}

function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * A notification: the trigger's JSON row (a record, or a deletion with the last record), or a
 * bare lease name from a write on a table without the trigger (a hint: "read it again").
 */
export function parseNotification(payload: string): { name: string; event: WatchEvent } {
  if (!payload.startsWith('{')) return { name: payload, event: {} };
  try {
    const row = JSON.parse(payload) as Row & { name: string; deleted?: boolean };
    const record = toRecord(row);
    return row.deleted
      ? { name: row.name, event: { record: null, deleted: record } }
      : { name: row.name, event: { record: { record, version: String(row.version) } } };
  } catch {
    return { name: '', event: {} };
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
  return {
    holderIdentity: row.holder_identity,
    leaseDurationSeconds: Number(row.lease_duration_seconds),
    acquireTime: time(Number(row.acquire_time)),
    renewTime: time(Number(row.renew_time)),
    leaseTransitions: token,
  };
}
