/**
 * The fenced transaction for PostgreSQL (node-postgres): the check of the writer's token and
 * the writer's own statements in one transaction. The key's fence row is locked by the check
 * until the commit: share-locked by the writers of the current term, which then run side by
 * side; a newer writer's raise waits for them all, and an older one is then refused.
 *
 * The pool or client is the caller's: nothing here loads the driver.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type pg from 'pg';
import { ConflictError, InvalidConfigError, StaleTokenError } from '../errors.js';
import { checkClaim, MAX_FENCE_KEY_BYTES, type FenceClaim } from './claim.js';
import { DEFAULT_FENCE_TABLE, postgresName } from './fence-table.js';

export type PgPool = pg.Pool;
export type PgClient = pg.Client | pg.PoolClient;
/** What the work gets: the one connection the transaction runs on. */
export type PgClientBase = pg.ClientBase;

export type PostgresIsolationLevel = 'read committed' | 'repeatable read' | 'serializable';

export interface PostgresFenceOptions {
  /** The fence table (default `leasehold_fences`): `name` (in schema public, whatever the search_path) or `schema.name`, lowercase SQL identifiers. */
  table?: string;
  /** The transaction's isolation level; without it, the session's default (PostgreSQL's: read committed). */
  isolationLevel?: PostgresIsolationLevel;
}

export interface PostgresFenceTableOptions {
  table?: string;
  /** Also create the SQL form, the function callers put in their own transactions. */
  withFunction?: boolean;
  /** Its name (default `leasehold_fence`): `name` (in schema public) or `schema.name`. */
  functionName?: string;
}

/** The SQLSTATE the SQL function raises on a stale token (the HTTP status a refused write would have). */
export const STALE_TOKEN_SQLSTATE = 'LH409';
export const DEFAULT_FENCE_FUNCTION = 'leasehold_fence';

const LEVELS: readonly PostgresIsolationLevel[] = ['read committed', 'repeatable read', 'serializable'];
const LEVEL_RULE = `must be one of ${LEVELS.map((l) => `'${l}'`).join(', ')}`;

/** The fence table's DDL: one row per key, the highest token accepted for it. */
export function postgresFenceDdl(options?: PostgresFenceTableOptions): string {
  const table = postgresName('table', options?.table ?? DEFAULT_FENCE_TABLE);
  const ddl = `CREATE TABLE IF NOT EXISTS ${table} (
  key text PRIMARY KEY CHECK (octet_length(key) BETWEEN 1 AND ${MAX_FENCE_KEY_BYTES}),
  token bigint NOT NULL CHECK (token >= 1),
  updated_at timestamptz NOT NULL DEFAULT now()
);`;
  return options?.withFunction ? `${ddl}\n${postgresFenceFunctionDdl(options)}` : ddl;
}

/**
 * The SQL form: `SELECT leasehold_fence($1, $2)` inside the caller's own BEGIN ... COMMIT locks
 * the key's row, raises it to the token, and raises SQLSTATE LH409 on a stale token, which
 * aborts the caller's transaction. It returns the token it accepted.
 */
export function postgresFenceFunctionDdl(options?: PostgresFenceTableOptions): string {
  const table = postgresName('table', options?.table ?? DEFAULT_FENCE_TABLE);
  const fn = postgresName('function', options?.functionName ?? DEFAULT_FENCE_FUNCTION);
  // Its own search_path, so nothing on the caller's (a look-alike of a function it calls) is
  // used; every name in the body is qualified, pg_temp is last so temporary objects never are.
  return `CREATE OR REPLACE FUNCTION ${fn}(p_key text, p_token bigint) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $leasehold$
DECLARE
  v_highest bigint;
BEGIN
  IF p_key IS NULL OR octet_length(p_key) NOT BETWEEN 1 AND ${MAX_FENCE_KEY_BYTES} OR p_token IS NULL OR p_token < 1 THEN
    RAISE EXCEPTION 'invalid fence claim (key %, token %): the key must be 1 to ${MAX_FENCE_KEY_BYTES} bytes, the token at least 1', quote_nullable(p_key), p_token
      USING ERRCODE = '22023';
  END IF;
  -- withPostgresFence's check: a raise locks the row exclusively, the term's writers share it.
  UPDATE ${table} AS f SET token = p_token, updated_at = now() WHERE f.key = p_key AND f.token < p_token;
  INSERT INTO ${table} AS f (key, token) VALUES (p_key, p_token) ON CONFLICT (key) DO NOTHING;
  SELECT f.token INTO v_highest FROM ${table} AS f WHERE f.key = p_key FOR SHARE;
  IF v_highest < p_token THEN
    -- A first writer inserted the key between the raise and the insert: raise it now. This
    -- upgrades the share lock, so two writers here at once can deadlock (40P01: retry).
    UPDATE ${table} AS f SET token = p_token, updated_at = now() WHERE f.key = p_key AND f.token < p_token;
    SELECT f.token INTO v_highest FROM ${table} AS f WHERE f.key = p_key FOR SHARE;
  END IF;
  IF v_highest IS DISTINCT FROM p_token THEN
    RAISE EXCEPTION 'fencing token % for key % is behind the highest token accepted for it (%)', p_token, quote_literal(p_key), v_highest
      USING ERRCODE = '${STALE_TOKEN_SQLSTATE}', DETAIL = format('key=%s presented=%s highest=%s', p_key, p_token, v_highest);
  END IF;
  RETURN p_token;
END
$leasehold$;`;
}

