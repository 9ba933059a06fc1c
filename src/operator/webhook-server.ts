import { createRequire } from 'node:module';
import type * as Https from 'node:https';
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureContext } from 'node:tls';
import { describeError, isLeaseholdError } from '../errors.js';
import type { Logger } from '../log.js';
import type { InjectorDefaults } from './injection-settings.js';
import { review } from './mutate.js';
import type { OperatorMetrics } from './operator-metrics.js';
import { ConnectionRoom } from './connection-room.js';

/** node:https by require, as src/util/node-http.ts loads node:http: an ESM import would load undici for nothing. */
const { createServer } = createRequire(import.meta.url)('node:https') as typeof Https;

/** The path the webhook configuration calls. */
export const MUTATE_PATH = '/mutate-pods';
/**
 * The largest AdmissionReview read. The API server refuses request bodies over 3 MiB, and a
 * review of a pod CREATE carries the pod once (oldObject is null) in a small envelope; a pod much
 * larger could not be stored either (etcd's default limit is 1.5 MiB a value). The margin covers
 * the fields defaulting adds and JSON written longer than the request that came in.
 */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/**
 * How many reviews are read and answered at once. Answering takes well under a millisecond, so
 * even hundreds of creations a second keep one or two in flight; the bound keeps what outsiders
 * can make it hold (bodies, their parsed copies) to a few times MAX_BODY_BYTES, within the
 * chart's memory limit. One more closes the oldest whose body is still arriving (408): the API
 * server sends a review at once, so that one is the slowest client's, and refusing the new one
 * instead let a client that can reach the port refuse every pod with 8 bodies that never end.
 * With none left arriving, the new one gets 429 at once.
 */
export const MAX_CONCURRENT_REVIEWS = 8;

/**
 * Connections open at once, TLS handshakes included. Each costs about 30 KiB however little its
 * client sends, so without a bound a few thousand from any client that can reach the port, renewed
 * at each timeout, take the operator past the chart's memory limit. The API servers keep a few
 * each. Past it, the oldest connection no review is being read or answered on is closed (an idle
 * kept-alive one, a handshake or headers not yet sent), so those cannot keep a review out.
 */
export const MAX_CONNECTIONS = 256;

export interface WebhookLimits {
  maxBodyBytes: number;
  maxConnections: number;
  maxConcurrentReviews: number;
  /** From the connection (or the end of the last request) to the request's headers; also the TLS handshake. */
  headersTimeoutMs: number;
  /** From the headers to the end of the body: the API server sends a review at once, so a slow one is not it. */
  bodyTimeoutMs: number;
}

/** The API server waits webhook.timeoutSeconds (chart default 5 s, at most 30 s) for the whole answer. */
export const DEFAULT_LIMITS: WebhookLimits = {
  maxBodyBytes: MAX_BODY_BYTES,
  maxConnections: MAX_CONNECTIONS,
  maxConcurrentReviews: MAX_CONCURRENT_REVIEWS,
  headersTimeoutMs: 5_000,
  bodyTimeoutMs: 5_000,
};

/** A request refused with its HTTP status. */
class RequestRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The HTTPS server every replica runs: POST /mutate-pods answers AdmissionReviews, GET /healthz
 * and /metrics. Its certificate is swapped in place (setSecureContext) when the Secret changes:
 * connections open keep the certificate they started with, new ones get the new one, and the
 * server never stops listening, so a rotation has no moment without a webhook.
 */
export class WebhookServer {
  private cert: { certPem: string; keyPem: string } | undefined;
  /** Reviews being read or answered now. */
  private inFlight = 0;
  /** Reviews whose bodies are still arriving, oldest first, each with what ends it. */
  private readonly arriving = new Set<(err: RequestRefused) => void>();
  private cutSlow = 0;
  private cutLoggedAt = -Infinity;
  private refusedBusy = 0;
  private busyLoggedAt = -Infinity;
  private readonly limits: WebhookLimits;
  /** Open connections, bounded: a review or another request being read or answered keeps its own. */
  private readonly room: ConnectionRoom<Server>;

