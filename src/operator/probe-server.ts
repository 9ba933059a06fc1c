import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../util/node-http.js';
import { ConnectionRoom } from './connection-room.js';
import type { OperatorMetrics } from './operator-metrics.js';

/**
 * Connections open at once (ConnectionRoom: one more closes the oldest idle one). Only the
 * kubelet's probes and a metrics scraper call this port; clients that connect and wait must not
 * keep the kubelet's probe out and have the replica restarted.
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
  private readonly room = new ConnectionRoom<Server>(PROBE_MAX_CONNECTIONS);

  constructor(private readonly metrics: OperatorMetrics) {}

  /** Starts listening; resolves with the bound port. */
  async listen(host: string, port: number): Promise<number> {
    const server = http.createServer({ headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS }, (req, res) => {
      this.room.answer(req, res);
      void this.handle(req, res);
    });
    return this.room.listen(server, host, port);
  }

  close(): Promise<void> {
    return this.room.close();
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
