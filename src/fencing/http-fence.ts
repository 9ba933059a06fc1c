/**
 * A fenced HTTP endpoint of a service the user owns (docs/fencing.md, "Your own HTTP service"):
 * a Node `(req, res)` handler wrapper that reads the fencing headers (http-header.ts), checks
 * the claim against the highest token accepted for its key in the service's own database, and
 * answers before the request body is read:
 *   400 {error}                         a missing or malformed header (or a key the fence refuses)
 *   409 {error, code, key, token, highest}  a token below the highest accepted for the key
 * Otherwise it calls the handler with `ctx.write(work)`, which runs the handler's statements in
 * one transaction with the check again (withSqliteFence / withPostgresFence): a newer writer that
 * arrived while the handler read the body still wins, and the write is answered 409 then.
 *
 * The first check only reads: it compares the claim with the highest accepted and writes
 * nothing. The fence is raised only by `write`, with the handler's own statements: a request the
 * handler refuses (its own authentication, a bad body) never moves the fence, so a stranger who
 * can reach the port cannot lock the real writers out with a huge token. The read lets a stale
 * writer be refused without reading its body; `write` checks again, so it never lets one through.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidConfigError, StaleTokenError } from '../errors.js';
import type { FenceClaim } from './claim.js';
import { parseFenceHeaders } from './http-header.js';
import { checkSqliteFence, withSqliteFence, type SqliteDatabase, type SqliteFenceOptions } from './sqlite-fence.js';
import { checkPostgresFence, withPostgresFence, type PgClient, type PgClientBase, type PgPool, type PostgresFenceOptions } from './postgres-fence.js';

/** What the handler gets: the claim checked, and `write` to run its statements in the fenced transaction. */
export interface FencedRequest<W> {
  claim: FenceClaim;
  write: W;
}

/** better-sqlite3's transaction is synchronous: the work must be too (read the body before). */
export type SqliteFencedWrite = <T>(work: (db: SqliteDatabase) => T) => T;
export type PostgresFencedWrite = <T>(work: (tx: PgClientBase) => Promise<T>) => Promise<T>;

export type FencedHandler<W> = (req: IncomingMessage, res: ServerResponse, fenced: FencedRequest<W>) => unknown;

/** Express's `next`: given one, any error other than the fence's goes to it (its error handlers). */
export type NodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

export interface FencedHandlerOptions {
  /** Errors the handler throws other than a stale token, when there is no `next`: after the 500 is sent. */
  onError?: (err: unknown) => void;
}

/** The wrapper over the service's SQLite database (better-sqlite3), fence table from createSqliteFenceTable. */
export function sqliteFencedHandler(
  db: SqliteDatabase,
  handler: FencedHandler<SqliteFencedWrite>,
  options: FencedHandlerOptions & SqliteFenceOptions = {},
): NodeHandler {
  const fence = { table: options.table };
  return fencedHandler(
    (claim) => checkSqliteFence(db, claim, fence),
    (claim) => (work) => withSqliteFence(db, claim, work, fence),
    handler,
    options,
  );
}

/** The wrapper over the service's PostgreSQL (node-postgres Pool or client), fence table from createPostgresFenceTable. */
export function postgresFencedHandler(
  db: PgPool | PgClient,
  handler: FencedHandler<PostgresFencedWrite>,
  options: FencedHandlerOptions & PostgresFenceOptions = {},
): NodeHandler {
  const fence = { table: options.table, isolationLevel: options.isolationLevel };
  return fencedHandler(
    (claim) => checkPostgresFence(db, claim, fence),
    (claim) => (work) => withPostgresFence(db, claim, work, fence),
    handler,
    options,
  );
}

function fencedHandler<W>(
  check: (claim: FenceClaim) => unknown,
  writeFor: (claim: FenceClaim) => W,
  handler: FencedHandler<W>,
  options: FencedHandlerOptions,
): NodeHandler {
  return (req, res, next) => {
    void (async () => {
      const parsed = parseFenceHeaders(req.headers);
      if (!parsed.ok) return refuse(res, 400, { error: parsed.reason });
      const claim = parsed.claim;
      try {
        await check(claim);
      } catch (err) {
        if (answeredFenceError(res, err)) return;
        throw err;
      }
      sendContinue(req, res);
      try {
        await handler(req, res, { claim, write: writeFor(claim) });
      } catch (err) {
        if (!res.headersSent && answeredFenceError(res, err)) return;
        throw err;
      }
    })().catch((err: unknown) => {
      if (typeof next === 'function') return next(err);
      if (!res.headersSent) refuse(res, 500, { error: 'internal error' });
      else res.destroy();
      options.onError?.(err);
    });
  };
}

/**
 * A client that sent `Expect: 100-continue` waits for `100 Continue` before its body. Node sends
 * it before the handler runs unless the server listens for 'checkContinue'; given this wrapper
 * there too, the client hears 100 only once its claim passed, so a refused one never sends its
 * body at all. That listener takes the automatic 100 from every other route of the server: it
 * must send it itself for them (docs/fencing.md, "Expect: 100-continue").
 */
function sendContinue(req: IncomingMessage, res: ServerResponse): void {
  const expect = req.headers.expect;
  // `_sent100`: set by Node's writeContinue (and by its automatic one); a second 100 is allowed, but useless.
  if (req.httpVersion === '1.1' && typeof expect === 'string' && /^100-continue$/i.test(expect.trim()) && (res as { _sent100?: boolean })._sent100 !== true)
    res.writeContinue();
}

/** A stale token is 409, a claim the fence refuses (its key's length or characters) 400; true if answered. */
function answeredFenceError(res: ServerResponse, err: unknown): boolean {
  if (err instanceof StaleTokenError) {
    refuse(res, 409, { error: err.message, code: err.code, key: err.key, token: err.presented, highest: err.highest });
    return true;
  }
  // Only the claim's own fields: a bad table name is the service's mistake, not the client's (500).
  if (err instanceof InvalidConfigError && (err.field === 'key' || err.field === 'token')) {
    refuse(res, 400, { error: err.message });
    return true;
  }
  return false;
}

/**
 * Answers and closes the connection: the body was not read, and a kept-alive connection would
 * have to read (and throw away) all of it before the next request.
 */
function refuse(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), connection: 'close' });
  res.end(text);
}