/** Creates the fence table (and, asked, the function) if absent: on request only, never by withPostgresFence. */
export async function createPostgresFenceTable(db: PgPool | PgClient, options?: PostgresFenceTableOptions): Promise<void> {
  await db.query(postgresFenceDdl(options));
}

/**
 * Runs `work(tx)` in one transaction with the fence check, on one connection (a client checked
 * out of a pool and released, or the caller's client): BEGIN with the key's row raised, inserted or read, and locked
 * (a token below the highest accepted is refused with StaleTokenError before the work runs, an
 * equal one accepted, a higher one raises the fence); the work; COMMIT. If anything throws
 * (the work, the COMMIT, a serialization failure), the transaction is rolled back, the fence
 * included, and the error rethrown: nothing is retried here, since only the caller knows
 * whether its work may run twice.
 *
 * A client given must not be inside a transaction already: use the SQL function there.
 */
export async function withPostgresFence<T>(
  db: PgPool | PgClient,
  claim: FenceClaim,
  work: (tx: PgClientBase) => Promise<T>,
  options?: PostgresFenceOptions,
): Promise<T> {
  const { key, token } = checkClaim(claim);
  const table = postgresName('table', options?.table ?? DEFAULT_FENCE_TABLE);
  const begin = beginStatement(options?.isolationLevel);
  if (typeof work !== 'function')
    throw new InvalidConfigError(`invalid fenced work: ${typeof work}, not a function`, { field: 'work', rule: 'must be a function' });
  const fenced = { key, token, table, begin };
  if (isPool(db)) return onPoolClient(db, fenced, work);
  // Called again from inside its own work on the same client, waiting its turn would wait forever.
  if (clientsInWork.getStore()?.has(db)) throw alreadyInTransaction();
  const inWork = new Set(clientsInWork.getStore()).add(db);
  return onClientTurn(db, () => clientsInWork.run(inWork, () => fencedTransaction(db, fenced, work)));
}

/**
 * The fence's read-only check: a token below the highest accepted for the key is refused with
 * StaleTokenError, anything else passes; nothing is written and no lock is held after it. An
 * early answer only (the HTTP wrapper's, before it reads a body): the write itself must still
 * go through withPostgresFence, which checks again and is the one that raises the fence.
 */
export async function checkPostgresFence(db: PgPool | PgClient, claim: FenceClaim, options?: PostgresFenceOptions): Promise<void> {
  const { key, token } = checkClaim(claim);
  const table = postgresName('table', options?.table ?? DEFAULT_FENCE_TABLE);
  const read = (): Promise<pg.QueryResult<{ token: string }>> =>
    db.query<{ token: string }>(`SELECT token FROM ${table} WHERE key ${EQ} $1`, [key]).catch((err: unknown) => {
      throw missingTable(err, table);
    });
  // On the caller's client, sent between the statements of a fenced transaction it would read
  // that transaction's raise before it commits (or rolls back): it waits its turn too.
  const result = isPool(db) || clientsInWork.getStore()?.has(db) ? await read() : await onClientTurn(db, read);
  const highest = result.rows[0] === undefined ? undefined : Number(result.rows[0].token);
  if (highest !== undefined && token < highest) throw new StaleTokenError(token, highest, key);
}

