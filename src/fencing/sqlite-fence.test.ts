/**
 * withSqliteFence on real SQLite files: the check and the caller's writes commit or roll back
 * together, across connections to one file, and bad input is refused before anything is
 * written.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createSqliteFenceTable, withSqliteFence } from './sqlite-fence.js';
import { shardFenceKey } from './claim.js';
import { FencedSqliteResource } from './fenced-resource.js';
import { StaleTokenError } from '../errors.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-sqlite-fence-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** A fresh file with the fence table and a data table; closed after the test. */
function open(t: { after: (fn: () => void) => void }): { db: Database.Database; path: string } {
  const path = join(dir, `f${n++}.db`);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  createSqliteFenceTable(db);
  db.exec('CREATE TABLE data (key TEXT, token INTEGER, label TEXT)');
  t.after(() => db.close());
  return { db, path };
}
const insert = (db: Database.Database, key: string, token: number, label: string) => () =>
  db.prepare('INSERT INTO data (key, token, label) VALUES (?, ?, ?)').run(key, token, label).changes;
const fence = (db: Database.Database) => db.prepare('SELECT key, token FROM leasehold_fences ORDER BY key').all();
const labels = (db: Database.Database) => (db.prepare('SELECT label FROM data ORDER BY rowid').all() as { label: string }[]).map((r) => r.label);

function isStale(key: string, presented: number, highest: number) {
  return (e: unknown) => {
    assert.ok(e instanceof StaleTokenError, String(e));
    assert.deepEqual([e.code, e.key, e.presented, e.highest], ['LEASEHOLD_ERR_STALE_TOKEN', key, presented, highest]);
    assert.match(e.message, new RegExp(`fencing token ${presented} for key "${key}" is behind the highest token accepted for it \\(${highest}\\)`));
    return true;
  };
}

