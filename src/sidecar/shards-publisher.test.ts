import { describe, it, after, mock } from 'node:test';
import assert from 'node:assert/strict';
import fs, { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardsPublisher, sameButUpdatedAt, withoutUpdatedAt } from './shards-publisher.js';
import { SHARDS_FILE, readOwnedShards, type ShardsStatus } from '../status/shards-status.js';
import { writeFileAtomic } from '../util/atomic-file.js';

const root = mkdtempSync(join(tmpdir(), 'leasehold-shards-publisher-'));
after(() => rmSync(root, { recursive: true, force: true }));

const base: ShardsStatus = {
  group: 'g',
  shards: 2,
  members: 1,
  identity: 'a',
  owned: [{ shard: 0, fencingToken: 3, start: '0x0000000000000000', end: '0x8000000000000000', selector: 's' }],
  ownedSelector: 's',
  validUntil: '2026-12-06T00:00:10.000Z',
  standingAside: { reason: 'app unhealthy', since: '2026-12-06T00:00:00.000Z' },
  stoppedAt: null,
  updatedAt: '2026-12-06T00:00:00.000Z',
};

describe('ShardsPublisher', () => {
  it('syncs shards.json only when it drops a shard it listed; a file a crash left empty or torn reads as nothing owned', () => {
    // Named imports of node:fs follow the module object once syncBuiltinESMExports has run.
    const synced = mock.method(fs, 'fsyncSync');
    syncBuiltinESMExports();
    try {
      const dir = join(root, 'synced-on-loss');
      const p = new ShardsPublisher(dir);
      p.prepare(); // its probe of the directory is a durable write
      const syncsOf = (status: ShardsStatus) => {
        synced.mock.resetCalls();
        assert.equal(p.publish(status), true);
        return synced.mock.callCount();
      };
      const [s0] = base.owned;
      const s1 = { ...s0!, shard: 1, fencingToken: 4 };
      assert.equal(syncsOf(base), 2, 'the first write: what the disk held before is not known');
      assert.equal(syncsOf({ ...base, owned: [s0!, s1] }), 0, 'a shard gained');
      assert.equal(syncsOf({ ...base, owned: [s0!, s1], validUntil: '2026-12-06T00:00:12.000Z' }), 0, 'validUntil moved on');
      assert.equal(syncsOf({ ...base, owned: [s0!, s1], members: 2, validUntil: '2026-12-06T00:00:12.000Z' }), 0, 'a count');
      assert.equal(syncsOf({ ...base, owned: [s1], validUntil: '2026-12-06T00:00:12.000Z' }), 2, 'a shard lost: the file, then the rename');
      assert.equal(syncsOf({ ...base, owned: [{ ...s1, fencingToken: 9 }], validUntil: '2026-12-06T00:00:12.000Z' }), 2, 'a token replaced');
      const now = new Date(Date.parse(base.validUntil!) - 1000);
      for (const left of ['', base.updatedAt, JSON.stringify(base).slice(0, 40)]) {
        writeFileAtomic(dir, SHARDS_FILE, left);
        assert.deepEqual(readOwnedShards(dir, now).owned, [], `a file holding ${JSON.stringify(left)}`);
      }
    } finally {
      synced.mock.restore();
      syncBuiltinESMExports();
    }
  });

  it('writes the state serialised once, and skips a state that differs only in updatedAt', () => {
    const dir = join(root, 'once');
    const p = new ShardsPublisher(dir);
    p.prepare();
    assert.equal(p.publish(base), true);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, SHARDS_FILE), 'utf8')), base);
    assert.equal(p.publish({ ...base, updatedAt: '2026-12-06T00:00:01.000Z' }), false, 'only updatedAt changed');
    // Each other field, the nested times included, is part of the comparison.
    assert.equal(p.publish({ ...base, standingAside: { ...base.standingAside!, since: base.updatedAt.replace('00.000', '01.000') } }), true);
    assert.equal(p.publish({ ...base, validUntil: '2026-12-06T00:00:12.000Z' }), true);
    assert.equal((JSON.parse(readFileSync(join(dir, SHARDS_FILE), 'utf8')) as ShardsStatus).validUntil, '2026-12-06T00:00:12.000Z');
  });

  it('compares a state with the one on disk field by field: one token, one shard, one count differing is written', () => {
    const dir = join(root, 'fields');
    const p = new ShardsPublisher(dir);
    p.prepare();
    assert.equal(p.publish(base), true);
    const owned = (o: Partial<ShardsStatus['owned'][number]>) => ({ ...base, owned: [{ ...base.owned[0]!, ...o }] });
    assert.equal(p.publish({ ...structuredClone(base), updatedAt: '2026-12-06T00:00:05.000Z' }), false, 'equal by value, not by identity');
    assert.equal(p.publish(owned({ fencingToken: 4 })), true, 'a new token');
    assert.equal((JSON.parse(readFileSync(join(dir, SHARDS_FILE), 'utf8')) as ShardsStatus).owned[0]!.fencingToken, 4);
    assert.equal(p.publish(owned({ fencingToken: 4, shard: 1 })), true, 'another shard');
    assert.equal(p.publish({ ...owned({ fencingToken: 4, shard: 1 }), members: 2 }), true, 'another member count');
    assert.equal(p.publish({ ...base, owned: [] }), true, 'none owned');
    assert.equal(p.publish({ ...base, owned: [], stoppedAt: base.updatedAt }), true, 'stopped');
    assert.deepEqual(JSON.parse(readFileSync(join(dir, SHARDS_FILE), 'utf8')), { ...base, owned: [], stoppedAt: base.updatedAt });
    // As many fields, not the same ones: not the same state.
    const a = { ...base, extra: undefined } as unknown as ShardsStatus;
    const b = { ...base, other: 1 } as unknown as ShardsStatus;
    assert.equal(sameButUpdatedAt(a, b), false);
    assert.equal(sameButUpdatedAt(base, structuredClone(base)), true);
  });

  it('withoutUpdatedAt removes the top-level line only, whatever else holds the same time', () => {
    // A nested field with the same time and name must stay: only the top level has two spaces of indent.
    const text = JSON.stringify({ a: { updatedAt: base.updatedAt }, updatedAt: base.updatedAt }, null, 2) + '\n';
    assert.equal(withoutUpdatedAt(text, base.updatedAt), `{\n  "a": {\n    "updatedAt": "${base.updatedAt}"\n  },\n}\n`);
    assert.throws(() => withoutUpdatedAt('{}\n', base.updatedAt), /no top-level updatedAt/);
  });
});
