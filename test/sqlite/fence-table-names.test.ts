/**
 * withSqliteFence and the names it uses, on real SQLite files:
 * - the fence table is named with its schema (main."leasehold_fences"): unqualified, SQLite
 *   resolves a name in temp before main, and a temporary table of that name on the writer's
 *   connection (created before or after the statements were prepared and cached) would take the
 *   check, letting a token below the file's fence commit. withPostgresFence pins its schema for
 *   the same reason (test/postgres/fence-protocol.test.ts, "a temporary one");
 * - the statements cached per connection follow the table when another connection drops and
 *   re-creates it, and a dropped table is named as missing, not a crash.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSqliteFenceTable, withSqliteFence } from '../../src/fencing/sqlite-fence.js';
import { InvalidConfigError, StaleTokenError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-fence-table-names-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

function openFile(t: { after: (fn: () => void) => void }): { path: string; connect: () => Database.Database } {
  const path = join(dir, `h${n++}.db`);
  const connections: Database.Database[] = [];
  t.after(() => connections.forEach((c) => c.close()));
  const connect = (): Database.Database => {
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    connections.push(db);
    return db;
  };
  const setup = connect();
  createSqliteFenceTable(setup);
  setup.exec('CREATE TABLE data (label TEXT NOT NULL)');
  return { path, connect };
}

const write = (label: string) => (db: Database.Database) => db.prepare('INSERT INTO main.data (label) VALUES (?)').run(label);
const labels = (db: Database.Database) => (db.prepare('SELECT label FROM main.data ORDER BY rowid').all() as { label: string }[]).map((r) => r.label);

describe('withSqliteFence and the names it uses', () => {
  it('a temporary look-alike fence table on the connection does not let a stale token commit', (t) => {
    const file = openFile(t);
    const writer = file.connect();
    withSqliteFence(writer, { key: 'orders', token: 9 }, write('term 9'));
    // Created after the statements were cached on this connection: SQLite re-prepares them.
    writer.exec('CREATE TEMP TABLE leasehold_fences (key TEXT PRIMARY KEY NOT NULL, token INTEGER NOT NULL, updated_at TEXT NOT NULL)');
    let outcome: unknown = 'committed';
    try {
      withSqliteFence(writer, { key: 'orders', token: 3 }, write('stale term 3'));
    } catch (e) {
      outcome = e;
    }
    assert.ok(outcome instanceof StaleTokenError && outcome.highest === 9, `token 3 under a fence at 9: ${String(outcome)}`);
    assert.deepEqual(labels(file.connect()), ['term 9']);
  });

  it('another connection drops and re-creates the fence table between two calls; the cached statements follow it', (t) => {
    const file = openFile(t);
    const writer = file.connect();
    const other = file.connect();
    withSqliteFence(writer, { key: 'orders', token: 2 }, write('term 2'));
    other.exec('DROP TABLE leasehold_fences');
    assert.throws(
      () => withSqliteFence(writer, { key: 'orders', token: 1 }, write('no table')),
      (e: unknown) => e instanceof InvalidConfigError && /fence table "leasehold_fences" must exist/.test(e.message),
    );
    createSqliteFenceTable(other);
    other.prepare("INSERT INTO leasehold_fences VALUES ('orders', 9, 'now')").run();
    assert.throws(
      () => withSqliteFence(writer, { key: 'orders', token: 5 }, write('stale term 5')),
      (e: unknown) => e instanceof StaleTokenError && e.highest === 9,
    );
    withSqliteFence(writer, { key: 'orders', token: 10 }, write('term 10'));
    assert.deepEqual(labels(other), ['term 2', 'term 10']);
    assert.equal((other.prepare("SELECT token FROM leasehold_fences WHERE key = 'orders'").get() as { token: number }).token, 10);
  });
});
