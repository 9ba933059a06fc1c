/**
 * The PostgreSQL store's one connection to the server, and everything about keeping it (the
 * store, store.ts, keeps the table and the leases):
 * - one connection per process (MAX_BACKENDS), which also LISTENs on the table's channel: the
 *   database is shared with the applications leasehold protects, so it must never harm them;
 * - the session sets `synchronous_commit = on`, so a write that returned success is flushed to
 *   the server's WAL, whatever the server's default;
 * - every statement is bounded on the server (`statement_timeout`, `lock_timeout`) a little
 *   inside the client's own bound; a statement the caller gives up on is cancelled on the
 *   server (a CancelRequest, which takes no connection slot), and only when that does not end
 *   it within CANCEL_GRACE_MS is the connection abandoned; a new one is made only after the
 *   abandoned backend must have ended, and reconnects back off after timeouts as after failed
 *   connects. So a candidate holds at most one backend whatever happens to the table;
 * - a lost connection is reconnected on its own while anyone watches (ConnectionHooks.wanted),
 *   and every reconnect is a hint, since notifications sent while it was down are lost;
 * - the driver's failures become coded errors (codedError): a refused server certificate is a
 *   misconfiguration, not an outage; no password ever appears in a message (errors name the
 *   user, host, port and database only).
 */
