import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkClaim, shardFenceKey } from './claim.js';
import { postgresName, sqliteFenceTable } from './fence-table.js';
import { StaleTokenError } from '../errors.js';

describe('fence claims', () => {
  it('a key of exactly 200 UTF-8 bytes and the largest safe token are accepted', () => {
    const key = 'é'.repeat(100);
    assert.deepEqual(checkClaim({ key, token: Number.MAX_SAFE_INTEGER }), { key, token: Number.MAX_SAFE_INTEGER });
    assert.throws(() => checkClaim({ key: key + 'x', token: 1 }), /invalid fence key .* \(201 bytes\)/);
  });

  it('a line separator in a key is refused, escaped in the message', () => {
    assert.throws(
      () => checkClaim({ key: 'a\u2028b', token: 1 }),
      (e: Error) => e.message.startsWith('invalid fence key "a\\u2028b"') && !e.message.includes('\u2028'),
    );
  });

  it('a claim that is not an object is refused', () => {
    assert.throws(() => checkClaim(null as never), /^InvalidConfigError: invalid fence claim null: must be an object \{ key, token \}$/);
  });

  it('shardFenceKey: one key per resource and shard; the shard a whole number from 0', () => {
    assert.equal(shardFenceKey('orders', 0), 'orders/shard/0');
    assert.equal(shardFenceKey('orders', 31), 'orders/shard/31');
    assert.notEqual(shardFenceKey('orders', 1), shardFenceKey('orders', 11));
    for (const bad of [-1, 1.5, NaN, '3'])
      assert.throws(() => shardFenceKey('orders', bad as number), /^InvalidConfigError: invalid shard .*: must be a whole number from 0$/);
    assert.throws(() => shardFenceKey('', 1), /invalid fence key ""/);
    // The resource fits, the key with its suffix would not: refused, never cut.
    assert.throws(() => shardFenceKey('r'.repeat(195), 12), /invalid fence key "r{60}…" \(204 bytes\)/);
  });
});

describe('fence table names', () => {
  it('quoted when they follow the identifier rule, refused otherwise', () => {
    assert.equal(sqliteFenceTable(), '"leasehold_fences"');
    assert.equal(postgresName('table', 'app.fences'), '"app"."fences"');
    // Never left to the caller's search_path: the lease store's default schema.
    assert.equal(postgresName('table', 'leasehold_fences'), '"public"."leasehold_fences"');
    for (const bad of ['', 'a.b.c', 'a b', '1abc', 'x'.repeat(64), 'Fences', 'f"x']) {
      assert.throws(() => postgresName('table', bad), /^InvalidConfigError: invalid fence table .*: must be name or schema\.name/, bad);
    }
    assert.throws(() => postgresName('function', 'f()'), /^InvalidConfigError: invalid fence function "f\(\)"/);
  });
});

describe('StaleTokenError', () => {
  it('names the key when there is one; the demo keeps its message', () => {
    const keyed = new StaleTokenError(4, 6, 'orders/shard/2');
    assert.deepEqual([keyed.code, keyed.key, keyed.presented, keyed.highest], ['LEASEHOLD_ERR_STALE_TOKEN', 'orders/shard/2', 4, 6]);
    assert.match(
      keyed.message,
      /^fencing token 4 for key "orders\/shard\/2" is behind the highest token accepted for it \(6\): a newer writer holds the term; nothing was written$/,
    );
    const demo = new StaleTokenError(4, 6);
    assert.equal(demo.key, undefined);
    assert.equal(demo.message, 'fencing token 4 is behind the highest token this resource has accepted (6)');
  });
});
