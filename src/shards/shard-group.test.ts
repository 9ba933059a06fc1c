import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { InvalidConfigError } from '../errors.js';
import { ShardGroup, type ShardOwnership } from './shard-group.js';
import { ownedShardsSelector, shardBounds, shardSelector } from './key-to-shard.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe('the library’s ShardGroup', () => {
  it('hands each shard’s work a token and a signal; a move aborts the signal and waits for the work before the next owner starts', async () => {
    const clock = new FakeClock();
    const store = new MemoryGroupStore();
    const log: string[] = [];
    const running = new Map<number, string>();
    const handed: ShardOwnership[] = [];
    const work = (who: string) => (o: ShardOwnership) => {
      handed.push(o);
      assert.equal(running.get(o.shard), undefined, `${who} started shard ${o.shard} while ${running.get(o.shard)} still worked on it`);
      running.set(o.shard, who);
      log.push(`${who}+${o.shard}@${o.token}`);
      return new Promise<void>((resolve) =>
        o.signal.addEventListener('abort', () => {
          // The work takes a second to stop after its signal.
          clock.setTimer(() => {
            running.delete(o.shard);
            resolve();
          }, 1_000);
        }),
      );
    };
    const a = await ShardGroup.start({ ...T, store, group: 'g', shards: 4, identity: 'a', log: quiet, callbacks: { onShardGained: work('a') } }, { clock });
    for (let t = 0; a.owned.length < 4 && t < 30_000; t += 100) await clock.advance(100);
    assert.equal(a.owned.length, 4);
    const b = await ShardGroup.start({ ...T, store, group: 'g', shards: 4, identity: 'b', log: quiet, callbacks: { onShardGained: work('b') } }, { clock });
    for (let t = 0; b.owned.length < 2 && t < 30_000; t += 100) await clock.advance(100);
    assert.deepEqual([a.owned.length, b.owned.length], [2, 2]);
    for (const g of [a, b]) {
      assert.deepEqual(
        g.owned.map((o) => ({ shard: o.shard, start: o.start, end: o.end, selector: o.selector })),
        g.owned.map((o) => ({ shard: o.shard, ...shardBounds(o.shard, 4) })),
      );
      assert.equal(
        g.ownedSelector(),
        ownedShardsSelector(
          g.owned.map((o) => o.shard),
          4,
        ),
      );
    }
    // The library's snapshot is the caller's own: the member's shared list stays as it was.
    const snap = a.snapshot();
    snap.owned.push({ shard: 99, token: 1 });
    snap.owned[0]!.token = -1;
    assert.deepEqual(
      a.snapshot().owned.map((o) => o.shard),
      a.owned.map((o) => o.shard),
    );
    assert.ok(a.snapshot().owned.every((o) => o.token > 0));
    assert.ok(
      handed.every((o) => o.selector === shardSelector(o.shard, 4) && o.start === shardBounds(o.shard, 4).start),
      'each ownership handed to the work carries its shard’s range and selector',
    );
    assert.ok(
      handed.some((o) => o.end === '0x10000000000000000'),
      'the last shard ends at 2^64',
    );
    // b's tokens come from a block raised past every token a was handed (the group's highWater).
    const tokenOf = (l: string) => Number(l.split('@')[1]);
    const highestOfA = Math.max(...log.filter((l) => l.startsWith('a+')).map(tokenOf));
    assert.ok(log.some((l) => l.startsWith('b+')) && log.filter((l) => l.startsWith('b+')).every((l) => tokenOf(l) > highestOfA), log.join(' '));
    assert.equal(a.shardOf('customer-42'), b.shardOf('customer-42'));
    const stops = Promise.all([a.stop(), b.stop()]);
    for (let t = 0; t < 20_000; t += 100) await clock.advance(100);
    await stops;
    assert.equal(running.size, 0);
  });

  it('refuses options that cannot work, naming the rule, before anything is opened', async () => {
    const store = new MemoryGroupStore();
    const base = { store, group: 'g', shards: 4, identity: 'a', callbacks: { onShardGained: () => {} } };
    for (const [over, rule] of [
      [{ shards: 0 }, /the shard count must be a whole number from 1 to 4096/],
      [{ shards: 5000 }, /from 1 to 4096/],
      [{ maxMembers: 0 }, /maxMembers must be a whole number from 1 to 4096/],
      [{ callbacks: {} }, /callbacks.onShardGained is required/],
      [{ renewDeadlineMs: 20_000 }, /leaseDuration/],
      [{ shard: 3 }, /unknown option "shard"/],
      // LeaderElection's bound: renewDeadlineMs/2 − retryPeriodMs (3 s with the defaults).
      [{ drainTimeoutMs: 3_001 }, /drainTimeoutMs must be at most renewDeadlineMs\/2 − retryPeriodMs \(3000\)/],
      [{ drainTimeoutMs: 2 ** 31 - 1 }, /at most renewDeadlineMs\/2 − retryPeriodMs/],
      [{ ...T, renewDeadlineMs: 4_000, drainTimeoutMs: 1 }, /no drain fits renewDeadlineMs\/2 − retryPeriodMs \(2000 − 2000\)/],
    ] as const) {
      await assert.rejects(ShardGroup.start({ ...base, ...over } as never), (e: unknown) => e instanceof InvalidConfigError && rule.test(e.message));
    }
    assert.deepEqual(store.calls, [], 'nothing was read or written');
  });

  it('owns no shard: no selector, not one that selects everything', async () => {
    const clock = new FakeClock();
    const store = new MemoryGroupStore();
    const a = await ShardGroup.start({ ...T, store, group: 'g', shards: 8, identity: 'a', log: quiet, callbacks: { onShardGained: () => {} } }, { clock });
    assert.deepEqual(a.owned, []);
    assert.equal(a.ownedSelector(), null);
    const stopping = a.stop();
    for (let t = 0; t < 20_000; t += 100) await clock.advance(100);
    await stopping;
  });

  it('a lost shard stops counting at once, on the clock the group was given', async () => {
    // The fake clock starts days before the machine's: a loss stamped with the machine's time
    // would leave validUntil a renew deadline ahead of the group's own now.
    const clock = new FakeClock(new Date('2020-01-01T00:00:00.000Z'));
    const store = new MemoryGroupStore();
    let ownership: ShardOwnership | null = null;
    const a = await ShardGroup.start(
      { ...T, store, group: 'g', shards: 1, identity: 'a', log: quiet, callbacks: { onShardGained: (o) => void (ownership = o) } },
      { clock },
    );
    for (let t = 0; ownership === null && t < 30_000; t += 100) await clock.advance(100);
    const held = ownership as ShardOwnership | null;
    assert.ok(held, 'the shard was gained');
    assert.ok(held.validUntil() > clock.now(), 'valid while owned');
    const stopping = a.stop();
    for (let t = 0; !held.signal.aborted && t < 30_000; t += 100) await clock.advance(100);
    assert.ok(held.signal.aborted, 'the shard was lost');
    assert.ok(held.validUntil() <= clock.now(), `valid until ${held.validUntil().toISOString()}, after the loss at ${clock.now().toISOString()}`);
    for (let t = 0; t < 20_000; t += 100) await clock.advance(100);
    await stopping;
  });
});
