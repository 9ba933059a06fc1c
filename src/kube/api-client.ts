import type { Agent as HttpAgent, ClientRequest, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { http } from '../util/node-http.js';
import { abortReason, throwIfAborted } from '../abort.js';
import { BackendError, BackendUnavailableError } from '../errors.js';
import { apiError, transportError } from './api-errors.js';
import type { ClusterConnection } from './kubeconfig.js';

export interface RequestOptions {
  body?: unknown;
  /** Defaults to application/json when there is a body. */
  contentType?: string;
  /** Bound on the whole request; the socket is destroyed when it passes. Unused with `signal`. */
  timeoutMs?: number;
  /**
   * Cancels the request: it is destroyed and rejects with the signal's reason. A caller that
   * passes a signal owns the deadline, so the client adds no timeout of its own.
   */
  signal?: AbortSignal | undefined;
}

/** One watch event as the API server streams it: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR. */
export interface RawWatchEvent {
  type: string;
  object: unknown;
}

export interface WatchHandle {
  abort(): void;
}

/**
 * A small JSON client for the few calls leasehold makes (read/create/replace one Lease, watch
 * it, patch its own pod). It exists instead of @kubernetes/client-node because that library's
 * generated API surface is loaded whole, and its memory dwarfs what a sidecar whose whole job is
 * a handful of requests a minute needs (docs/kubernetes.md, "Connections"). One keep-alive agent per client: renewals every
 * retryPeriod and a long-lived watch reuse their TCP + TLS connections.
 */
/**
 * The connections one client keeps to the API server at most; watches hold one each for as long
 * as they last. A group store's batch leaves some free (kubernetes/group-store.ts).
 */
export const MAX_SOCKETS = 8;

export class KubeClient {
  private readonly agent: HttpAgent | HttpsAgent;
  private readonly isHttps: boolean;

  constructor(
    readonly conn: ClusterConnection,
    private readonly defaultTimeoutMs = 30_000,
    /** Connections at most: MAX_SOCKETS but for the bench that measures what more in flight gives (bench/lib/kube-write-rate.ts). */
    maxSockets = MAX_SOCKETS,
  ) {
    this.isHttps = conn.server.startsWith('https:');
    const options = { keepAlive: true, maxSockets, maxFreeSockets: 2 };
    this.agent = this.isHttps
      ? new HttpsAgent({
          ...options,
          ca: conn.ca,
          cert: conn.cert,
          key: conn.key,
          rejectUnauthorized: !conn.insecureSkipTlsVerify,
          servername: conn.tlsServerName,
        })
      : new http.Agent(options);
  }

  /**
   * Sends one request and parses the JSON answer. Every failure is a coded error raised here
   * (src/kube/api-errors.ts): a non-2xx answer by its status, a refused certificate as a
   * misconfiguration, any other transport failure as the backend being unavailable.
   */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (payload) {
      headers['Content-Type'] = opts.contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    let res: IncomingMessage;
    let text: string;
    try {
      res = await this.send(method, path, headers, payload, opts.signal ? undefined : (opts.timeoutMs ?? this.defaultTimeoutMs), false, opts.signal);
      text = await readAll(res, opts.signal);
    } catch (err) {
      throw transportError(`${method} ${path}`, err);
    }
    if (res.statusCode! < 200 || res.statusCode! >= 300) throw this.apiError(res.statusCode!, text);
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new BackendError(`${method} ${path}: the API server answered ${res.statusCode} with a body that is not JSON`, { cause: err });
    }
  }

  /**
   * Opens a watch (`?watch=true` plus `query`) and resolves once the API server accepted it
   * (HTTP 200); rejects with the coded error of api-errors.ts otherwise. Events are parsed
   * line by line; `onEnd` is called once when the stream ends for any reason other than
   * abort() (server timeout, dropped connection, an ERROR event such as 410 Gone).
   */
  async watch(path: string, query: Record<string, string>, onEvent: (e: RawWatchEvent) => void, onEnd: (err?: Error) => void): Promise<WatchHandle> {
    const qs = new URLSearchParams({ ...query, watch: 'true' }).toString();
    let res: IncomingMessage;
    try {
      res = await this.send('GET', `${path}?${qs}`, { Accept: 'application/json' }, undefined, this.defaultTimeoutMs, true);
    } catch (err) {
      throw transportError(`watch ${path}`, err);
    }
    if (res.statusCode !== 200) throw this.apiError(res.statusCode!, await readAll(res).catch(() => ''));
    let aborted = false;
    let ended = false;
    const end = (err?: Error) => {
      if (ended || aborted) return;
      ended = true;
      res.destroy();
      onEnd(err);
    };
    let pending = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (!line) continue;
        let event: RawWatchEvent;
        try {
          event = JSON.parse(line) as RawWatchEvent;
        } catch {
          end(new BackendError(`watch ${path}: the stream carried a line that is not JSON`));
          return;
        }
        if (event.type === 'ERROR') {
          const status = event.object as { code?: number; message?: string; reason?: string };
          end(apiError(status?.code ?? 500, status?.message ?? 'watch error', status?.reason));
          return;
        }
        onEvent(event);
      }
    });
    res.on('end', () => end());
    res.on('close', () => end());
    res.on('error', (err) => end(transportError(`watch ${path}`, err)));
    return {
      abort() {
        aborted = true;
        res.destroy();
      },
    };
  }

  /** Frees the kept-alive sockets. */
  close(): void {
    this.agent.destroy();
  }

  private async send(
    method: string,
    path: string,
    headers: Record<string, string>,
    payload: Buffer | undefined,
    timeoutMs: number | undefined,
    streaming = false,
    signal?: AbortSignal,
  ): Promise<IncomingMessage> {
    throwIfAborted({ signal });
    const auth = await this.conn.credentials?.header();
    throwIfAborted({ signal });
    if (auth) headers.Authorization = auth;
    // Appended, not resolved: a server URL may carry a path prefix (a proxy such as Rancher's).
    const url = new URL(`${this.conn.server.replace(/\/+$/, '')}${path}`);
    return new Promise<IncomingMessage>((resolve, reject) => {
      const request = this.isHttps ? httpsRequest : http.request;
      const onAbort = () => req.destroy(abortReason(signal!));
      const done = () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const req: ClientRequest = request(url, { method, headers, agent: this.agent, servername: this.conn.tlsServerName }, (res) => {
        if (res.statusCode === 401) this.conn.credentials?.invalidate();
        // A watch may stay open for minutes; only its response headers are bounded.
        if (streaming) done();
        else res.on('close', done);
        resolve(res);
      });
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => req.destroy(Object.assign(new Error(`timed out after ${timeoutMs} ms`), { code: 'ETIMEDOUT' })), timeoutMs);
      timer?.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (err) => {
        done();
        reject(err);
      });
      req.end(payload);
    });
  }

  private apiError(status: number, body: string) {
    try {
      const parsed = JSON.parse(body) as { message?: string; reason?: string };
      if (parsed?.message) return apiError(status, parsed.message, parsed.reason);
    } catch {
      // not a Status object: use the text
    }
    return apiError(status, body.trim().slice(0, 300) || `HTTP ${status}`);
  }
}

function readAll(res: IncomingMessage, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    // A timeout or reset after the headers: without this the promise would never settle.
    res.on('close', () => {
      if (!res.complete) reject(signal?.aborted ? abortReason(signal) : new BackendUnavailableError('the connection closed before the response ended'));
    });
  });
}
