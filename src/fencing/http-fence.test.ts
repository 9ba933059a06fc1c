/**
 * The fenced HTTP handler on a real server (port 0) over a real SQLite file: the PostgreSQL
 * variant runs the same cases in test/postgres/http-fence.test.ts.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSqliteFenceTable } from './sqlite-fence.js';
import { sqliteFencedHandler } from './http-fence.js';
import { fenceHeaders } from './http-header.js';
import { listen, post, postHugeBodyUnsent, readBody } from '../../test/support/http-fence-client.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-http-fence-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('sqliteFencedHandler', () => {
  let db: Database.Database;
  let server: Server;
  let port: number;
  let calls = 0;
  const errors: unknown[] = [];
  before(async () => {
    db = new Database(join(dir, 'service.db'));
    createSqliteFenceTable(db);
    db.exec('CREATE TABLE orders (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT, token INTEGER, body TEXT)');
    ({ server, port } = await listen(
      sqliteFencedHandler(
        db,
        async (req, res, { claim, write }) => {
          calls++;
          const body = await readBody(req);
          if (body === 'throw') throw new Error('the handler failed');
          write((tx) => tx.prepare('INSERT INTO orders (key, token, body) VALUES (?, ?, ?)').run(claim.key, claim.token, body));
          res.end('{}');
        },
        { onError: (e) => errors.push(e) },
      ),
    ));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    db.close();
  });
  const rows = () => db.prepare('SELECT key, token, body FROM orders ORDER BY seq').all();

  it('lets a current claim through: the handler reads the body and writes in the fenced transaction', async () => {
    assert.deepEqual(await post(port, fenceHeaders({ key: 'orders/shard/1', token: 5 }), 'first'), { status: 200, body: {} });
    assert.deepEqual(await post(port, fenceHeaders({ key: 'orders/shard/1', token: 5 }), 'same term'), { status: 200, body: {} });
    assert.deepEqual(rows(), [
      { key: 'orders/shard/1', token: 5, body: 'first' },
      { key: 'orders/shard/1', token: 5, body: 'same term' },
    ]);
  });

  it('answers a stale token 409 with the key, the token and the highest, without calling the handler', async () => {
    const before = calls;
    const r = await post(port, fenceHeaders({ key: 'orders/shard/1', token: 4 }), 'stale');
    assert.equal(r.status, 409);
    assert.deepEqual([r.body.code, r.body.key, r.body.token, r.body.highest], ['LEASEHOLD_ERR_STALE_TOKEN', 'orders/shard/1', 4, 5]);
    assert.match(String(r.body.error), /fencing token 4 for key "orders\/shard\/1" is behind the highest token accepted for it \(5\)/);
    assert.equal(calls, before, 'the handler never ran');
    assert.equal(rows().length, 2, 'nothing written');
  });

  it('keeps each key its own fence: a low token on another key is accepted', async () => {
    assert.equal((await post(port, fenceHeaders({ key: 'orders/shard/2', token: 1 }), 'other shard')).status, 200);
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    ['no headers', {}, /^missing Leasehold-Fence-Key header$/],
    ['no token', { 'Leasehold-Fence-Key': 'k' }, /^missing Leasehold-Fencing-Token header$/],
    ['token 0', { 'Leasehold-Fence-Key': 'k', 'Leasehold-Fencing-Token': '0' }, /positive safe integer/],
    ['a key over 200 bytes', { 'Leasehold-Fence-Key': 'k'.repeat(201), 'Leasehold-Fencing-Token': '1' }, /^invalid fence key .*1 to 200 UTF-8 bytes/],
  ];
  for (const [name, headers, reason] of bad) {
    it(`answers ${name} 400, naming the rule`, async () => {
      const r = await post(port, headers, 'x');
      assert.equal(r.status, 400);
      assert.match(String(r.body.error), reason);
    });
  }

  it('answers 409 and 400 without reading a 1 GiB body the client never finishes sending', async () => {
    const before = calls;
    const stale = await postHugeBodyUnsent(port, fenceHeaders({ key: 'orders/shard/1', token: 3 }));
    assert.equal(stale.head, 'HTTP/1.1 409 Conflict');
    assert.equal((JSON.parse(stale.body) as { highest: number }).highest, 5);
    const missing = await postHugeBodyUnsent(port, { 'Leasehold-Fencing-Token': '9' });
    assert.equal(missing.head, 'HTTP/1.1 400 Bad Request');
    assert.equal(calls, before);
  });

  it('refuses the write when a newer writer got in while the handler was reading the body', async () => {
    // Writer A (token 7) passes the first check; before its body is complete, B (token 8) writes.
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
    a.flushHeaders();
    // Past the first check (it only reads): the handler is reading A's body.
    while (calls === before) await new Promise((r) => setImmediate(r));
    assert.equal((await post(port, fenceHeaders({ key, token: 8 }), 'B, newer')).status, 200);
    a.end(' A..');
    assert.equal(await answer, 409);
    assert.deepEqual(
      rows().filter((r) => (r as { key: string }).key === key),
      [{ key, token: 8, body: 'B, newer' }],
    );
  });

  it('answers 500 to any other error of the handler and hands it to onError', async () => {
    const r = await post(port, fenceHeaders({ key: 'orders/shard/4', token: 1 }), 'throw');
    assert.deepEqual(r, { status: 500, body: { error: 'internal error' } });
    assert.match(String((errors.at(-1) as Error).message), /the handler failed/);
  });

  it('answers 500, not 400, when the service itself is misconfigured (a bad fence table name)', async () => {
    const seen: unknown[] = [];
    const { server: s, port: p } = await listen(sqliteFencedHandler(db, () => undefined, { table: 'no such table', onError: (e) => seen.push(e) }));
    try {
      assert.deepEqual(await post(p, fenceHeaders({ key: 'k', token: 1 })), { status: 500, body: { error: 'internal error' } });
      assert.match((seen[0] as Error).message, /invalid fence table "no such table"/);
    } finally {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it("passes other errors to Express's next when given one", async () => {
    const handler = sqliteFencedHandler(db, () => {
      throw new Error('to next');
    });
    const seen: unknown[] = [];
    const { server: s, port: p } = await listen((req, res) =>
      handler(req, res, (err) => {
        seen.push(err);
        res.statusCode = 418;
        res.end();
      }),
    );
    try {
      const r = await post(p, fenceHeaders({ key: 'orders/shard/5', token: 1 }));
      assert.equal(r.status, 418);
      assert.match((seen[0] as Error).message, /to next/);
    } finally {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });
});
