import { strict as assert } from 'node:assert';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { KubeClient, type RawWatchEvent } from './api-client.js';
import { httpReason, httpStatus } from './api-errors.js';
import type { CredentialSource } from './credentials.js';

// A real HTTP server on loopback standing in for the API server's wire behaviour; the real
// kube-apiserver tests (test/kubernetes/store.test.ts) cover the same client end to end.
type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
let handler: Handler = (_req, _body, res) => res.end('{}');
const seen: Array<{ method: string; url: string; auth?: string; contentType?: string; body: string; socket: string }> = [];
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    seen.push({
      method: req.method!,
      url: req.url!,
      auth: req.headers.authorization,
      contentType: req.headers['content-type'],
      body,
      socket: `${req.socket.remotePort}`,
    });
    handler(req, body, res);
  });
});
let base = '';
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

function counting(): CredentialSource & { invalidations: number } {
  let n = 0;
  const source = {
    invalidations: 0,
    header: async () => `Bearer token-${n}`,
    invalidate: () => {
      n++;
      source.invalidations++;
    },
  };
  return source;
}

describe('KubeClient', () => {
  test('sends JSON with credentials and parses the answer; connections are reused', async () => {
    handler = (_req, body, res) => res.end(JSON.stringify({ echoed: JSON.parse(body || 'null') as unknown }));
    seen.length = 0;
    const client = new KubeClient({ server: base, credentials: counting(), source: 'test' });
    const got = await client.request<{ echoed: unknown }>('PUT', '/apis/x/y', { body: { a: 1 } });
    await client.request('PATCH', '/api/v1/p', { body: { b: 2 }, contentType: 'application/merge-patch+json' });
    assert.deepEqual(got, { echoed: { a: 1 } });
    assert.equal(seen[0]!.auth, 'Bearer token-0');
    assert.equal(seen[0]!.contentType, 'application/json');
    assert.equal(seen[1]!.contentType, 'application/merge-patch+json');
    assert.equal(seen[0]!.socket, seen[1]!.socket, 'the second request reused the keep-alive connection');
    client.close();
  });

  test('a server URL with a path prefix keeps it', async () => {
    handler = (_req, _b, res) => res.end('{}');
    seen.length = 0;
    const client = new KubeClient({ server: `${base}/k8s/clusters/c-1`, source: 'test' });
    await client.request('GET', '/apis/coordination.k8s.io/v1/namespaces/a/leases/b');
    assert.equal(seen[0]!.url, '/k8s/clusters/c-1/apis/coordination.k8s.io/v1/namespaces/a/leases/b');
    client.close();
  });

  test('an HTTP error is raised as its coded class, with the status, the reason and the Status message', async () => {
    handler = (_req, _b, res) => {
      res.statusCode = 409;
      res.end(JSON.stringify({ kind: 'Status', message: 'the object has been modified', reason: 'Conflict', code: 409 }));
    };
    const client = new KubeClient({ server: base, source: 'test' });
    await assert.rejects(
      client.request('PUT', '/x', { body: {} }),
      (err: Error & { code: string }) =>
        err.code === 'LEASEHOLD_ERR_CONFLICT' && httpStatus(err) === 409 && err.message === 'the object has been modified' && httpReason(err) === 'Conflict',
    );
    handler = (_req, _b, res) => {
      res.statusCode = 502;
      res.end('bad gateway');
    };
    await assert.rejects(
      client.request('GET', '/x'),
      (err: Error & { code: string }) => err.code === 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE' && httpStatus(err) === 502 && err.message === 'bad gateway',
    );
    client.close();
  });

  test('a 401 invalidates the credentials so the next request fetches fresh ones', async () => {
    handler = (req, _b, res) => {
      res.statusCode = req.headers.authorization === 'Bearer token-0' ? 401 : 200;
      res.end('{}');
    };
    const creds = counting();
    const client = new KubeClient({ server: base, credentials: creds, source: 'test' });
    await assert.rejects(client.request('GET', '/x'), (err: Error & { code: string }) => err.code === 'LEASEHOLD_ERR_UNAUTHORIZED' && httpStatus(err) === 401);
    assert.equal(creds.invalidations, 1);
    assert.deepEqual(await client.request('GET', '/x'), {});
    client.close();
  });

  test('a request that gets no answer is destroyed after its timeout', async () => {
    handler = () => {}; // never answers
    const client = new KubeClient({ server: base, source: 'test' }, 150);
    await assert.rejects(
      client.request('GET', '/slow'),
      (err: Error & { code?: string; cause?: { code?: string } }) =>
        err.code === 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE' && err.cause?.code === 'ETIMEDOUT' && /^GET \/slow: timed out after 150 ms/.test(err.message),
    );
    client.close();
  });

  test('a watch delivers events line by line, even split across chunks, and reports an ERROR event (410 Gone) as its end', async () => {
    handler = (_req, _b, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const a = JSON.stringify({ type: 'ADDED', object: { metadata: { resourceVersion: '1' } } });
      const b = JSON.stringify({ type: 'MODIFIED', object: { metadata: { resourceVersion: '2' } } });
      res.write(`${a}\n${b.slice(0, 10)}`);
      setTimeout(() => {
        res.write(`${b.slice(10)}\n`);
        res.write(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`);
      }, 20);
    };
    seen.length = 0;
    const client = new KubeClient({ server: base, source: 'test' });
    const events: RawWatchEvent[] = [];
    const ended = new Promise<Error | undefined>(
      (resolve) => void client.watch('/apis/l', { fieldSelector: 'metadata.name=x' }, (e) => events.push(e), resolve),
    );
    const err = await ended;
    assert.deepEqual(
      events.map((e) => e.type),
      ['ADDED', 'MODIFIED'],
    );
    assert.equal(httpStatus(err), 410);
    assert.equal(httpReason(err), 'Expired');
    assert.equal(seen[0]!.url, '/apis/l?fieldSelector=metadata.name%3Dx&watch=true');
    client.close();
  });

  test('a refused watch rejects with the API error; abort() ends a watch without calling onEnd', async () => {
    handler = (_req, _b, res) => {
      res.statusCode = 403;
      res.end(JSON.stringify({ message: 'leases is forbidden' }));
    };
    const client = new KubeClient({ server: base, source: 'test' });
    await assert.rejects(
      client.watch(
        '/apis/l',
        {},
        () => {},
        () => {},
      ),
      (err: Error & { code: string }) => err.code === 'LEASEHOLD_ERR_FORBIDDEN' && httpStatus(err) === 403 && err.message === 'leases is forbidden',
    );
    handler = (_req, _b, res) => res.writeHead(200).flushHeaders();
    let endCalls = 0;
    const handle = await client.watch(
      '/apis/l',
      {},
      () => {},
      () => endCalls++,
    );
    handle.abort();
    await new Promise((r) => setImmediate(r));
    assert.equal(endCalls, 0);
    client.close();
  });
});
