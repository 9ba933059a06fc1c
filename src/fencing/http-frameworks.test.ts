/**
 * sqliteFencedHandler mounted in Express and in Fastify exactly as docs/fencing.md shows, on a
 * real server (port 0) over a real SQLite file: a current token written, a stale one 409,
 * a missing or malformed header 400, each refusal before the body is read; and a client that
 * sends `Expect: 100-continue` with a stale token refused before it sends its body.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { createSqliteFenceTable } from './sqlite-fence.js';
import { sqliteFencedHandler } from './http-fence.js';
import { fenceHeaders } from './http-header.js';
import { post, postExpectingContinue, postHugeBodyUnsent } from '../../test/support/http-fence-client.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-http-frameworks-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// As docs/fencing.md has it.
const readBody = async (req: NodeJS.ReadableStream) => {
  let s = '';
  for await (const chunk of req) s += String(chunk);
  return s;
};

function openService(name: string): Database.Database {
  const db = new Database(join(dir, `${name}.db`));
  createSqliteFenceTable(db);
  db.exec('CREATE TABLE orders (id TEXT PRIMARY KEY, total REAL, shard_key TEXT, token INTEGER)');
  return db;
}

/** The cases every framework must pass, on a service whose one route is POST /orders. */
function fencedRouteCases(name: string, start: (db: Database.Database) => Promise<{ port: number; stop: () => Promise<void> }>): void {
  describe(`sqliteFencedHandler in ${name}`, () => {
    let db: Database.Database;
    let port: number;
    let stop: () => Promise<void>;
    before(async () => {
      db = openService(name);
      ({ port, stop } = await start(db));
    });
    after(async () => {
      await stop();
      db.close();
    });
    const orders = () => db.prepare('SELECT id, total, shard_key AS key, token FROM orders ORDER BY rowid').all();
    const order = (id: string) => JSON.stringify({ id, total: 9.5 });

    it('lets a current token write (the handler answers 201), the same term again too', async () => {
      assert.equal((await post(port, fenceHeaders({ key: 'orders/shard/1', token: 5 }), order('a'))).status, 201);
      assert.equal((await post(port, fenceHeaders({ key: 'orders/shard/1', token: 5 }), order('b'))).status, 201);
      assert.deepEqual(orders(), [
        { id: 'a', total: 9.5, key: 'orders/shard/1', token: 5 },
        { id: 'b', total: 9.5, key: 'orders/shard/1', token: 5 },
      ]);
    });

    it('answers a stale token 409 and a missing or malformed header 400, without reading a 1 GiB body', async () => {
      const stale = await postHugeBodyUnsent(port, fenceHeaders({ key: 'orders/shard/1', token: 4 }));
      assert.equal(stale.head, 'HTTP/1.1 409 Conflict');
      assert.deepEqual(JSON.parse(stale.body), {
        error: 'fencing token 4 for key "orders/shard/1" is behind the highest token accepted for it (5): a newer writer holds the term; nothing was written',
        code: 'LEASEHOLD_ERR_STALE_TOKEN',
        key: 'orders/shard/1',
        token: 4,
        highest: 5,
      });
      const missing = await postHugeBodyUnsent(port, { 'Leasehold-Fencing-Token': '9' });
      assert.equal(missing.head, 'HTTP/1.1 400 Bad Request');
      assert.deepEqual(JSON.parse(missing.body), { error: 'missing Leasehold-Fence-Key header' });
      const malformed = await postHugeBodyUnsent(port, { 'Leasehold-Fence-Key': 'orders/shard/1', 'Leasehold-Fencing-Token': '05' });
      assert.equal(malformed.head, 'HTTP/1.1 400 Bad Request');
      assert.equal(orders().length, 2, 'nothing written');
    });

    it('Expect: 100-continue: a stale token is refused before the client sends its body; a current one is asked for it', { timeout: 30_000 }, async () => {
      const stale = await postExpectingContinue(port, fenceHeaders({ key: 'orders/shard/1', token: 3 }), order('stale'));
      assert.deepEqual([stale.interim, stale.head, stale.bodySent], [[], 'HTTP/1.1 409 Conflict', false]);
      const current = await postExpectingContinue(port, fenceHeaders({ key: 'orders/shard/1', token: 6 }), order('c'));
      assert.deepEqual([current.interim, current.head, current.bodySent], [['HTTP/1.1 100 Continue'], 'HTTP/1.1 201 Created', true]);
      assert.deepEqual(
        orders().map((o) => (o as { id: string }).id),
        ['a', 'b', 'c'],
      );
    });

    // A 'checkContinue' listener takes Node's automatic 100 from every route: the docs' one
    // sends it itself for the others, or their careful clients would wait for it for good.
    it('Expect: 100-continue: another route of the same service is asked for its body at once, no fencing headers', { timeout: 30_000 }, async () => {
      const note = await postExpectingContinue(port, { 'content-type': 'text/plain' }, 'hello', '/notes');
      assert.deepEqual([note.interim, note.head, note.body], [['HTTP/1.1 100 Continue'], 'HTTP/1.1 201 Created', 'hello']);
    });
  });
}

fencedRouteCases('Express', async (db) => {
  // The docs' snippet, as written.
  const app = express();
  app.post(
    '/orders',
    sqliteFencedHandler(db, async (req, res, { claim, write }) => {
      const order = JSON.parse(await readBody(req)) as { id: string; total: number };
      write((tx) => tx.prepare('INSERT INTO orders (id, total, shard_key, token) VALUES (?, ?, ?, ?)').run(order.id, order.total, claim.key, claim.token));
      res.statusCode = 201;
      res.end();
    }),
  );
  // Any other route of the service.
  app.post('/notes', express.text(), (req, res) => void res.status(201).send(String(req.body)));
  const server = createServer(app);
  // The docs' lines for Expect: 100-continue: on the fenced route 100 is sent only once the claim passed.
  server.on('checkContinue', (req, res) => {
    if (new URL(req.url ?? '/', 'http://service').pathname !== '/orders') res.writeContinue();
    app(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, stop: () => closeServer(server) };
});

fencedRouteCases('Fastify', async (db) => {
  const fastify: FastifyInstance = Fastify();
  // The docs' snippet, as written (on SQLite: the write is synchronous).
  await fastify.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null)); // the body stays unread
    const handler = sqliteFencedHandler(db, async (req, res, { claim, write }) => {
      const order = JSON.parse(await readBody(req)) as { id: string; total: number };
      write((tx) => tx.prepare('INSERT INTO orders (id, total, shard_key, token) VALUES (?, ?, ?, ?)').run(order.id, order.total, claim.key, claim.token));
      res.statusCode = 201;
      res.end();
    });
    scope.post('/orders', (request, reply) => {
      reply.hijack();
      handler(request.raw, reply.raw);
    });
  });
  // Any other route of the service.
  fastify.post('/notes', async (request, reply) => reply.code(201).send(String(request.body)));
  // The docs' lines for Expect: 100-continue: Fastify handles the request, Node sends no 100 itself.
  fastify.server.on('checkContinue', (req: IncomingMessage, res) => {
    if (new URL(req.url ?? '/', 'http://service').pathname !== '/orders') res.writeContinue();
    fastify.server.emit('request', req, res);
  });
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  return {
    port: (fastify.server.address() as AddressInfo).port,
    stop: async () => {
      fastify.server.closeAllConnections();
      await fastify.close();
    },
  };
});

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}
