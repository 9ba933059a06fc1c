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
import type { GroupRecord, GroupStore, VersionedGroupRecord } from '../backends/group-store.js';
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
    await a.start();
    for (let t = 0; t < 30_000 && a.snapshot().owned.length < 4; t += 100) await clock.advance(100);
    assert.equal(a.snapshot().owned.length, 4);
    mem.delete(G, { kind: 'shard', index: 2 });
    for (let t = 0; t < 5_000 && a.snapshot().owned.length > 3; t += 100) await clock.advance(100);
    assert.equal(a.snapshot().owned.length, 3, 'the deleted shard is given up');
    // Most of a lease duration later, the store is replaced: another member may have created
    // shard 2 in the old file since a's last list, and be working on it.
    await clock.advance(T.leaseDurationMs - 3_000);
    store.replaced = true;
    for (let t = 0; t < 5_000 && store.replaced; t += 100) await clock.advance(100);
    const reopenedAt = clock.monotonic();
    for (let t = 0; t < 40_000 && !gained.some((g) => g.shard === 2 && g.at > reopenedAt - 5_000); t += 100) await clock.advance(100);
    const retaken = gained.filter((g) => g.shard === 2).at(-1)!;
    assert.ok(
      retaken.at - reopenedAt >= T.leaseDurationMs - 200,
      `shard 2 created ${retaken.at - reopenedAt} ms after the store was found replaced, not a lease duration`,
    );
    await a.stop();
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
    await c.stop();
    await a.stop();
    await b.stop();
  });

  it('an owned shard’s record or a member slot deleted: a warning that says it was deleted', async () => {
    const w = world();
    const a = w.member('a');
    await a.start();
    assert.ok(await w.until(() => a.snapshot().owned.length === 4, 60_000));
    assert.ok(w.store.delete(G, { kind: 'shard', index: 1 }));
    assert.ok(await w.until(() => a.snapshot().owned.length === 3, 5_000));
    assert.ok(
      w.lines.some((l) => /^a warn the record of an owned shard was deleted from the store/.test(l) && /"shard":1/.test(l)),
      w.lines.join('\n'),
    );
    const slot = a.snapshot().session!.slot;
    assert.ok(w.store.delete(G, { kind: 'member', index: slot }));
    assert.ok(await w.until(() => w.lines.some((l) => /^a warn lost the shard group session/.test(l)), 10_000));
    const lost = w.lines.find((l) => /^a warn lost the shard group session/.test(l))!;
    assert.match(lost, new RegExp(`the member slot ${slot} was deleted from the store`));
    assert.doesNotMatch(lost, /taken by another member/);
    await a.stop();
  });
});
