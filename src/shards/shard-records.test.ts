/**
 * A shard group whose records are touched from outside (docs/design.md, "A store that was
 * replaced starts the absence rule again"): a store replaced under the members, records deleted.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { StoreReopenedError } from '../errors.js';
import { ShardMember } from './shard-member.js';
import type { GroupRecord, GroupStore, ShardRecord, VersionedGroupRecord } from '../backends/group-store.js';
import type { CallOptions } from '../backends/lease-store.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const G = 'workers';

/** A member's store that finds itself replaced, as the SQLite store does: the call that finds it fails with StoreReopenedError. */
class ReplaceableStore implements GroupStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  replaced = false;
  constructor(private readonly inner: MemoryGroupStore) {}
  private send<R>(fn: () => Promise<R>): Promise<R> {
    if (!this.replaced) return fn();
    this.replaced = false;
    return Promise.reject(new StoreReopenedError('the database file was replaced or deleted: reopened it'));
  }
  listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    return this.send(() => this.inner.listGroup(group, opts));
  }
  createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    return this.send(() => this.inner.createGroupRecord(group, record, opts));
  }
  updateGroupRecord(group: string, record: GroupRecord, version: string, opts?: CallOptions): Promise<string> {
    return this.send(() => this.inner.updateGroupRecord(group, record, version, opts));
  }
}

describe('a shard group whose store is replaced', () => {
  it('a member waiting out a shard’s absence starts the wait over when the store is found replaced: the record may have lived and gone with the old one', async () => {
    const clock = new FakeClock();
    const mem = new MemoryGroupStore();
    const store = new ReplaceableStore(mem);
    const gained: { shard: number; at: number }[] = [];
    const a = new ShardMember({
      ...T,
      store,
      group: G,
      shards: 4,
      identity: 'a',
      clock,
      listener: { onShardGained: (t) => gained.push({ shard: t.shard, at: clock.monotonic() }) },
    });
    // A new group: every shard absent, waited out for a lease duration before it is created.
    await a.start();
    // Most of a lease duration later, the store is replaced: another member may have created a
    // shard in the old file since a's last list, and be working on it.
    await clock.advance(T.leaseDurationMs - 3_000);
    assert.equal(gained.length, 0, 'nothing created before the absence wait ends');
    store.replaced = true;
    for (let t = 0; t < 5_000 && store.replaced; t += 100) await clock.advance(100);
    const reopenedAt = clock.monotonic();
    for (let t = 0; t < 40_000 && gained.length === 0; t += 100) await clock.advance(100);
    assert.ok(gained.length > 0, 'the shards are created in the end');
    const first = Math.min(...gained.map((g) => g.at));
    assert.ok(
      first - reopenedAt >= T.leaseDurationMs - 200,
      `a shard created ${first - reopenedAt} ms after the store was found replaced, not a lease duration`,
    );
    await a.stop();
  });
});

describe('a shard record that vanishes under the member that holds it', () => {
  it('the store replaced: a member that never saw the shards’ tokens takes them only past them, and only once their work stopped', async () => {
    const clock = new FakeClock();
    const mem = new MemoryGroupStore();
    const store = new ReplaceableStore(mem);
    const DRAIN_MS = 3_000;
    const working = new Map<number, number>();
    const drainedAt = new Map<number, number>();
    const a = new ShardMember({
      ...T,
      store,
      group: G,
      shards: 4,
      identity: 'a',
      clock,
      listener: { onShardGained: (t) => working.set(t.shard, t.token) },
      // The app takes DRAIN_MS to stop a shard's work.
      drain: (s) =>
        new Promise<void>((resolve) =>
          clock.setTimer(() => {
            working.delete(s);
            drainedAt.set(s, clock.monotonic());
            resolve();
          }, DRAIN_MS),
        ),
    });
    await a.start();
    for (let t = 0; t < 30_000 && a.snapshot().owned.length < 4; t += 100) await clock.advance(100);
    const held = new Map(a.snapshot().owned.map((o) => [o.shard, o.token]));
    assert.equal(held.size, 4);
    // The store replaced by an empty one; b starts on it: it never saw a's tokens.
    for (const v of mem.peek(G)) mem.delete(G, v.record);
    store.replaced = true;
    const gainedByB: { shard: number; token: number; at: number }[] = [];
    const b = new ShardMember({
      ...T,
      store: mem,
      group: G,
      shards: 4,
      identity: 'b',
      clock,
      listener: { onShardGained: (t) => gainedByB.push({ ...t, at: clock.monotonic() }) },
    });
    await b.start();
    for (let t = 0; t < 60_000 && gainedByB.length < 2; t += 100) await clock.advance(100);
    assert.ok(gainedByB.length >= 2, 'b takes its half of the shards');
    for (const g of gainedByB) {
      assert.ok(g.token > held.get(g.shard)!, `b took shard ${g.shard} with token ${g.token}, not past a's ${held.get(g.shard)}`);
      assert.ok(g.at >= drainedAt.get(g.shard)!, `b took shard ${g.shard} before a's work on it stopped`);
    }
    await Promise.all([a.stop(), b.stop(), clock.advance(T.leaseDurationMs)]);
  });

  it('a record deleted by hand: its owner writes it back at once with its token, naming its session, and frees it once the work stopped', async () => {
    const clock = new FakeClock();
    const mem = new MemoryGroupStore();
    let release: (() => void) | null = null;
    const a = new ShardMember({
      ...T,
      store: mem,
      group: G,
      shards: 2,
      identity: 'a',
      clock,
      drain: () => new Promise<void>((resolve) => (release = resolve)),
    });
    await a.start();
    for (let t = 0; t < 30_000 && a.snapshot().owned.length < 2; t += 100) await clock.advance(100);
    const { token } = a.snapshot().owned.find((o) => o.shard === 0)!;
    const session = a.snapshot().session!;
    const record = () => mem.peek(G).find((v) => v.record.kind === 'shard' && v.record.index === 0)?.record as ShardRecord | undefined;
    assert.ok(mem.delete(G, { kind: 'shard', index: 0 }));
    for (let t = 0; t < 5_000 && !record(); t += 100) await clock.advance(100);
    assert.deepEqual(record() ? { owner: record()!.owner, token: record()!.token } : null, { owner: session, token }, 'written back as it was, not free');
    assert.ok(!a.snapshot().owned.some((o) => o.shard === 0), 'not owned any more');
    await clock.advance(5_000);
    assert.equal(record()?.token, token, 'kept while the work drains');
    release!();
    for (let t = 0; t < 5_000 && !a.snapshot().owned.some((o) => o.shard === 0); t += 100) await clock.advance(100);
    const again = a.snapshot().owned.find((o) => o.shard === 0)?.token ?? 0;
    assert.ok(again > token, `freed after the drain and taken again past its token (${again} after ${token})`);
    await Promise.all([a.stop(), clock.advance(T.leaseDurationMs)]);
  });
});

