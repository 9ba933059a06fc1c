/**
 * A shard member's session after a pause (docs/design.md, "A session that has expired stays
 * expired"): a process frozen past its renewDeadline wakes with its turn's timer and its
 * session's deadline timer both overdue. Node runs them one at a time, with the promise
 * callbacks of the first settled before the second, and better-sqlite3 answers a call
 * synchronously: the turn's heartbeat lands before the deadline fires. The in-memory store
 * answers the same way, so these tests see that order.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Clock, Timer } from '../clock.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { ShardMember } from './shard-member.js';
import type { GroupStore } from '../backends/group-store.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const G = 'workers';

/** One process's clock: while frozen its timers wait; on waking they run one at a time, as Node runs overdue timers. */
class FreezableClock implements Clock {
  private frozen = false;
  private overdue: (() => void)[] = [];
  constructor(private readonly base: FakeClock) {}
  now(): Date {
    return this.base.now();
  }
  monotonic(): number {
    return this.base.monotonic();
  }
  setTimer(fn: () => void, ms: number): Timer {
    return this.base.setTimer(() => (this.frozen ? this.overdue.push(fn) : fn()), ms);
  }
  freeze(): void {
    this.frozen = true;
  }
  wake(): void {
    this.frozen = false;
    for (const fn of this.overdue.splice(0)) this.base.setTimer(fn, 0);
  }
}

describe('a shard member’s session after a pause', () => {
  it('frozen past its renewDeadline: the overdue turn does not heartbeat the session back; it ends it, gives its shards up, and joins anew', async () => {
    const base = new FakeClock();
    const store = new MemoryGroupStore();
    const aClock = new FreezableClock(base);
    const events: string[] = [];
    const lines: string[] = [];
    const log = {
      debug() {},
      info() {},
      warn: (msg: string) => lines.push(msg),
      error: (msg: string) => lines.push(msg),
    };
    // No watch for a: its hints would wake its loop without its (frozen) clock.
    const aStore: GroupStore = {
      backend: store.backend,
      location: store.location,
      listGroup: (g, o) => store.listGroup(g, o),
      createGroupRecord: (g, r, o) => store.createGroupRecord(g, r, o),
      updateGroupRecord: (g, r, v, o) => store.updateGroupRecord(g, r, v, o),
    };
    const a = new ShardMember({
      ...T,
      store: aStore,
      group: G,
      shards: 4,
      identity: 'a',
      clock: aClock,
      log,
      listener: {
        onShardGained: (t) => events.push(`+${t.shard}@${t.token}`),
        onShardLost: (s, token) => events.push(`-${s}@${token}`),
      },
    });
    const b = new ShardMember({ ...T, store, group: G, shards: 4, identity: 'b', clock: base });
    await a.start();
    await b.start();
    for (let t = 0; t < 60_000 && !(a.snapshot().owned.length === 2 && b.snapshot().owned.length === 2); t += 100) await base.advance(100);
    assert.equal(a.snapshot().owned.length, 2, 'a owns its share before the pause');
    const before = a.snapshot().session!;
    const owned = a.snapshot().owned;

    aClock.freeze();
    // Past a's renewDeadline (10 s), short of the others' lease duration: nobody has taken anything yet.
    await base.advance(12_000);
    assert.deepEqual(b.snapshot().owned.length, 2, 'b took nothing of a’s yet');
    aClock.wake();
    await base.advance(1);

    assert.deepEqual(
      events.filter((e) => e.startsWith('-')),
      owned.map((o) => `-${o.shard}@${o.token}`),
      'every shard of the expired session goes through the gate (announced not owned)',
    );
    assert.ok(
      lines.some((l) => l === 'lost the shard group session'),
      `the session's end is a warning: ${lines.join(' | ')}`,
    );
    for (let t = 0; t < 30_000 && !a.snapshot().session; t += 100) await base.advance(100);
    const after = a.snapshot().session!;
    assert.ok(after, 'a joins anew');
    assert.notDeepEqual(after, before, 'with a new session, never the expired one');
    await a.stop();
    await b.stop();
  });
});
