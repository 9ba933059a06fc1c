import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { leaderFenceHeaders, ownershipFenceHeaders, shardFenceHeaders } from './http-client.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-fence-client-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const now = new Date('2026-12-02T10:00:00Z');
const later = '2026-12-02T10:00:05Z';
const earlier = '2026-12-02T09:59:59Z';
const noToken = (re: RegExp) => (e: unknown) => (e as { code?: string }).code === 'LEASEHOLD_ERR_NO_FENCING_TOKEN' && re.test((e as Error).message);

function statusDir(name: string, file: string, content: object | null): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  if (content) writeFileSync(join(d, file), JSON.stringify(content));
  return d;
}

describe('leaderFenceHeaders', () => {
  const base = { lease: 'l', identity: 'me', holder: 'me', isLeader: true, fencingToken: 9, acquiredAt: null, renewedAt: null, updatedAt: now.toISOString() };
  it("sends the leader's token for the key", () => {
    const d = statusDir('leader', 'status.json', { ...base, validUntil: later });
    assert.deepEqual(leaderFenceHeaders(d, 'nightly totals', now), { 'Leasehold-Fence-Key': 'nightly%20totals', 'Leasehold-Fencing-Token': '9' });
  });
  const refusals: [string, object | null, RegExp][] = [
    ['a follower', { ...base, isLeader: false, holder: 'other', fencingToken: null, validUntil: null }, /not leader \(holder: other\)/],
    ['a leader whose validUntil passed', { ...base, validUntil: earlier }, /expired/],
    ['no status file', null, /cannot read status/],
  ];
  for (const [name, content, reason] of refusals) {
    it(`refuses for ${name}`, () => {
      const d = statusDir(name.replace(/\W+/g, '-'), 'status.json', content);
      assert.throws(() => leaderFenceHeaders(d, 'k', now), noToken(reason));
    });
  }
});

describe('shardFenceHeaders', () => {
  const base = { group: 'workers', shards: 32, members: 3, identity: 'm1', standingAside: null, stoppedAt: null, updatedAt: now.toISOString() };
  const owned = [
    { shard: 3, fencingToken: 4 },
    { shard: 17, fencingToken: 2 },
  ];
  it("sends the shard's own token under the shard's fence key", () => {
    const d = statusDir('owner', 'shards.json', { ...base, owned, validUntil: later });
    assert.deepEqual(shardFenceHeaders(d, 'orders', 17, now), { 'Leasehold-Fence-Key': 'orders/shard/17', 'Leasehold-Fencing-Token': '2' });
    assert.deepEqual(shardFenceHeaders(d, 'orders', 3, now)['Leasehold-Fencing-Token'], '4');
  });
  it('refuses a shard this member does not own', () => {
    const d = statusDir('owner', 'shards.json', { ...base, owned, validUntil: later });
    assert.throws(() => shardFenceHeaders(d, 'orders', 5, now), noToken(/"orders\/shard\/5": not the owner of shard 5 \(this member owns 2 other shards\)/));
  });
  it('refuses every shard once validUntil has passed (a frozen sidecar)', () => {
    const d = statusDir('expired', 'shards.json', { ...base, owned, validUntil: earlier });
    assert.throws(() => shardFenceHeaders(d, 'orders', 3, now), noToken(/expired .* the sidecar may be frozen/));
  });
  it('refuses with no shards.json', () => {
    assert.throws(() => shardFenceHeaders(statusDir('none', 'shards.json', null), 'orders', 3, now), noToken(/cannot read shards.json/));
  });
});

describe('ownershipFenceHeaders', () => {
  const ownership = (validUntil: Date, aborted = false): Parameters<typeof ownershipFenceHeaders>[1] => {
    const c = new AbortController();
    if (aborted) c.abort();
    return { shard: 7, token: 12, signal: c.signal, validUntil: () => validUntil };
  };
  it("sends the ownership's token while it holds", () => {
    assert.deepEqual(ownershipFenceHeaders('orders', ownership(new Date(later)), now), {
      'Leasehold-Fence-Key': 'orders/shard/7',
      'Leasehold-Fencing-Token': '12',
    });
  });
  it('refuses once the shard moved away (signal aborted)', () => {
    assert.throws(() => ownershipFenceHeaders('orders', ownership(new Date(later), true), now), noToken(/shard 7 is no longer owned/));
  });
  it('refuses once validUntil has passed', () => {
    assert.throws(() => ownershipFenceHeaders('orders', ownership(new Date(earlier)), now), noToken(/ownership expired at 2026-12-02T09:59:59.000Z/));
  });
});