  constructor(
    private readonly defaults: InjectorDefaults,
    private readonly log: Logger,
    private readonly metrics: OperatorMetrics,
    limits: Partial<WebhookLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.room = new ConnectionRoom(this.limits.maxConnections);
  }

  /**
   * The certificate it serves, PEM; replaced for every new TLS connection from now on. Throws,
   * keeping the one served so far, when the pair cannot be served (a key that does not match).
   */
  setCertificate(certPem: string, keyPem: string): void {
    if (this.cert?.certPem === certPem && this.cert.keyPem === keyPem) return;
    const options = { cert: certPem, key: keyPem };
    const server = this.room.server;
    if (server) server.setSecureContext(options);
    else createSecureContext(options);
    this.cert = { certPem, keyPem };
  }

  /** Reviews being read or answered now (for tests and the log). */
  get reviewsInFlight(): number {
    return this.inFlight;
  }

  get certificate(): string | undefined {
    return this.cert?.certPem;
  }

  /** Starts listening; needs a certificate first. Resolves with the bound port. */
  async listen(host: string, port: number): Promise<number> {
    if (!this.cert) throw new Error('the webhook server needs a certificate before it listens');
    const { headersTimeoutMs, bodyTimeoutMs } = this.limits;
    const server = createServer(
      {
        cert: this.cert.certPem,
        key: this.cert.keyPem,
        minVersion: 'TLSv1.2',
        handshakeTimeout: headersTimeoutMs,
        // Node checks headersTimeout and requestTimeout on this interval: a second past them at most.
        connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs),
      },
      (req, res) => {
        this.room.answer(req, res);
        void this.handle(req, res);
      },
    );
    // A client that sends nothing, or sends slowly, is dropped long before the API server's own
    // timeout would; the body's own deadline is kept per request (readBody).
    server.headersTimeout = headersTimeoutMs;
    server.requestTimeout = headersTimeoutMs + bodyTimeoutMs;
    server.keepAliveTimeout = 60_000;
    return this.room.listen(server, host, port);
  }

  close(): Promise<void> {
    return this.room.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') return send(res, 200, 'text/plain', 'ok\n');
    if (req.method === 'GET' && path === '/metrics') return send(res, 200, this.metrics.registry.contentType, await this.metrics.registry.metrics());
    if (path !== MUTATE_PATH) return send(res, 404, 'text/plain', 'not found\n');
    if (req.method !== 'POST') return send(res, 405, 'text/plain', 'POST only\n');
    const { maxBodyBytes, maxConcurrentReviews, bodyTimeoutMs } = this.limits;
    // Refused before a byte of the body is read, and the connection closed rather than drained.
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > maxBodyBytes)
      return refuse(res, 413, `the request body (${length} bytes) exceeds ${maxBodyBytes} bytes: larger than any pod the API server sends`);
    if (this.inFlight >= maxConcurrentReviews && !this.cutOldestArriving()) {
      this.refusedBusy++;
      // One line per ten seconds at most, with the count: a flood must not flood the log too.
      const now = Date.now();
      if (now - this.busyLoggedAt >= 10_000) {
        this.log.warn('admission refused: too many reviews at once', { limit: maxConcurrentReviews, refused: this.refusedBusy });
        this.busyLoggedAt = now;
        this.refusedBusy = 0;
      }
      return refuse(res, 429, `more than ${maxConcurrentReviews} reviews at once: retry`, { 'Retry-After': '1' });
    }
    this.inFlight++;
    try {
      await this.answer(req, res, maxBodyBytes, bodyTimeoutMs);
    } finally {
      this.inFlight--;
    }
  }

  /** Keeps the connections within maxConnections: past it, the oldest nothing is being answered on is closed, else the new one. */
  /** Connections open now (for tests). */
  get openConnections(): number {
    return this.room.size;
  }

  /** Ends the oldest review whose body is still arriving (its slot is given back as it ends); false when there is none. */
  private cutOldestArriving(): boolean {
    const [oldest] = this.arriving;
    if (!oldest) return false;
    this.arriving.delete(oldest);
    oldest(new RequestRefused(408, `the request body was still arriving when ${this.limits.maxConcurrentReviews} reviews were in flight and another came`));
    this.cutSlow++;
    const now = Date.now();
    if (now - this.cutLoggedAt >= 10_000) {
      this.log.warn('admission: the slowest review closed to make room', { limit: this.limits.maxConcurrentReviews, closed: this.cutSlow });
      this.cutLoggedAt = now;
      this.cutSlow = 0;
    }
    return true;
  }

  private async answer(req: IncomingMessage, res: ServerResponse, maxBodyBytes: number, bodyTimeoutMs: number): Promise<void> {
    const started = process.hrtime.bigint();
    const observe = (result: string) => this.metrics.admission.observe({ result }, Number(process.hrtime.bigint() - started) / 1e9);
    let body: unknown;
    let cut: ((err: RequestRefused) => void) | undefined;
    try {
      body = JSON.parse(
        await readBody(req, maxBodyBytes, bodyTimeoutMs, (end) => {
          cut = end;
          this.arriving.add(end);
        }).finally(() => this.arriving.delete(cut!)),
      );
    } catch (err) {
      observe('error');
      if (err instanceof RequestRefused) return refuse(res, err.status, err.message);
      return send(res, 400, 'text/plain', `${describeError(err)}\n`);
    }
    try {
      const answer = review(body, this.defaults);
      const r = answer.response;
      const result = !r.allowed ? 'refused' : r.patch ? 'injected' : 'unchanged';
      observe(result);
      const object = (body as { request?: { namespace?: string; object?: { metadata?: { generateName?: string; name?: string } } } }).request;
      const pod = `${object?.namespace ?? ''}/${object?.object?.metadata?.name || object?.object?.metadata?.generateName || ''}`;
      if (result === 'refused') this.log.warn('pod refused', { pod, reason: r.status?.message });
      else this.log.debug('admission', { pod, result });
      // A probe the injector could not use as the app's health: the pod runs without it, and whoever reads the log learns why.
      for (const warning of r.warnings ?? []) this.log.info('pod injected without app health', { pod, reason: warning });
      return send(res, 200, 'application/json', JSON.stringify(answer));
    } catch (err) {
      observe('error');
      const code = isLeaseholdError(err, 'LEASEHOLD_ERR_INVALID_CONFIG') ? 400 : 500;
      return send(res, code, 'text/plain', `${describeError(err)}\n`);
    }
  }
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** An answer after which the connection is closed: what is left of the body is never read. */
function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const body = `${message}\n`;
  res.writeHead(status, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body), Connection: 'close', ...headers });
  res.end(body);
}

/**
 * The body, up to `max` bytes, received within `timeoutMs`: a larger one is refused (413) as soon
 * as it passes the bound, a slower one (408) when the time is up, and a request that ends early
 * rejects, so its slot is given back in every case. `started` is handed what ends it early.
 */
function readBody(req: IncomingMessage, max: number, timeoutMs: number, started: (end: (err: RequestRefused) => void) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        req.pause();
        reject(err);
      } else resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const timer = setTimeout(() => finish(new RequestRefused(408, `the request body did not arrive within ${timeoutMs} ms`)), timeoutMs);
    started(finish);
    req.on('data', (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > max) return finish(new RequestRefused(413, `the request body exceeds ${max} bytes: larger than any pod the API server sends`));
      chunks.push(c);
    });
    req.on('end', () => finish(null));
    req.on('error', (err) => finish(err));
    req.on('close', () => finish(new Error('the request ended before its body did')));
  });
}
