/**
 * A ShardGroup's tokens through the fence, per shard (issue 42 item 3): the library's own
 * members on the in-memory group store and the fake clock, writing to a real SQLite file with
 * withSqliteFence under shardFenceKey. When a shard moves, the new owner's first write raises
 * that shard's fence, and the old owner's token is refused there (and its headers withheld),
 * while the shards it kept still take its writes.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { ShardGroup, type ShardOwnership } from '../shards/shard-group.js';
import { StaleTokenError } from '../errors.js';
import { shardFenceKey } from './claim.js';
import { createSqliteFenceTable, withSqliteFence } from './sqlite-fence.js';
import { ownershipFenceHeaders } from './http-client.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-shard-fence-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe("a ShardGroup's tokens through the fence", () => {
  it("refuses the old owner's token on a shard that moved, and only there", async () => {
    const db = new Database(join(dir, 'orders.db'));
    createSqliteFenceTable(db);
    db.exec('CREATE TABLE orders (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT, token INTEGER, writer TEXT)');
    const write = (o: ShardOwnership, writer: string) =>
      withSqliteFence(db, { key: shardFenceKey('orders', o.shard), token: o.token }, (tx) =>
        tx.prepare('INSERT INTO orders (key, token, writer) VALUES (?, ?, ?)').run(shardFenceKey('orders', o.shard), o.token, writer),
      );
    const clock = new FakeClock();
    const store = new MemoryGroupStore();
    const held = { a: new Map<number, ShardOwnership>(), b: new Map<number, ShardOwnership>() };
    // Each member writes once with the token it is handed, as a worker's first write would.
    const gained = (who: 'a' | 'b') => (o: ShardOwnership) => {
      held[who].set(o.shard, o);
      write(o, who);
    };
    const a = await ShardGroup.start({ ...T, store, group: 'g', shards: 4, identity: 'a', log: quiet, callbacks: { onShardGained: gained('a') } }, { clock });
    let b: ShardGroup | undefined;
    try {
      for (let t = 0; held.a.size < 4 && t < 30_000; t += 100) await clock.advance(100);
      assert.equal(held.a.size, 4);
      b = await ShardGroup.start({ ...T, store, group: 'g', shards: 4, identity: 'b', log: quiet, callbacks: { onShardGained: gained('b') } }, { clock });
      for (let t = 0; held.b.size < 2 && t < 60_000; t += 100) await clock.advance(100);
      assert.equal(held.b.size, 2, 'b took two shards from a');
      assert.deepEqual(
        a.owned.map((o) => o.token),
        a.owned.map((o) => held.a.get(o.shard)!.token),
        "the group's owned lists each shard with its ownership's token",
      );

      const now = clock.now();
      for (const [shard, bs] of held.b) {
        const old = held.a.get(shard)!;
        assert.ok(bs.token > old.token, `shard ${shard}: the new owner's token is higher`);
        assert.equal(old.signal.aborted, true, `shard ${shard}: a's signal aborted when it moved`);
        assert.throws(() => ownershipFenceHeaders('orders', old, now), /no longer owned/);
        // a, paused before it saw the move, finishes its write with the old token.
        assert.throws(
          () => write(old, 'a, late'),
          (e: unknown) => e instanceof StaleTokenError && e.key === shardFenceKey('orders', shard) && e.presented === old.token && e.highest === bs.token,
        );
      }
      for (const o of a.owned) {
        write(held.a.get(o.shard)!, 'a, still owner');
        assert.equal(ownershipFenceHeaders('orders', held.a.get(o.shard)!, now)['Leasehold-Fencing-Token'], String(o.token));
      }
      const late = db.prepare("SELECT count(*) AS n FROM orders WHERE writer = 'a, late'").get() as { n: number };
      assert.equal(late.n, 0, 'nothing of the stale writes was committed');
    } finally {
      const stops = Promise.all([a.stop(), b?.stop()]);
      for (let t = 0; t < 20_000; t += 100) await clock.advance(100);
      await stops;
      db.close();
    }
  });
});
