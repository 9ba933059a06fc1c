/**
 * The fenced HTTP wrapper and a request its handler refuses, on a real server (port 0) over a
 * real SQLite file. The wrapper's first check only reads; the fence is raised inside `write`.
 * When the first check raised the fence itself, a handler that authenticates the request and
 * answers 401 without calling `write` still left the fence raised: one unauthenticated request
 * with token 2^53 - 1 locked every real writer of the key out for good.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSqliteFenceTable, sqliteFencedHandler, fenceHeaders } from '../../src/fencing/index.js';
import { listen, post, readBody } from '../support/http-fence-client.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-http-fence-refused-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the fenced HTTP wrapper and requests its handler refuses', () => {
  it('a request the handler refuses (401, write never called) does not raise the fence', async (t) => {
    const db = new Database(join(dir, 'service.db'));
    createSqliteFenceTable(db);
    db.exec('CREATE TABLE orders (token INTEGER NOT NULL, body TEXT NOT NULL)');
    const { server, port } = await listen(
      sqliteFencedHandler(db, async (req, res, { claim, write }) => {
        const body = await readBody(req);
        // The service's own check, where a handler naturally puts it.
        if (req.headers.authorization !== 'Bearer leader-secret') {
          res.writeHead(401).end('{}');
          return;
        }
        write((tx) => tx.prepare('INSERT INTO orders VALUES (?, ?)').run(claim.token, body));
        res.end('{}');
      }),
    );
    t.after(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      db.close();
    });
    const leader = { authorization: 'Bearer leader-secret' };
    assert.equal((await post(port, { ...fenceHeaders({ key: 'orders', token: 4 }), ...leader }, 'term 4')).status, 200);
    // Anyone who can reach the port: refused by the handler.
    const stranger = await post(port, fenceHeaders({ key: 'orders', token: Number.MAX_SAFE_INTEGER }), 'nothing');
    assert.equal(stranger.status, 401);
    const fence = db.prepare("SELECT token FROM leasehold_fences WHERE key = 'orders'").get() as { token: number };
    assert.equal(fence.token, 4, 'the fence was raised by a request the handler refused');
    const next = await post(port, { ...fenceHeaders({ key: 'orders', token: 5 }), ...leader }, 'term 5');
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.deepEqual(db.prepare('SELECT token, body FROM orders ORDER BY rowid').all(), [
      { token: 4, body: 'term 4' },
      { token: 5, body: 'term 5' },
    ]);
  });
});
