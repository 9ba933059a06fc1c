import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { OperatorMetrics } from './operator-metrics.js';
import { PROBE_MAX_CONNECTIONS, ProbeServer } from './probe-server.js';

function call(port: number, method: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(method === 'POST' ? '{"kind":"AdmissionReview"}' : undefined);
  });
}

test("policy mode's port: /healthz and /metrics over plain HTTP, and no webhook path", async () => {
  const metrics = new OperatorMetrics(false);
  const server = new ProbeServer(metrics);
  const port = await server.listen('127.0.0.1', 0);
  try {
    assert.deepEqual(await call(port, 'GET', '/healthz'), { status: 200, body: 'ok\n' });
    metrics.isLeader.set(1);
    const scraped = await call(port, 'GET', '/metrics');
    assert.equal(scraped.status, 200);
    assert.match(scraped.body, /leasehold_operator_is_leader 1/);
    assert.equal((await call(port, 'POST', '/mutate-pods')).status, 404, 'nothing answers admission in policy mode');
    assert.equal((await call(port, 'POST', '/healthz')).status, 405);
  } finally {
    await server.close();
  }
});

test('past the bound the oldest idle connection is closed, so clients that connect and wait cannot keep a probe out', { timeout: 30_000 }, async () => {
  const server = new ProbeServer(new OperatorMetrics(false));
  const port = await server.listen('127.0.0.1', 0);
  const held: Socket[] = [];
  const closed = new Set<Socket>();
  const open = () =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
      s.once('close', () => closed.add(s));
    });
  try {
    // Clients that connect and send nothing, each holding a place.
    for (let i = 0; i < PROBE_MAX_CONNECTIONS; i++) held.push(await open());
    assert.deepEqual(await call(port, 'GET', '/healthz'), { status: 200, body: 'ok\n' }, 'the probe is answered');
    // The server closed the oldest to make room: its close reaches the client after the answer at the latest.
    await new Promise<void>((resolve) => (closed.has(held[0]!) ? resolve() : held[0]!.once('close', () => resolve())));
    assert.ok(closed.has(held[0]!), 'the oldest idle connection was closed');
    assert.ok(!closed.has(held[1]!), 'only that one');
  } finally {
    for (const s of held) s.destroy();
    await server.close();
  }
});