describe('a shard group whose records are deleted by hand', () => {
  const world = () => {
    const clock = new FakeClock();
    const store = new MemoryGroupStore();
    const lines: string[] = [];
    const logFor = (who: string) => {
      const line = (level: string) => (msg: string, f?: Record<string, unknown>) => lines.push(`${who} ${level} ${msg} ${JSON.stringify(f ?? {})}`);
      return { debug() {}, info: line('info'), warn: line('warn'), error: line('error') };
    };
    const member = (identity: string, shards = 4) => new ShardMember({ ...T, store, group: G, shards, identity, clock, log: logFor(identity) });
    const until = async (cond: () => boolean, ms: number) => {
      for (let t = 0; t < ms && !cond(); t += 100) await clock.advance(100);
      return cond();
    };
    return { clock, store, lines, member, until };
  };

  it('the header deleted, then a newcomer with another count: the running members write the header back, and the newcomer is refused, not the group', async () => {
    const w = world();
    const a = w.member('a');
    const b = w.member('b');
    await a.start();
    await b.start();
    assert.ok(await w.until(() => a.snapshot().owned.length === 2 && b.snapshot().owned.length === 2, 60_000));
    assert.ok(w.store.delete(G, { kind: 'group', index: 0 }));
    const c = w.member('c', 2);
    await c.start();
    let refusal: Error | null = null;
    void c.refused.then((e) => (refusal = e));
    assert.ok(await w.until(() => refusal !== null, 10_000), `the newcomer with another count is refused: ${w.lines.join('\n')}`);
    assert.match(String(refusal), /has 4 shards, not 2/);
    const header = w.store.peek(G).find((v) => v.record.kind === 'group')?.record;
    assert.deepEqual(header && header.kind === 'group' ? header.shards : null, 4, 'the header is back with the running members’ count');
    assert.ok(
      w.lines.some((l) => /^(a|b) warn the shard group header was deleted: wrote it back/.test(l)),
      'a running member says it wrote the header back',
    );
    assert.ok(
      w.lines.some((l) => /^c warn the shard group has live members but no header/.test(l)),
      'the newcomer says why it waits',
    );
    await w.clock.advance(5_000);
    assert.equal(a.snapshot().owned.length + b.snapshot().owned.length, 4, 'the group still owns every shard');
    assert.ok(a.snapshot().running && b.snapshot().running);
    // A stop goes on by the clock (a change hinted by another's release waits for the list's pace).
    await Promise.all([c.stop(), a.stop(), b.stop(), w.clock.advance(T.retryPeriodMs)]);
  });

  it('an owned shard’s record or a member slot deleted: a warning that says it was deleted', async () => {
    const w = world();
    const a = w.member('a');
    await a.start();
    assert.ok(await w.until(() => a.snapshot().owned.length === 4, 60_000));
    const token = a.snapshot().owned.find((o) => o.shard === 1)!.token;
    assert.ok(w.store.delete(G, { kind: 'shard', index: 1 }));
    const said = () => w.lines.some((l) => /^a warn the record of an owned shard was deleted from the store/.test(l) && /"shard":1/.test(l));
    assert.ok(await w.until(said, 5_000), w.lines.join('\n'));
    // Its holder writes it back with its token and, its work stopped, frees it: taken anew past it.
    assert.ok(await w.until(() => (a.snapshot().owned.find((o) => o.shard === 1)?.token ?? 0) > token, 5_000), w.lines.join('\n'));
    assert.ok(w.lines.some((l) => /^a warn the record of a shard this member held disappeared from the store: wrote it back/.test(l)));
    const slot = a.snapshot().session!.slot;
    assert.ok(w.store.delete(G, { kind: 'member', index: slot }));
    assert.ok(await w.until(() => w.lines.some((l) => /^a warn lost the shard group session/.test(l)), 10_000));
    const lost = w.lines.find((l) => /^a warn lost the shard group session/.test(l))!;
    assert.match(lost, new RegExp(`the member slot ${slot} was deleted from the store`));
    assert.doesNotMatch(lost, /taken by another member/);
    await a.stop();
  });
});
