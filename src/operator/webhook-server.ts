import { createRequire } from 'node:module';
import type * as Https from 'node:https';
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import { describeError, isLeaseholdError } from '../errors.js';
import type { Logger } from '../log.js';
import type { InjectorDefaults } from './injection-settings.js';
import { review } from './mutate.js';
import type { OperatorMetrics } from './operator-metrics.js';

/** node:https by require, as src/util/node-http.ts loads node:http: an ESM import would load undici for nothing. */
const { createServer } = createRequire(import.meta.url)('node:https') as typeof Https;

/** The path the webhook configuration calls. */
export const MUTATE_PATH = '/mutate-pods';
/** The API server sends at most 3 MiB in one request; an AdmissionReview holds the pod twice at most. */
const MAX_BODY = 7 * 1024 * 1024;

/**
 * The HTTPS server every replica runs: POST /mutate-pods answers AdmissionReviews, GET /healthz
 * and /metrics. Its certificate is swapped in place (setSecureContext) when the Secret changes:
 * connections open keep the certificate they started with, new ones get the new one, and the
 * server never stops listening, so a rotation has no moment without a webhook.
 */
export class WebhookServer {
  private server: Server | undefined;
  private cert: { certPem: string; keyPem: string } | undefined;

  constructor(
    private readonly defaults: InjectorDefaults,
    private readonly log: Logger,
    private readonly metrics: OperatorMetrics,
  ) {}

  /**
   * The certificate it serves, PEM; replaced for every new TLS connection from now on. Throws,
   * keeping the one served so far, when the pair cannot be served (a key that does not match).
   */
  setCertificate(certPem: string, keyPem: string): void {
    if (this.cert?.certPem === certPem && this.cert.keyPem === keyPem) return;
    const options = { cert: certPem, key: keyPem };
    if (this.server) this.server.setSecureContext(options);
    else createSecureContext(options);
    this.cert = { certPem, keyPem };
  }

  get certificate(): string | undefined {
    return this.cert?.certPem;
  }

  /** Starts listening; needs a certificate first. Resolves with the bound port. */
  async listen(host: string, port: number): Promise<number> {
    if (!this.cert) throw new Error('the webhook server needs a certificate before it listens');
    const server = createServer({ cert: this.cert.certPem, key: this.cert.keyPem, minVersion: 'TLSv1.2' }, (req, res) => void this.handle(req, res));
    // The API server's default webhook timeout is 10 s; a client that sends nothing is dropped sooner.
    server.headersTimeout = 10_000;
    server.requestTimeout = 10_000;
    server.keepAliveTimeout = 60_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') return send(res, 200, 'text/plain', 'ok\n');
    if (req.method === 'GET' && path === '/metrics') return send(res, 200, this.metrics.registry.contentType, await this.metrics.registry.metrics());
    if (path !== MUTATE_PATH) return send(res, 404, 'text/plain', 'not found\n');
    if (req.method !== 'POST') return send(res, 405, 'text/plain', 'POST only\n');
    const started = process.hrtime.bigint();
    const observe = (result: string) => this.metrics.admission.observe({ result }, Number(process.hrtime.bigint() - started) / 1e9);
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      observe('error');
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

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error(`the request body exceeds ${MAX_BODY} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