/**
 * On one connection a second BEGIN opens nothing and the first COMMIT ends both: the caller's
 * client runs its fenced transactions (and fence reads) one after another, never interleaved.
 */
async function onClientTurn<T>(db: PgClient, use: () => Promise<T>): Promise<T> {
  const before = clientTurns.get(db) ?? Promise.resolve();
  const run = before.then(use);
  const turn = run.then(
    () => undefined,
    () => undefined,
  );
  clientTurns.set(db, turn);
  try {
    return await run;
  } finally {
    if (clientTurns.get(db) === turn) clientTurns.delete(db);
  }
}

/** The caller's clients whose fenced work is running in this async context. */
const clientsInWork = new AsyncLocalStorage<Set<object>>();

/** The fenced transactions still to finish on each caller's client, chained. */
const clientTurns = new WeakMap<object, Promise<void>>();

interface Fenced {
  key: string;
  token: number;
  table: string;
  begin: string;
}

async function onPoolClient<T>(pool: PgPool, fenced: Fenced, work: (tx: PgClientBase) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // Checked out, the client's connection errors (a killed backend, idle_in_transaction_session_timeout)
  // are emitted on it, not on the pool: unheard, they would crash the process.
  let lost: Error | undefined;
  const onError = (err: Error): void => {
    lost = err;
  };
  client.on('error', onError);
  try {
    return await fencedTransaction(client, fenced, work);
  } finally {
    client.off('error', onError);
    client.release(lost ?? brokenClients.get(client));
    brokenClients.delete(client);
  }
}

/** Clients whose ROLLBACK failed: in an unknown state, the pool must not hand them out again. */
const brokenClients = new WeakMap<object, Error>();

async function fencedTransaction<T>(client: PgClientBase, fenced: Fenced, work: (tx: PgClientBase) => Promise<T>): Promise<T> {
  const { key, token, table, begin } = fenced;
  // Inside the caller's transaction, BEGIN is only a warning and the COMMIT below would end theirs.
  if (transactionStatus(client) === 'T' || transactionStatus(client) === 'E') throw alreadyInTransaction();
  try {
    // BEGIN and the check go as one simple-protocol query, one round trip: a fenced write then
    // costs what the same write in a transaction of its own costs (BEGIN, work, COMMIT). The
    // key is a literal escaped by the driver, the token a checked safe integer. The check is
    // first the token read under the share lock alone, all that a writer of the fence's term
    // needs (every write of a term but its first): one statement to parse and plan, not three.
    const keyLiteral = client.escapeLiteral(key);
    const read = await client.query(`${begin}; ${shareRead(table, keyLiteral)}`).catch((err: unknown) => {
      throw missingTable(err, table);
    });
    let highest = tokenOf(read, 1);
    if (highest > token) throw new StaleTokenError(token, highest, key);
    // Below the token or no row: a new term's first write or the key's. Raising the row now
    // would upgrade the share lock, a deadlock with any other writer doing the same: the
    // transaction is rolled back and the full check sent with the ROLLBACK (one more round
    // trip), which raises the row before it locks it shared.
    for (let attempt = 1; highest !== token; attempt++) {
      if (attempt > 3)
        throw new ConflictError(
          `the fence row of key ${JSON.stringify(key)} was inserted or deleted under the check 3 times running; nothing was written, try again`,
        );
      highest = tokenOf(await client.query(`ROLLBACK; ${begin}; ${checkStatements(table, keyLiteral, token)}`), 4);
      if (highest > token) throw new StaleTokenError(token, highest, key);
      // Still below (or gone): a first writer of the key inserted it after this transaction's
      // raise looked and before its insert did: the check again, which then sees the row.
    }
    const result = await work(client);
    // The work ended the transaction itself (COMMIT, ROLLBACK): what it ran after that ran
    // without the fence's lock, so success cannot be reported.
    if (transactionStatus(client) === 'I') {
      const rule = 'must not end the transaction itself (COMMIT, ROLLBACK): statements after that run outside the fence';
      throw new InvalidConfigError(`the fenced work ended its transaction, and what it ran after that may have committed unfenced: it ${rule}`, {
        field: 'work',
        rule,
      });
    }
    const committed = await client.query('COMMIT');
    // COMMIT of a transaction a failed statement aborted (the work caught the error) is a ROLLBACK.
    if (committed.command === 'ROLLBACK') {
      const rule = 'must not go on after a failed statement: PostgreSQL then rolls the whole transaction back';
      throw new InvalidConfigError(`the fenced work went on after a failed statement, so nothing was committed: it ${rule}`, { field: 'work', rule });
    }
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: unknown) => {
      brokenClients.set(client, rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr)));
    });
    throw err;
  }
}

