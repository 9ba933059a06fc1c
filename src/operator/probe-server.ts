import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { http } from '../util/node-http.js';
import type { OperatorMetrics } from './operator-metrics.js';

/**
 * Connections open at once. Only the kubelet's probes and a metrics scraper call this port. One
 * more closes the oldest connection no request is being answered on (a client that connected and
 * sent nothing yet, or an idle kept-alive one), so clients that connect and wait cannot keep the
 * kubelet's probe out (and have the replica restarted); with every one answering, the new one.
 */
export const PROBE_MAX_CONNECTIONS = 32;
/** A client that has not sent its headers by then is dropped; the whole request likewise. */
const HEADERS_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Policy mode's only port, plain HTTP: GET /healthz (the Deployment's probes) and GET /metrics.
 * With no webhook there is nothing to serve over TLS and no certificate to keep. No request body
 * is ever read: anything but those two GETs is answered at once and its connection closed.
 */
export class ProbeServer {
  private server: Server | undefined;
  /** Open connections, oldest first. */
  private readonly sockets = new Set<Socket>();
  /** Connections a request is being answered on: never closed to make room. */
  private readonly answering = new Set<Socket>();

  constructor(private readonly metrics: OperatorMetrics) {}

  /** Starts listening; resolves with the bound port. */
  async listen(host: string, port: number): Promise<number> {
    const server = http.createServer({ headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS }, (req, res) => {
      const socket = req.socket;
      this.answering.add(socket);
      res.once('close', () => this.answering.delete(socket));
      void this.handle(req, res);
    });
    server.on('connection', (socket: Socket) => this.admit(socket));
    this.server = server;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      if (this.server === server) this.server = undefined;
      throw err;
    }
    return (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private admit(socket: Socket): void {
    if (this.sockets.size >= PROBE_MAX_CONNECTIONS) {
      let oldest: Socket | undefined;
      for (const s of this.sockets)
        if (!this.answering.has(s)) {
          oldest = s;
          break;
        }
      if (!oldest) {
        socket.destroy();
        return;
      }
      oldest.destroy();
      this.sockets.delete(oldest);
    }
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') return reply(res, 200, 'text/plain', 'ok\n');
    if (req.method === 'GET' && path === '/metrics') return reply(res, 200, this.metrics.registry.contentType, await this.metrics.registry.metrics());
    // Whatever body follows is never read: the connection goes with the answer.
    res.setHeader('connection', 'close');
    if (path === '/healthz' || path === '/metrics') return reply(res, 405, 'text/plain', 'GET only\n');
    reply(res, 404, 'text/plain', 'not found\n');
  }
}

function reply(res: ServerResponse, code: number, type: string, body: string): void {
  res.writeHead(code, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
