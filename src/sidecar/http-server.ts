import { describeError } from '../errors.js';
import { escapeForTerminal } from '../util/escape-control.js';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../util/node-http.js';
import type { AddressInfo, Socket } from 'node:net';
import type { Registry } from 'prom-client';
import type { LeaderStatus } from '../status/leader-status.js';
import type { Verdict } from './kubelet-probes.js';
import { LeaderStreams, leaderBody, type StreamCounters, type StreamLimits } from './leader-stream.js';
import { httpBounds, openDescriptors, openFilesLimit, type HttpBounds } from './connection-budget.js';

/**
 * A request's headers must arrive within this (a probe's or a scrape's come at once): a
 * connection that sends nothing or half a request is closed then, instead of holding a
 * descriptor and its buffers.
 */
export const HEADERS_TIMEOUT_MS = 5_000;
/** The whole request (GET and HEAD, and a POST whose body is never read: no body to wait for). */
export const REQUEST_TIMEOUT_MS = 10_000;
/** An idle kept-alive connection between two requests. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** How often node:http looks for connections past those timeouts (its default is far less often than they are). */
const TIMEOUT_CHECK_MS = 1_000;

export interface HttpHandlers {
  /** `/leader`; none for a shard group's member, which has no leader (its routes are `routes`). */
  status?(): LeaderStatus;
  liveness(): Verdict;
  readiness(): Verdict;
  registry: Registry;
  /** Counts streams for the metrics; none by default. */
  streamCounters?: StreamCounters;
  streamLimits?: StreamLimits;
  /** Default: from the descriptors left to this process (connection-budget.ts), and streamLimits.maxStreams. */
  bounds?: HttpBounds;
  /** `POST /leader/stopped?token=N`, every `token` given and the Authorization header: the app's leader work of term N stopped (see AppDrain). */
  leaderStopped?: (tokens: readonly string[], authorization: string | undefined) => StoppedReply;
  /** Routes of another module (a shard group's, shard-endpoints.ts), tried before the built-in ones. */
  routes?: MoreRoutes;
  /**
   * This sidecar's own drain report and its key check: a report POSTed to the other mode's
   * endpoint (a lease's to a --shards sidecar, a shard's to a lease's) is answered 404 with the
   * endpoint to use, once the key passed (`refuse`: null), so a caller without it learns
   * nothing. Absent: such a POST is answered as any other path this server does not route.
   */
  drain?: { use: string; refuse(authorization: string | undefined): StoppedReply | null };
}

interface StoppedReply {
  code: number;
  body: string;
  /** A 401's WWW-Authenticate. */
  challenge?: string;
}

/** A module's own paths on this server: it answers a request of one of them and says so. */
export interface MoreRoutes {
  /** Its paths, for the 404's list. */
  readonly paths: readonly string[];
  /** Answers and returns true for a path of its own; false to leave the request to the server. */
  handle(req: IncomingMessage, res: ServerResponse, path: string, search: string): boolean | Promise<boolean>;
}

const NO_COUNTERS: StreamCounters = { opened() {}, closed() {}, refused() {}, dropped() {} };

/**
 * `/leader?watch=`: 1 or true streams, 0 or false (or none) answers once. Given more than once
 * it is refused, even with equal values: which one wins differs between proxies and clients.
 */
export function wantsStream(req: IncomingMessage, query: URLSearchParams): boolean {
  const given = query.getAll('watch');
  if (given.length > 1) throw new BadRequest(`watch is given ${given.length} times: give it once, watch=1 or true (a stream), watch=0 or false`);
  const watch = given[0] ?? null;
  if (watch === null || watch === '0' || watch === 'false') return watch === null && /\btext\/event-stream\b/.test(req.headers.accept ?? '');
  if (watch === '1' || watch === 'true') return true;
  // Echo a bounded, escaped prefix: the line is for a human, and the value is the caller's.
  const shown = escapeForTerminal(JSON.stringify(watch.length > 32 ? `${watch.slice(0, 32)}…` : watch).slice(1, -1));
  throw new BadRequest(`watch=${shown} is not allowed: use watch=1 or true (a stream), watch=0 or false`);
}

/** A request the server answers 400, with the message as its body. */
export class BadRequest extends Error {}

