/**
 * Members with different lease durations (docs/design.md, "A shard's hold is everyone's"): a
 * shard is not taken before the longest hold its owner announced, whatever the taker's own lease.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { ShardMember } from './shard-member.js';

const SHORT = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const LONG = { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 2_000 };
const G = 'workers';

describe('a shard group of members with different lease durations', () => {
  it('a leaver on a longer lease whose app never confirms a drain keeps its shards until they could have expired by its lease: the others wait for that, not their own', async () => {
    const clock = new FakeClock();
    const store = new MemoryGroupStore();
    const gainedAt = new Map<number, number>();
    const a = new ShardMember({
      ...SHORT,
      store,
      group: G,
      shards: 4,
      identity: 'a',
      clock,
      listener: { onShardGained: (t) => gainedAt.set(t.shard, clock.monotonic()) },
    });
    const b = new ShardMember({
      ...LONG,
      store,
      group: G,
      shards: 4,
      identity: 'b',
      clock,
      // The app never says the work stopped: past 1 s the shard is kept until it could have expired.
      drain: () => new Promise<boolean>(() => {}),
      drainTimeoutMs: 1_000,
    });
    await a.start();
    await b.start();
    for (let t = 0; t < 90_000 && !(a.snapshot().owned.length === 2 && b.snapshot().owned.length === 2); t += 100) await clock.advance(100);
    const bShards = b.snapshot().owned.map((o) => o.shard);
    assert.equal(bShards.length, 2, 'b owns its share');
    const stopAt = clock.monotonic();
    const stopped = b.stop();
    for (let t = 0; t < 60_000 && !bShards.every((s) => (gainedAt.get(s) ?? 0) > stopAt); t += 100) await clock.advance(100);
    await stopped;
    for (const s of bShards) {
      const at = gainedAt.get(s);
      assert.ok(at !== undefined && at > stopAt, `a takes shard ${s} in the end`);
      // b's hold ends a lease duration (its own, 30 s) after its last heartbeat, at most a retry period before the stop.
      assert.ok(at - stopAt >= LONG.leaseDurationMs - LONG.retryPeriodMs, `a took shard ${s} ${at - stopAt} ms after b stopped, inside b's hold`);
    }
    await a.stop();
  });
});