/**
 * The full check (a term's first write, a key's), three statements: a raise (it locks the row
 * exclusively only when the token is above the fence, waiting for every writer of the term
 * before); the row inserted if the key is new; then its latest token read under a share lock, held to the commit. Writers of the
 * same term share the lock, so they do not queue behind each other for the whole of their
 * transactions, and a raise (or a writer behind one) waits until they have committed: the
 * Temporal pattern, FOR SHARE on each write and an exclusive lock for a new owner.
 */
function checkStatements(table: string, keyLiteral: string, token: number): string {
  return [
    `UPDATE ${table} SET token = ${token}, updated_at = ${NOW} WHERE key ${EQ} ${keyLiteral} AND token ${LT} ${token}`,
    `INSERT INTO ${table} (key, token) VALUES (${keyLiteral}, ${token}) ON CONFLICT (key) DO NOTHING`,
    shareRead(table, keyLiteral),
  ].join('; ');
}

/**
 * The key's latest token, share-locked until the commit: under read committed it waits for a
 * raise in progress and then reads the raised token; a raise that comes after waits for it.
 */
function shareRead(table: string, keyLiteral: string): string {
  return `SELECT token FROM ${table} WHERE key ${EQ} ${keyLiteral} FOR SHARE`;
}

/** The token read by the statement at `index` of a multi-statement query (NaN for no row). */
function tokenOf(results: unknown, index: number): number {
  return Number((results as pg.QueryResult<{ token: string }>[])[index]?.rows[0]?.token);
}

/**
 * Operators and functions named in pg_catalog: unqualified, they are looked up on the caller's
 * search_path, where a schema listed before pg_catalog with a look-alike `=` would answer the
 * check (a stale token's work would commit). The SQL function pins its own search_path instead.
 */
const EQ = 'OPERATOR(pg_catalog.=)';
const LT = 'OPERATOR(pg_catalog.<)';
const NOW = 'pg_catalog.now()';

function alreadyInTransaction(): InvalidConfigError {
  const rule = 'must not be inside a transaction: withPostgresFence opens its own; inside yours, call the SQL function leasehold_fence';
  return new InvalidConfigError(`the client given to withPostgresFence is already inside a transaction: it ${rule}`, { field: 'db', rule });
}

/** 'I' idle, 'T' in a transaction, 'E' in a failed one; undefined where node-postgres does not say (older versions). */
function transactionStatus(client: PgClientBase): string | null | undefined {
  const status = (client as { getTransactionStatus?: () => string | null }).getTransactionStatus;
  return typeof status === 'function' ? status.call(client) : undefined;
}

/** Never created silently: where the fence lives is the caller's schema (42P01: undefined_table). */
function missingTable(err: unknown, table: string): unknown {
  if ((err as { code?: unknown }).code !== '42P01') return err;
  const rule = 'must exist: create it with createPostgresFenceTable(db) or its DDL (docs/fencing.md)';
  return new InvalidConfigError(`the fence table ${table} ${rule}`, { field: 'table', rule, cause: err });
}

function beginStatement(level: unknown): string {
  if (level === undefined) return 'BEGIN';
  if (!LEVELS.includes(level as PostgresIsolationLevel)) {
    throw new InvalidConfigError(`invalid isolation level ${typeof level === 'string' ? JSON.stringify(level) : typeof level}: ${LEVEL_RULE}`, {
      field: 'isolationLevel',
      rule: LEVEL_RULE,
    });
  }
  return `BEGIN ISOLATION LEVEL ${(level as string).toUpperCase()}`;
}

/** A Pool counts its clients; a Client or PoolClient does not. */
function isPool(db: PgPool | PgClient): db is PgPool {
  return typeof (db as { totalCount?: unknown }).totalCount === 'number';
}
