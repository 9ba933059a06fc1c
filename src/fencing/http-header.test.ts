import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { encodeFenceKey, fenceHeaders, parseFenceHeaders } from './http-header.js';

/** Headers as Node's server hands them over: names lower-cased. */
const lower = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));

describe('the fencing headers', () => {
  it('round-trips keys: plain ASCII as it is, anything else percent-encoded UTF-8', () => {
    for (const key of ['orders/shard-7', 'a b,c', '100%', 'café/ünï', 'x\u{1F600}', "k:@!$&'()*+;=~"]) {
      const h = fenceHeaders({ key, token: 12 });
      assert.match(h['Leasehold-Fence-Key']!, /^[\x21-\x7e]+$/, `sent as visible ASCII: ${key}`);
      assert.deepEqual(parseFenceHeaders(lower(h)), { ok: true, claim: { key, token: 12 } });
    }
    assert.equal(encodeFenceKey('orders/shard-7'), 'orders/shard-7');
    assert.equal(encodeFenceKey('a b'), 'a%20b');
    assert.equal(encodeFenceKey('100%'), '100%25');
  });

  const bad: [string, Record<string, string | string[]>, RegExp][] = [
    ['no headers', {}, /^missing Leasehold-Fence-Key header$/],
    ['no token', { 'leasehold-fence-key': 'k' }, /^missing Leasehold-Fencing-Token header$/],
    ['an empty key', { 'leasehold-fence-key': '', 'leasehold-fencing-token': '1' }, /^missing Leasehold-Fence-Key header$/],
    ['a key sent twice', { 'leasehold-fence-key': 'a, b', 'leasehold-fencing-token': '1' }, /must be sent once/],
    ['a token sent twice', { 'leasehold-fence-key': 'k', 'leasehold-fencing-token': ['1', '2'] }, /Leasehold-Fencing-Token must be sent once/],
    ['raw non-ASCII in the key', { 'leasehold-fence-key': 'caf\u00e9', 'leasehold-fencing-token': '1' }, /percent-encoded visible ASCII/],
    ['a broken escape', { 'leasehold-fence-key': 'a%zz', 'leasehold-fencing-token': '1' }, /not valid percent-encoded UTF-8/],
    ['an escape that is not UTF-8', { 'leasehold-fence-key': 'a%ff', 'leasehold-fencing-token': '1' }, /not valid percent-encoded UTF-8/],
    ['token 0', { 'leasehold-fence-key': 'k', 'leasehold-fencing-token': '0' }, /positive safe integer in decimal, got "0"/],
    ['a negative token', { 'leasehold-fence-key': 'k', 'leasehold-fencing-token': '-3' }, /positive safe integer/],
    ['a leading zero', { 'leasehold-fence-key': 'k', 'leasehold-fencing-token': '07' }, /positive safe integer/],
    ['a fraction', { 'leasehold-fence-key': 'k', 'leasehold-fencing-token': '1.5' }, /positive safe integer/],
    ['above 2^53 - 1', { 'leasehold-fence-key': 'k', 'leasehold-fencing-token': '9007199254740993' }, /positive safe integer/],
    ['hex', { 'leasehold-fence-key': 'k', 'leasehold-fencing-token': '0x10' }, /positive safe integer/],
  ];
  for (const [name, headers, reason] of bad) {
    it(`refuses ${name}, naming the header and the rule`, () => {
      const r = parseFenceHeaders(headers);
      assert.equal(r.ok, false);
      assert.match((r as { reason: string }).reason, reason);
    });
  }

  it('accepts the largest safe integer', () => {
    const r = parseFenceHeaders({ 'leasehold-fence-key': 'k', 'leasehold-fencing-token': String(Number.MAX_SAFE_INTEGER) });
    assert.deepEqual(r, { ok: true, claim: { key: 'k', token: Number.MAX_SAFE_INTEGER } });
  });
});