describe('withSqliteFence', () => {
  it('accepts an equal or higher token (raising the fence), refuses a lower one before its work runs', (t) => {
    const { db } = open(t);
    assert.equal(withSqliteFence(db, { key: 'orders', token: 5 }, insert(db, 'orders', 5, 'first')), 1);
    assert.equal(withSqliteFence(db, { key: 'orders', token: 5 }, insert(db, 'orders', 5, 'same term')), 1);
    let ran = false;
    assert.throws(
      () =>
        withSqliteFence(db, { key: 'orders', token: 4 }, () => {
          ran = true;
        }),
      isStale('orders', 4, 5),
    );
    assert.equal(ran, false, 'the stale work never ran');
    withSqliteFence(db, { key: 'orders', token: 7 }, insert(db, 'orders', 7, 'newer'));
    assert.throws(() => withSqliteFence(db, { key: 'orders', token: 6 }, insert(db, 'orders', 6, 'stale')), isStale('orders', 6, 7));
    // Keys are fenced apart: another key starts from nothing.
    withSqliteFence(db, { key: 'invoices', token: 1 }, insert(db, 'invoices', 1, 'other key'));
    assert.deepEqual(fence(db), [
      { key: 'invoices', token: 1 },
      { key: 'orders', token: 7 },
    ]);
    assert.deepEqual(labels(db), ['first', 'same term', 'newer', 'other key']);
  });

  it('a work that throws leaves the fence where it was and none of its writes', (t) => {
    const { db } = open(t);
    withSqliteFence(db, { key: 'k', token: 3 }, insert(db, 'k', 3, 'kept'));
    const boom = new Error('the work failed');
    assert.throws(
      () =>
        withSqliteFence(db, { key: 'k', token: 9 }, () => {
          insert(db, 'k', 9, 'rolled back')();
          throw boom;
        }),
      (e) => e === boom,
    );
    assert.deepEqual(fence(db), [{ key: 'k', token: 3 }], 'the fence was not raised to 9');
    assert.deepEqual(labels(db), ['kept']);
    // So token 4 (below the 9 that failed) is still accepted.
    withSqliteFence(db, { key: 'k', token: 4 }, insert(db, 'k', 4, 'after'));
    assert.deepEqual(fence(db), [{ key: 'k', token: 4 }]);
  });

  it('a work that returns a Promise is refused and nothing of it commits', async (t) => {
    const { db } = open(t);
    assert.throws(
      () =>
        withSqliteFence(db, { key: 'k', token: 2 }, async () => {
          insert(db, 'k', 2, 'before the await')();
          await Promise.resolve();
        }),
      (e: { code: string; message: string }) => e.code === 'LEASEHOLD_ERR_INVALID_CONFIG' && /returned a Promise: it must be synchronous/.test(e.message),
    );
    assert.deepEqual(fence(db), []);
    assert.deepEqual(labels(db), []);
  });

  it('two connections to one file: the second sees the first one raise the fence', (t) => {
    const { db, path } = open(t);
    const other = new Database(path, { timeout: 5_000 });
    t.after(() => other.close());
    withSqliteFence(other, { key: 'k', token: 8 }, insert(other, 'k', 8, 'newer writer'));
    assert.throws(() => withSqliteFence(db, { key: 'k', token: 7 }, insert(db, 'k', 7, 'older writer')), isStale('k', 7, 8));
    assert.deepEqual(labels(db), ['newer writer']);
  });

  it('a table of another name, and shard keys, each with its own fence', (t) => {
    const { db } = open(t);
    createSqliteFenceTable(db, { table: 'shard_fences' });
    const s0 = shardFenceKey('orders', 0);
    const s1 = shardFenceKey('orders', 1);
    withSqliteFence(db, { key: s0, token: 5 }, () => undefined, { table: 'shard_fences' });
    withSqliteFence(db, { key: s1, token: 2 }, () => undefined, { table: 'shard_fences' });
    assert.throws(() => withSqliteFence(db, { key: s0, token: 4 }, () => undefined, { table: 'shard_fences' }), isStale('orders/shard/0', 4, 5));
    assert.deepEqual(db.prepare('SELECT key, token FROM shard_fences ORDER BY key').all(), [
      { key: 'orders/shard/0', token: 5 },
      { key: 'orders/shard/1', token: 2 },
    ]);
    assert.deepEqual(fence(db), [], 'the default table was not touched');
  });

  it('a work that ends the transaction itself is refused by name: what it ran after that was not fenced', (t) => {
    const { db } = open(t);
    assert.throws(
      () =>
        withSqliteFence(db, { key: 'own-commit', token: 1 }, (tx) => {
          tx.exec('COMMIT');
        }),
      (err: Error & { code?: string; field?: string }) =>
        err.code === 'LEASEHOLD_ERR_INVALID_CONFIG' && err.field === 'work' && /ended its transaction/.test(err.message),
    );
    assert.equal(db.inTransaction, false);
  });

  it('a missing fence table is named, never created behind the caller', () => {
    const db = new Database(':memory:');
    try {
      assert.throws(
        () => withSqliteFence(db, { key: 'k', token: 1 }, () => 1),
        /^InvalidConfigError: the fence table "leasehold_fences" must exist: create it with createSqliteFenceTable/,
      );
      assert.deepEqual(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'leasehold_fences'").get(), { n: 0 });
    } finally {
      db.close();
    }
  });

  it('compares keys as bytes: the NFC and NFD spellings of one word are two fences', (t) => {
    const { db } = open(t);
    const nfc = 'caf\u00e9';
    const nfd = 'cafe\u0301';
    assert.equal(nfc.normalize('NFC'), nfd.normalize('NFC'));
    withSqliteFence(db, { key: nfc, token: 9 }, () => undefined);
    assert.equal(
      withSqliteFence(db, { key: nfd, token: 1 }, () => 'accepted'),
      'accepted',
    );
    assert.deepEqual(fence(db), [
      { key: nfd, token: 1 },
      { key: nfc, token: 9 },
    ]);
  });

  it('prepares its statements once per connection and table, not per write; a table dropped later is still named', (t) => {
    const { db } = open(t);
    const prepare = db.prepare.bind(db);
    let prepared = 0;
    db.prepare = (sql: string) => {
      prepared++;
      return prepare(sql);
    };
    withSqliteFence(db, { key: 'k', token: 1 }, () => undefined);
    const first = prepared;
    for (const token of [1, 2, 2, 3]) withSqliteFence(db, { key: 'k', token }, () => undefined);
    assert.throws(() => withSqliteFence(db, { key: 'k', token: 2 }, () => undefined), isStale('k', 2, 3));
    assert.equal(prepared, first, 'no statement prepared again');
    db.exec('DROP TABLE leasehold_fences');
    assert.throws(
      () => withSqliteFence(db, { key: 'k', token: 4 }, () => undefined),
      /^InvalidConfigError: the fence table "leasehold_fences" must exist: create it with createSqliteFenceTable/,
    );
    createSqliteFenceTable(db);
    assert.equal(
      withSqliteFence(db, { key: 'k', token: 1 }, () => 'again'),
      'again',
    );
    assert.deepEqual(fence(db), [{ key: 'k', token: 1 }]);
  });

  describe('bad input: one line naming the value and the rule, nothing written', () => {
    const cases: [string, unknown, unknown, string | undefined, RegExp][] = [
      ['token 0', 'k', 0, undefined, /^invalid fencing token 0: must be a positive safe integer/],
      ['token -1', 'k', -1, undefined, /^invalid fencing token -1: must be a positive safe integer/],
      ['token 1.5', 'k', 1.5, undefined, /^invalid fencing token 1\.5: must be a positive safe integer/],
      ['token 2**53', 'k', 2 ** 53, undefined, /^invalid fencing token 9007199254740992 \(past 2\^53 − 1\): must be a positive safe integer/],
      ['token NaN', 'k', NaN, undefined, /^invalid fencing token NaN: must be a positive safe integer/],
      ["token '3'", 'k', '3', undefined, /^invalid fencing token "3": must be a positive safe integer/],
      ['empty key', '', 1, undefined, /^invalid fence key "": must be a string of 1 to 200 UTF-8 bytes without control characters$/],
      ['key of 201 bytes', 'é'.repeat(100) + 'x', 1, undefined, /^invalid fence key "é{60}…" \(201 bytes\): must be a string of 1 to 200 UTF-8 bytes/],
      ['key with a newline', 'a\nb', 1, undefined, /^invalid fence key "a\\nb": must be/],
      ['key with DEL', 'a\u007fb', 1, undefined, /^invalid fence key "a\\u007fb": must be/],
      ['table not an identifier', 'k', 1, 'fences; DROP TABLE data', /^invalid fence table "fences; DROP TABLE data": must be a lowercase SQL identifier/],
      ['table with a schema', 'k', 1, 'main.fences', /^invalid fence table "main\.fences": must be a lowercase SQL identifier/],
    ];
    for (const [name, key, token, table, want] of cases) {
      it(name, (t) => {
        const { db } = open(t);
        let ran = false;
        const err = (() => {
          try {
            withSqliteFence(db, { key, token } as { key: string; token: number }, () => (ran = true), table === undefined ? undefined : { table });
          } catch (e) {
            return e as { code: string; message: string };
          }
          return undefined;
        })();
        assert.equal(err?.code, 'LEASEHOLD_ERR_INVALID_CONFIG', err?.message);
        assert.match(err.message, want);
        assert.equal(err.message.includes('\n'), false, 'one line');
        assert.equal(ran, false);
        assert.deepEqual(fence(db), []);
        assert.deepEqual(labels(db), []);
      });
    }
  });
});

describe('FencedSqliteResource on withSqliteFence', () => {
  it('keeps its table and raises its fence row; a write the tutorial raised in its own column is still refused', (t) => {
    const path = join(dir, 'demo.db');
    const r = new FencedSqliteResource(path);
    t.after(() => r.close());
    assert.equal(r.write('v3', 'a', 3).accepted, true);
    const raw = new Database(path);
    t.after(() => raw.close());
    assert.deepEqual(raw.prepare("SELECT key, token FROM leasehold_fences WHERE key = 'resource'").get(), { key: 'resource', token: 3 });
    // The tutorial's Python writer checks and raises only resource.fencing_token.
    raw.prepare('UPDATE resource SET value = ?, written_by = ?, fencing_token = ? WHERE id = 1').run('py', 'python', 6);
    const stale = r.write('v5', 'a', 5);
    assert.deepEqual([stale.accepted, stale.highest, stale.reason], [false, 6, 'fencing token 5 is behind the highest token this resource has accepted (6)']);
    assert.deepEqual(raw.prepare("SELECT token FROM leasehold_fences WHERE key = 'resource'").get(), { token: 3 }, 'the refused write raised nothing');
    assert.deepEqual(r.read(), { value: 'py', writtenBy: 'python', fencingToken: 6 });
    assert.deepEqual([r.write('v6', 'b', 6).accepted, r.history().length], [true, 2]);
    assert.throws(() => r.write('x', 'b', 0), RangeError);
  });
});