/** Splits "host:port" (IPv6 in brackets). Throws with the rule on bad input. */
export function parseListen(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`expected HOST:PORT with a port from 0 to 65535, such as 127.0.0.1:4040`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** /healthz, /readyz, /leader and /metrics, GET and HEAD; and POST /leader/stopped; and `routes`'s paths. */
export class StatusServer {
  private server: Server | null = null;
  /** Server-sent-events streams of /leader. */
  readonly streams: LeaderStreams;
  /** Connections and streams open at once; set up after the store is open, so its descriptors are counted. */
  readonly bounds: HttpBounds;
  /** Open connections, oldest first. */
  private readonly sockets = new Set<Socket>();
  /** Connections a request is being answered on, streams included: never closed to make room. */
  private readonly answering = new Set<Socket>();
  constructor(private readonly h: HttpHandlers) {
    this.bounds = h.bounds ?? httpBounds(openFilesLimit(), openDescriptors(), h.streamLimits?.maxStreams);
    this.streams = new LeaderStreams(h.streamCounters ?? NO_COUNTERS, { ...h.streamLimits, maxStreams: this.bounds.maxStreams });
  }

  /** Sends a status change to every open stream. */
  publish(status: LeaderStatus): void {
    this.streams.publish(status);
  }

  /** See LeaderStreams.drain. */
  drainStreams(timeoutMs: number): Promise<{ streams: number; closed: number }> {
    return this.streams.drain(timeoutMs);
  }

  async listen(host: string, port: number): Promise<AddressInfo> {
    const server = http.createServer(
      { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: TIMEOUT_CHECK_MS },
      (req, res) => {
        const socket = req.socket;
        this.answering.add(socket);
        res.once('close', () => this.answering.delete(socket));
        void this.route(req, res);
      },
    );
    server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    server.on('connection', (socket: Socket) => this.admit(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return server.address() as AddressInfo;
  }

  /** A drain report sent to the endpoint of the other mode: the key first, then the endpoint this sidecar takes. */
  private otherModeDrain(req: IncomingMessage, res: ServerResponse, path: string, drain: NonNullable<HttpHandlers['drain']>): void {
    const refused = drain.refuse(req.headers.authorization);
    if (refused) {
      if (refused.challenge !== undefined) res.setHeader('www-authenticate', refused.challenge);
      return send(res, refused.code, 'text/plain', refused.body);
    }
    send(res, 404, 'text/plain', `${path} is not this sidecar's drain report: ${drain.use}\n`);
  }

  private leaderStopped(req: IncomingMessage, res: ServerResponse, search: string): void {
    const a = stoppedRequest(req, search, this.h.leaderStopped!);
    if (a.code === 405) res.setHeader('allow', 'POST');
    if (a.challenge !== undefined) res.setHeader('www-authenticate', a.challenge);
    send(res, a.code, 'text/plain', a.body);
  }

  /**
   * Keeps the connections, streams included, within bounds.maxConnections. Past it, the oldest
   * connection that is neither a stream nor being answered (a half-sent request, an idle
   * kept-alive one) is closed to make room; the new one only when every place is a stream or an
   * answer. Closing the new one instead would let anyone who can reach the port keep kubelet's
   * probes out with a bound's worth of half-sent requests, renewed at each headers timeout, and
   * the failed liveness probes restart the leader; the oldest is the one furthest past sending a
   * request at once, as a probe does.
   */
  private admit(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    if (this.sockets.size <= this.bounds.maxConnections) return;
    let victim = socket;
    for (const s of this.sockets) {
      if (s !== socket && !this.answering.has(s)) {
        victim = s;
        break;
      }
    }
    this.sockets.delete(victim);
    victim.destroy();
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    this.streams.endAll();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The query is all after the first '?': a second '?' belongs to a value (watch=1?x is
    // refused as a value, not cut to watch=1).
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const search = q < 0 ? '' : url.slice(q + 1);
    try {
      if (this.h.routes && (await this.h.routes.handle(req, res, path, search))) return;
      if (path === STOPPED_PATH && this.h.leaderStopped) return this.leaderStopped(req, res, search);
      if (req.method === 'POST' && DRAIN_PATHS.includes(path) && this.h.drain) return this.otherModeDrain(req, res, path, this.h.drain);
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'method not allowed\n');
      switch (path) {
        case '/healthz':
        case '/livez':
          return verdict(res, this.h.liveness());
        case '/readyz':
          return verdict(res, this.h.readiness());
        case '/leader': {
          if (!this.h.status) break;
          const s = this.h.status();
          if (wantsStream(req, new URLSearchParams(search))) return this.streams.open(res, s);
          return send(res, 200, 'application/json', leaderBody(s) + '\n');
        }
        case '/metrics':
          return send(res, 200, this.h.registry.contentType, await this.h.registry.metrics());
      }
      const paths = ['/healthz', '/readyz', ...(this.h.status ? ['/leader'] : []), ...(this.h.routes?.paths ?? []), '/metrics'];
      return send(res, 404, 'text/plain', `not found: try ${paths.join(' ')}\n`);
    } catch (err) {
      if (err instanceof BadRequest) return send(res, 400, 'text/plain', `${err.message}\n`);
      return send(res, 500, 'text/plain', `internal error: ${escapeForTerminal(describeError(err))}\n`);
    }
  }
}

const STOPPED_PATH = '/leader/stopped';
/** A shard member's drain report (shard-endpoints.ts). */
export const SHARDS_STOPPED_PATH = '/shards/stopped';
/** Every mode's drain report, to answer one sent to the wrong mode with the right one. */
const DRAIN_PATHS: readonly string[] = [STOPPED_PATH, SHARDS_STOPPED_PATH];

/** The app's word that a term's leader work stopped. Its body, if any, is not read: the query says it all. */
function stoppedRequest(req: IncomingMessage, search: string, handle: NonNullable<HttpHandlers['leaderStopped']>): StoppedReply {
  if (req.method !== 'POST') return { code: 405, body: `use POST ${STOPPED_PATH}?token=N\n` };
  return handle(new URLSearchParams(search).getAll('token'), req.headers.authorization);
}

function verdict(res: ServerResponse, v: Verdict): void {
  send(res, v.ok ? 200 : 503, 'text/plain', `${v.ok ? 'ok' : 'unavailable'}: ${v.reason}\n`);
}

export function send(res: ServerResponse, code: number, type: string, body: string): void {
  res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