import { connect as netConnect } from 'node:net';
import type pg from 'pg';
import { abortReason, throwIfAborted } from '../../abort.js';
import { BackendError, BackendUnavailableError, InvalidRecordError, LeaseholdError, StoreOpenError, describeError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { reconnectDelayMs } from '../../util/backoff.js';
import { isTlsRefused } from '../../util/tls-refused.js';
import type { CallOptions } from '../lease-store.js';
import { loadDriver as loadOptional } from '../driver.js';
import { clientConfig } from './config.js';
import { notifiedLease } from './notify.js';
import { NOTIFIES_AFTER_COMMIT } from './schema.js';

/** Backends one candidate holds at any moment (the documented bound: docs/postgres.md). */
export const MAX_BACKENDS = 1;
/** How long a cancelled statement may take to end before its connection is abandoned. */
const CANCEL_GRACE_MS = 1_000;
/** Checks for a vanished client during a statement (PostgreSQL 14+), so an abandoned backend ends soon. */
const CLIENT_CHECK_MS = 1_000;
/** Default bound on connecting, ms. */
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** Default bound on one request, when the caller gives none (`leasehold status`, the library). */
const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

let driver: typeof pg | null = null;

/**
 * Loads node-postgres. At load it probes for Cloudflare Workers: where `navigator` is missing
 * (Node 20) it constructs a fetch `Response`, which loads undici, whose HTTP parser is
 * WebAssembly, which a Node without the JIT (`--jitless`, how the image runs) may not have: the
 * process would crash. A `navigator` is lent for the probe only.
 */
export async function loadDriver(): Promise<typeof pg> {
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

export interface ConnectionSettings {
  /** node-postgres's settings: the URL's (or the PG* variables'), with the server's bounds. */
  config: pg.ClientConfig;
  /** The server's bound on one statement (statement_timeout), ms. */
  statementTimeoutMs: number;
}

/**
 * The settings for `url`: the server ends a statement at 80% of the caller's request bound
 * (statement_timeout; a lock wait at 90% of that, lock_timeout), before the caller gives up, so
 * nothing is left running for nobody. InvalidConfigError for a URL clientConfig refuses.
 */
export function connectionSettings(url: string | undefined, connectTimeoutMs?: number, requestTimeoutMs?: number): ConnectionSettings {
  const statementTimeoutMs = Math.max(1, Math.floor((requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS) * 0.8));
  const config: pg.ClientConfig = {
    ...clientConfig(url, connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS),
    // Startup parameters: the server ends whatever leasehold runs, even a lock wait, in time.
    statement_timeout: statementTimeoutMs,
    // A little shorter, so that a wait for a lock is reported as one.
    lock_timeout: Math.max(1, Math.floor(statementTimeoutMs * 0.9)),
  };
  return { config, statementTimeoutMs };
}

/** What the connection tells its store, and asks of it. */
export interface ConnectionHooks {
  /** Connected and listening on the store's channel, before up(): what else the new connection needs (the groups' LISTEN). */
  connected?(client: pg.Client): Promise<void>;
  /** Connected and listening (again): whatever was notified meanwhile is lost. */
  up(): void;
  /** The connection broke, or was abandoned. */
  down(): void;
  /** A notification on the store's channel named this lease (notify.ts notifiedLease). */
  notified(lease: string): void;
  /** A statement was answered. */
  answered(): void;
  /** Whether to reconnect on its own after a failure: while anyone watches. */
  wanted(): boolean;
  /** The coded error for a failure of `op`: the store's reading of its table's errors, then codedError. */
  translate(err: unknown, op: string): LeaseholdError;
}

export interface ConnectionOptions extends ConnectionSettings {
  /** The channel to LISTEN on (notify.ts channelName). */
  channel: string;
  /** The store, as messages name it (no password). */
  location: string;
  log?: Logger | undefined;
}

export class PostgresConnection {
  readonly statementTimeoutMs: number;
  private client: pg.Client | null = null;
  private connecting: Promise<pg.Client> | null = null;
  private closed = false;
  /** Failed connects, abandoned connections and timed-out statements since the last success. */
  private failures = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** No new connection before this (performance.now() ms): the backoff, or an abandoned backend's end. */
  private reconnectAt = 0;

  constructor(
    private readonly pg: typeof import('pg').default,
    private readonly opts: ConnectionOptions,
    private readonly hooks: ConnectionHooks,
  ) {
    this.statementTimeoutMs = opts.statementTimeoutMs;
  }

  /** The connection while it is up, for a statement nobody waits for (send); null otherwise. */
  get current(): pg.Client | null {
    return this.client;
  }

  /**
   * Each connection's last statement sent: the next one starts once it has settled. One
   * connection runs one statement at a time anyway; pg queued the rest itself, and pg 8.16
   * deprecates that (a raw warning line among the JSON logs of every member that heartbeats
   * while it lists), so the queue is kept here.
   */
  private readonly tails = new WeakMap<pg.Client, Promise<unknown>>();

  /**
   * Runs `sql` on `client` after the statements sent to it before. `started` is told when the
   * statement is handed to the driver; one whose `signal` aborted while it waited is never sent.
   */
  send<R extends pg.QueryResultRow>(
    client: pg.Client,
    sql: string,
    params: unknown[] = [],
    signal?: AbortSignal,
    started?: () => void,
  ): Promise<pg.QueryResult<R>> {
    const before = this.tails.get(client) ?? Promise.resolve();
    const run = before.then(() => {
      if (signal?.aborted) throw abortReason(signal);
      started?.();
      return client.query<R>(sql, params);
    });
    this.tails.set(
      client,
      run.catch(() => {}),
    );
    return run;
  }

  /** The open connection, or a new one (LISTENing, synchronous_commit on), unless backing off. */
  connect(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    if (this.closed) return Promise.reject(new BackendUnavailableError(`${this.opts.location}: the store is closed`));
    const wait = Math.ceil(this.reconnectAt - performance.now());
    if (wait > 0 && !this.connecting) {
      return Promise.reject(new BackendUnavailableError(`postgres connect to ${this.opts.location}: backing off after failures, next attempt in ${wait} ms`));
    }
    this.connecting ??= (async () => {
      const client = new this.pg.Client(this.opts.config);
      client.on('error', () => this.dropped(client)); // reported by the next call; never thrown
      client.on('end', () => this.dropped(client));
      client.on('notification', (n) => {
        if (n.channel !== this.opts.channel) return;
        this.hooks.notified(notifiedLease(n.payload ?? ''));
      });
      try {
        await client.connect();
        await client.query('SET synchronous_commit = on');
        // The trigger leaves this session's writes to notify after they commit (the store's hintAfterCommit).
        await client.query(`SET ${NOTIFIES_AFTER_COMMIT} = on`);
        // PostgreSQL 14+: a backend whose client vanished mid-statement ends within a second.
        await client.query(`SET client_connection_check_interval = ${CLIENT_CHECK_MS}`).catch((err: unknown) => {
          if ((err as { code?: string }).code !== '42704') throw err; // unknown parameter: an older server
        });
        await client.query(`LISTEN "${this.opts.channel}"`);
        await this.hooks.connected?.(client);
      } catch (err) {
        await client.end().catch(() => {});
        this.backOff(0);
        throw this.hooks.translate(err, 'connect');
      }
      if (this.closed) {
        await client.end().catch(() => {});
        throw new BackendUnavailableError(`${this.opts.location}: the store is closed`);
      }
      this.client = client;
      this.hooks.up();
      return client;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  /**
   * One statement, bounded: the caller's signal answers the caller at once and ends the
   * statement on the server (giveUp). A statement the server ended at its bound backs off
   * reconnects, as a failed connect does.
   */
  async query<R extends pg.QueryResultRow>(op: string, sql: string, params: unknown[], opts: CallOptions | undefined): Promise<pg.QueryResult<R>> {
    throwIfAborted(opts);
    const client = await this.connect();
    throwIfAborted(opts);
    const signal = opts?.signal;
    let sent = false;
    const running = this.send<R>(client, sql, params, signal, () => (sent = true));
    return new Promise<pg.QueryResult<R>>((resolve, reject) => {
      let done = false;
      // The caller gives up: answer it now, and end the statement on the server rather than
      // leave a backend queued for nobody (see giveUp). One still waiting its turn is never
      // sent, and a cancel then would end another caller's statement.
      const onAbort = () => {
        if (done) return;
        done = true;
        reject(abortReason(signal!));
        if (sent) this.giveUp(client, running);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      running.then(
        (r) => {
          signal?.removeEventListener('abort', onAbort);
          this.failures = 0;
          this.hooks.answered();
          if (done) return;
          done = true;
          resolve(r);
        },
        (err: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          const translated = this.hooks.translate(err, op);
          if (/^(57014|55P03)$/.test((err as { code?: string }).code ?? '')) this.backOff(0);
          if (done) return;
          done = true;
          reject(translated);
        },
      );
    });
  }

  /** Ends the connection (or the one being made); none is made after this. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const c = this.client ?? (await this.connecting?.catch(() => null)) ?? null;
    this.client = null;
    await c?.end().catch(() => {});
  }

  /** The connection broke: the store hears it, and a reconnect is scheduled with backoff. */
  private dropped(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.hooks.down();
    this.backOff(0);
    this.opts.log?.warn('postgres connection lost; reconnecting', { store: this.opts.location, inMs: Math.ceil(this.reconnectAt - performance.now()) });
  }

  /**
   * One more failure: no new connection for 100 ms doubling to 5 s, nor before `atLeastMs` (an
   * abandoned backend's end). While anyone watches, a timer reconnects, so their health comes
   * back on its own.
   */
  private backOff(atLeastMs: number): void {
    const delay = Math.max(atLeastMs, reconnectDelayMs(this.failures++));
    this.reconnectAt = Math.max(this.reconnectAt, performance.now() + delay);
    if (this.closed || !this.hooks.wanted() || this.reconnectTimer) return;
    const schedule = () => {
      this.reconnectTimer = setTimeout(
        () => {
          this.reconnectTimer = null;
          if (this.client || this.closed || !this.hooks.wanted()) return;
          void this.connect().catch(() => {
            if (!this.reconnectTimer) schedule();
          });
        },
        Math.max(0, this.reconnectAt - performance.now()),
      );
      this.reconnectTimer.unref();
    };
    schedule();
  }

  /**
   * Ends a statement nobody waits for: a CancelRequest to the server (on a connection of its
   * own, which takes no slot). If the statement is still running CANCEL_GRACE_MS later (the
   * server is unreachable), the connection is destroyed, and no new one is made until the
   * abandoned backend must have ended (its statement_timeout), so the backends stay bounded.
   */
  private giveUp(client: pg.Client, running: Promise<unknown>): void {
    let settled = false;
    const grace = setTimeout(() => {
      if (settled || this.client !== client) return;
      this.dropped(client);
      this.backOff(this.statementTimeoutMs + CANCEL_GRACE_MS);
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }, CANCEL_GRACE_MS);
    grace.unref();
    void running.then(
      () => ((settled = true), clearTimeout(grace)),
      () => ((settled = true), clearTimeout(grace)),
    );
    sendCancel(client, CANCEL_GRACE_MS);
  }
}

/**
 * One coded error per failure of the driver or the server, `what` naming the operation and the
 * store but never the password. The table's own errors (a dropped table) are the store's to read
 * first.
 */
export function codedError(err: unknown, what: string, statementTimeoutMs: number): LeaseholdError {
  if (err instanceof LeaseholdError) return err;
  const code = (err as { code?: string }).code ?? '';
  if (code === '28P01' || code === '28000') return new StoreOpenError(`${what}: authentication failed (${describeError(err)})`, { cause: err });
  if (code === '3D000') return new StoreOpenError(`${what}: ${describeError(err)}`, { cause: err });
  if (code === '42501') return new StoreOpenError(`${what}: no permission (${describeError(err)})`, { cause: err });
  if (code === '22003') return new InvalidRecordError(`${what}: ${describeError(err)}`, { cause: err });
  // An integrity constraint of the table (a CHECK, NOT NULL) refuses the record; the message names it.
  if (code === '23514' || code === '23502') return new InvalidRecordError(`${what}: the table refused the record: ${describeError(err)}`, { cause: err });
  // The server ended the statement at its bound: someone holds a lock on the table, or it is overloaded.
  if (code === '55P03' || code === '57014') {
    return new BackendUnavailableError(
      `${what}: no answer within ${statementTimeoutMs} ms (${describeError(err)}): is another session holding a lock on the table?`,
      {
        cause: err,
      },
    );
  }
  // A server certificate the client refuses is a misconfiguration (sslmode, sslrootcert), not an outage.
  if (isTlsRefused(code)) {
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

/**
 * A CancelRequest for the statement running on `client`'s backend, as libpq's PQcancel sends
 * it: 16 bytes on a new socket, which the server reads before allocating any backend.
 */
function sendCancel(client: pg.Client, timeoutMs: number): void {
  const c = client as unknown as { processID: number | null; secretKey: number | null; host: string; port: number };
  if (c.processID === null || c.secretKey === null) return;
  const packet = Buffer.alloc(16);
  packet.writeInt32BE(16, 0);
  packet.writeInt32BE(80877102, 4); // the cancel request code: 1234 << 16 | 5678
  packet.writeInt32BE(c.processID, 8);
  packet.writeInt32BE(c.secretKey, 12);
  const socket = c.host.startsWith('/') ? netConnect(`${c.host}/.s.PGSQL.${c.port}`) : netConnect(c.port, c.host);
  socket.setTimeout(timeoutMs, () => socket.destroy());
  socket.on('error', () => {}); // best effort: giveUp's grace timer covers a cancel that never arrives
  socket.on('connect', () => socket.end(packet));
}
