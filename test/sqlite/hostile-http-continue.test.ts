/**
 * Hostile review of the fenced HTTP wrapper's `Expect: 100-continue` wiring (issue 42) in
 * Express, on a real server (port 0) over a real SQLite file. Asserts the CORRECT behaviour;
 * it fails on the code and docs it was written against.
 *
 * FINDING 5: docs/fencing.md tells Express users `server.on('checkContinue', app)` so that the
 * fenced route answers 100 only once the claim passed. That listener takes the 100 away from
 * every other route of the app as well: Node no longer sends it, and no route but the fenced
 * one does. A client that waits for `100 Continue` before its body (Node's own http client
 * waiting on 'continue', Go and curl for a second, then sending anyway) hangs or is slowed on
 * every unfenced route of the service.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import express from 'express';
import { createSqliteFenceTable, sqliteFencedHandler } from '../../src/fencing/index.js';
import { readBody } from '../support/http-fence-client.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-hostile-continue-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The interim and final status lines a careful client hears on `path` within `waitMs`, sending its body only after a 100. */
function askToContinue(port: number, path: string, waitMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const heard: string[] = [];
    let got = '';
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(heard);
    };
    const timer = setTimeout(done, waitMs);
    socket.on('error', reject);
    socket.on('data', (d: Buffer) => {
      got += d.toString();
      for (let end = got.indexOf('\r\n\r\n'); end >= 0; end = got.indexOf('\r\n\r\n')) {
        const head = got.slice(0, got.indexOf('\r\n'));
        heard.push(head);
        got = got.slice(end + 4);
        if (/^HTTP\/1\.1 100 /.test(head)) socket.write('hello');
        else return done();
      }
    });
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n`);
  });
}

describe('hostile: the docs wiring for Expect: 100-continue in Express', () => {
  it('FINDING 5: an unfenced route of the same app still answers 100 Continue', { timeout: 30_000 }, async (t) => {
    const db = new Database(join(dir, 'service.db'));
    createSqliteFenceTable(db);
    const app = express();
    app.post(
      '/orders',
      sqliteFencedHandler(db, async (req, res) => {
        await readBody(req);
        res.end();
      }),
    );
    // Any other route of the service.
    app.post('/notes', express.text(), (req, res) => void res.status(201).send(String(req.body)));
    const server = createServer(app);
    server.on('checkContinue', app); // as docs/fencing.md has it
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.after(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      db.close();
    });
    const port = (server.address() as AddressInfo).port;
    const heard = await askToContinue(port, '/notes', 3_000);
    assert.deepEqual(heard, ['HTTP/1.1 100 Continue', 'HTTP/1.1 201 Created'], `heard within 3 s: ${JSON.stringify(heard)}`);
  });
});
