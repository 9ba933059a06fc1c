/**
 * The fenced HTTP handler over a real PostgreSQL (a server started for the test), on a real
 * server on port 0: the SQLite variant is src/fencing/http-fence.test.ts.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import Fastify from 'fastify';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { createPostgresFenceTable } from '../../src/fencing/postgres-fence.js';
import { postgresFencedHandler } from '../../src/fencing/http-fence.js';
import { fenceHeaders } from '../../src/fencing/http-header.js';
import { listen, post, postExpectingContinue, postHugeBodyUnsent, readBody } from '../support/http-fence-client.js';

describe('postgresFencedHandler on a real PostgreSQL', () => {
  let server: PostgresServer;
  let pool: pg.Pool;
  let http: Server;
  let port: number;
  let calls = 0;
  before(async () => {
    server = await startPostgres();
    pool = new pg.Pool({ connectionString: server.url(), max: 4 });
    await createPostgresFenceTable(pool);
    await pool.query('CREATE TABLE orders (seq bigserial PRIMARY KEY, key text, token bigint, body text)');
    ({ server: http, port } = await listen(
      postgresFencedHandler(pool, async (req, res, { claim, write }) => {
        calls++;
        const body = await readBody(req);
        await write((tx) => tx.query('INSERT INTO orders (key, token, body) VALUES ($1, $2, $3)', [claim.key, claim.token, body]));
        res.end('{}');
      }),
    ));
  });
  after(async () => {
    http?.closeAllConnections();
    if (http) await new Promise((r) => http.close(r));
    await pool?.end();
    await server?.stop();
  });
  const rows = async (key: string) =>
    (await pool.query<{ token: number; body: string }>('SELECT token::int, body FROM orders WHERE key = $1 ORDER BY seq', [key])).rows;

  it('lets current claims through and answers a stale one 409 with key, token and highest, nothing written', async () => {
    const key = 'orders/shard/1';
    assert.equal((await post(port, fenceHeaders({ key, token: 5 }), 'first')).status, 200);
    assert.equal((await post(port, fenceHeaders({ key, token: 5 }), 'same term')).status, 200);
    const before = calls;
    const stale = await post(port, fenceHeaders({ key, token: 4 }), 'stale');
    assert.equal(stale.status, 409);
    assert.deepEqual([stale.body.code, stale.body.key, stale.body.token, stale.body.highest], ['LEASEHOLD_ERR_STALE_TOKEN', key, 4, 5]);
    assert.equal(calls, before, 'the handler never ran');
    assert.deepEqual(await rows(key), [
      { token: 5, body: 'first' },
      { token: 5, body: 'same term' },
    ]);
  });

  it('answers 409 and 400 without reading a 1 GiB body the client never finishes sending', async () => {
    const before = calls;
    const stale = await postHugeBodyUnsent(port, fenceHeaders({ key: 'orders/shard/1', token: 2 }));
    assert.equal(stale.head, 'HTTP/1.1 409 Conflict');
    assert.equal((JSON.parse(stale.body) as { highest: number }).highest, 5);
    const bad = await postHugeBodyUnsent(port, { 'Leasehold-Fence-Key': 'k', 'Leasehold-Fencing-Token': '-1' });
    assert.equal(bad.head, 'HTTP/1.1 400 Bad Request');
    assert.equal(calls, before);
  });

  it('refuses the write when a newer writer got in while the handler was reading the body', async () => {
    const key = 'orders/shard/3';
    const a = request({ host: '127.0.0.1', port, method: 'POST', path: '/orders', headers: { ...fenceHeaders({ key, token: 7 }), 'content-length': '8' } });
    const answer = new Promise<number>((resolve, reject) => {
      a.on('response', (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      a.on('error', reject);
    });
    const before = calls;
    a.write('from');
    // Past the first check (it only reads): the handler is reading A's body.
    while (calls === before) await new Promise((r) => setImmediate(r));
    assert.equal((await post(port, fenceHeaders({ key, token: 8 }), 'B, newer')).status, 200);
    a.end(' A..');
    assert.equal(await answer, 409);
    assert.deepEqual(await rows(key), [{ token: 8, body: 'B, newer' }]);
  });

  it('a request the handler refuses (401, write never called) leaves the fence where it was', async () => {
    const guarded = await listen(
      postgresFencedHandler(pool, async (req, res, { claim, write }) => {
        const body = await readBody(req);
        if (req.headers.authorization !== 'Bearer leader-secret') {
          res.writeHead(401).end('{}');
          return;
        }
        await write((tx) => tx.query('INSERT INTO orders (key, token, body) VALUES ($1, $2, $3)', [claim.key, claim.token, body]));
        res.end('{}');
      }),
    );
    try {
      const key = 'orders/shard/4';
      const leader = { authorization: 'Bearer leader-secret' };
      assert.equal((await post(guarded.port, { ...fenceHeaders({ key, token: 4 }), ...leader }, 'term 4')).status, 200);
      assert.equal((await post(guarded.port, fenceHeaders({ key, token: Number.MAX_SAFE_INTEGER }), 'stranger')).status, 401);
      const fence = await pool.query<{ token: number }>('SELECT token::int FROM leasehold_fences WHERE key = $1', [key]);
      assert.equal(fence.rows[0]?.token, 4, 'the fence was raised by a request the handler refused');
      assert.equal((await post(guarded.port, { ...fenceHeaders({ key, token: 5 }), ...leader }, 'term 5')).status, 200);
      assert.deepEqual(await rows(key), [
        { token: 4, body: 'term 4' },
        { token: 5, body: 'term 5' },
      ]);
    } finally {
      guarded.server.closeAllConnections();
      await new Promise((r) => guarded.server.close(r));
    }
  });

  it("docs/fencing.md's Fastify snippet, as written: 200 current, 409 stale and 400 missing with the body unread, 100-continue only when current", async () => {
    await pool.query('ALTER TABLE orders ADD COLUMN shard_key text');
    const fastify = Fastify();
    await fastify.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_request, _payload, done) => done(null)); // the body stays unread
      const handler = postgresFencedHandler(pool, async (req, res, { claim, write }) => {
        const body = await readBody(req);
        await write((tx) => tx.query('INSERT INTO orders (body, shard_key, token) VALUES ($1, $2, $3)', [body, claim.key, claim.token]));
        res.end();
      });
      scope.post('/orders', (request, reply) => {
        reply.hijack();
        handler(request.raw, reply.raw);
      });
    });
    fastify.server.on('checkContinue', (req: IncomingMessage, res) => {
      if (new URL(req.url ?? '/', 'http://service').pathname !== '/orders') res.writeContinue();
      fastify.server.emit('request', req, res);
    });
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    try {
      const p = (fastify.server.address() as AddressInfo).port;
      const key = 'orders/shard/9';
      assert.equal((await post(p, fenceHeaders({ key, token: 3 }), 'via fastify')).status, 200);
      const stale = await postHugeBodyUnsent(p, fenceHeaders({ key, token: 2 }));
      assert.equal(stale.head, 'HTTP/1.1 409 Conflict');
      assert.equal((JSON.parse(stale.body) as { highest: number }).highest, 3);
      assert.equal((await postHugeBodyUnsent(p, { 'Leasehold-Fencing-Token': '3' })).head, 'HTTP/1.1 400 Bad Request');
      const staleContinue = await postExpectingContinue(p, fenceHeaders({ key, token: 2 }), 'stale, never sent');
      assert.deepEqual([staleContinue.head, staleContinue.bodySent], ['HTTP/1.1 409 Conflict', false]);
      const current = await postExpectingContinue(p, fenceHeaders({ key, token: 3 }), 'asked for');
      assert.deepEqual([current.interim, current.head, current.bodySent], [['HTTP/1.1 100 Continue'], 'HTTP/1.1 200 OK', true]);
      const written = await pool.query<{ body: string }>('SELECT body FROM orders WHERE shard_key = $1 ORDER BY seq', [key]);
      assert.deepEqual(
        written.rows.map((r) => r.body),
        ['via fastify', 'asked for'],
      );
    } finally {
      fastify.server.closeAllConnections();
      await fastify.close();
    }
  });
});
