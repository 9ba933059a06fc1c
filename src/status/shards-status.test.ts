/**
 * shards.json's content (toShardsStatus) and how an app reads it (readOwnedShards): each owned
 * shard with its KEP-5866 range and selector, one selector for them all, and none once the file
 * no longer counts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readOwnedShards, SHARDS_FILE, toShardsStatus } from './shards-status.js';
import type { ShardMemberSnapshot } from '../shards/shard-member.js';

const now = new Date('2026-12-02T09:00:10.000Z');
const later = new Date('2026-12-02T09:00:20.000Z');

function snapshot(owned: number[], shards = 16): ShardMemberSnapshot {
  return {
    group: 'workers',
    shards,
    identity: 'a',
    session: { slot: 0, session: 1 },
    state: 'active',
    members: 3,
    orphaned: 0,
    owned: owned.map((shard) => ({ shard, token: shard + 1 })),
    validUntil: later,
    standingAside: null,
    running: true,
    lastTurnMonotonic: 0,
    turns: { planned: 0, quiet: 0 },
  };
}

describe("shards.json's ranges and selectors", () => {
  it('lists each owned shard with its range and selector, and one selector joining consecutive shards', () => {
    const s = toShardsStatus(snapshot([2, 3, 9, 15]), now);
    assert.deepEqual(s.owned[0], {
      shard: 2,
      fencingToken: 3,
      start: '0x2000000000000000',
      end: '0x3000000000000000',
      selector: "shardRange(object.metadata.uid, '0x2000000000000000', '0x3000000000000000')",
    });
    assert.equal(s.owned[3]!.end, '0x10000000000000000', 'the last shard ends at 2^64');
    assert.equal(
      s.ownedSelector,
      "shardRange(object.metadata.uid, '0x2000000000000000', '0x4000000000000000') || " +
        "shardRange(object.metadata.uid, '0x9000000000000000', '0xa000000000000000') || " +
        "shardRange(object.metadata.uid, '0xf000000000000000', '0x10000000000000000')",
    );
    // The fields apps parsed before are there as they were.
    assert.deepEqual(Object.keys(s), [
      'group',
      'shards',
      'members',
      'identity',
      'owned',
      'ownedSelector',
      'validUntil',
      'standingAside',
      'stoppedAt',
      'updatedAt',
    ]);
    assert.equal(toShardsStatus(snapshot([]), now).ownedSelector, null, 'no shard: no selector (an empty one selects everything)');
  });

  it('builds the owned part once per owned list the member gives, and again for another list or shard count', () => {
    // A member gives the same frozen list until a shard changes phase (ShardPhases.ownedByShard);
    // a status is built at every turn, so the entries and the selector must not be built again.
    const snap = snapshot([2, 3, 9, 15]);
    const first = toShardsStatus(snap, now);
    const again = toShardsStatus({ ...snap, members: 4 }, later);
    assert.equal(again.owned, first.owned, 'the same entries, not built again');
    assert.equal(again.ownedSelector, first.ownedSelector);
    assert.ok(Object.isFrozen(first.owned) && Object.isFrozen(first.owned[0]), 'shared between statuses: frozen');
    const other = toShardsStatus(snapshot([2, 3, 9, 15]), now);
    assert.notEqual(other.owned, first.owned, 'another list (a shard moved): built again');
    assert.deepEqual(other.owned, first.owned);
    const wider = toShardsStatus({ ...snap, shards: 32 }, now);
    assert.notEqual(wider.owned, first.owned, 'another shard count: other ranges');
    assert.equal(wider.owned[0]!.start, '0x1000000000000000');
  });

  it('readOwnedShards gives the selector only while the file counts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-shards-status-'));
    try {
      const status = toShardsStatus(snapshot([0, 1], 4), now);
      writeFileSync(join(dir, SHARDS_FILE), JSON.stringify(status));
      const view = readOwnedShards(dir, now);
      assert.equal(view.selector, "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')");
      assert.deepEqual(
        view.owned.map((o) => o.selector),
        status.owned.map((o) => o.selector),
      );
      const expired = readOwnedShards(dir, later);
      assert.deepEqual([expired.owned, expired.selector], [[], null], 'past validUntil: nothing owned, no selector');
      // A file from a sidecar before ranges were written: no selector, the shards as before.
      const { ownedSelector: _, ...old } = status;
      writeFileSync(join(dir, SHARDS_FILE), JSON.stringify({ ...old, owned: old.owned.map((o) => ({ shard: o.shard, fencingToken: o.fencingToken })) }));
      const before = readOwnedShards(dir, now);
      assert.deepEqual([before.owned.length, before.selector], [2, null]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
