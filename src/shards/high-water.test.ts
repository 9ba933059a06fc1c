/**
 * The group-wide high-water token (token-blocks.ts; docs/design.md, "A group-wide high-water
 * token"): a member raises the header's highWater before it issues tokens, so a token only a
 * deleted record held is never issued again, whoever saw that record.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { ShardMember } from './shard-member.js';
import { TokenBlock, raiseBase, raisedHeader, repairedHeader } from './token-blocks.js';
import type { GroupHeader, GroupRecord, GroupStore, ShardRecord, VersionedGroupRecord } from '../backends/group-store.js';
import type { CallOptions } from '../backends/lease-store.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const G = 'workers';
const header = (over: Partial<GroupHeader> = {}): GroupHeader => ({ kind: 'group', index: 0, shards: 4, createdAt: new Date(0), ...over });

describe('token blocks', () => {
  it('a block issues each token from its base + 1 to its last once, then none', () => {
    const b = new TokenBlock(7, 10);
    assert.deepEqual([b.take(), b.take(), b.take(), b.take()], [8, 9, 10, null]);
  });

  it('a raise starts at the header’s highWater, or past the highest token seen when the header is lower or has none', () => {
    assert.equal(raiseBase(header({ highWater: 20 }), 5), 20);
    assert.equal(raiseBase(header({ highWater: 3 }), 9), 9);
    assert.equal(raiseBase(header(), 9), 9, 'a header from before highWater: the highest token seen');
    assert.deepEqual(raisedHeader(header({ highWater: 3 }), 9, 4), header({ highWater: 13 }));
  });

  it('a header is repaired only when its highWater is missing or below the highest seen', () => {
    assert.equal(repairedHeader(header({ highWater: 9 }), 9), null);
    assert.equal(repairedHeader(header({ highWater: 12 }), 9), null);
    assert.deepEqual(repairedHeader(header({ highWater: 2 }), 9), header({ highWater: 9 }));
    assert.deepEqual(repairedHeader(header(), 0), header({ highWater: 0 }));
  });
});

describe('a shard group’s high-water token', () => {
  const world = () => {
    const clock = new FakeClock();
    const store = new MemoryGroupStore();
    const lines: string[] = [];
    const logFor = (who: string) => {
      const line = (level: string) => (msg: string, f?: Record<string, unknown>) => lines.push(`${who} ${level} ${msg} ${JSON.stringify(f ?? {})}`);
      return { debug() {}, info: line('info'), warn: line('warn'), error: line('error') };
    };
    const gained: { who: string; shard: number; token: number }[] = [];
    const member = (identity: string, over: { store?: GroupStore } = {}) =>
      new ShardMember({
        ...T,
        store: over.store ?? store,
        group: G,
        shards: 4,
        identity,
        clock,
        log: logFor(identity),
        listener: { onShardGained: (t) => gained.push({ who: identity, shard: t.shard, token: t.token }) },
      });
    const until = async (cond: () => boolean, ms: number) => {
      for (let t = 0; t < ms && !cond(); t += 100) await clock.advance(100);
      return cond();
    };
    const highWater = () => (store.peek(G).find((v) => v.record.kind === 'group')?.record as GroupHeader | undefined)?.highWater;
    const shardRecords = () => store.peek(G).filter((v): v is VersionedGroupRecord<ShardRecord> => v.record.kind === 'shard');
    return { clock, store, lines, gained, member, until, highWater, shardRecords };
  };

  it('a free record deleted by hand (nobody holds it to write it back): a member that never saw its token creates the shard past it', async () => {
    const w = world();
    const a = w.member('a');
    await a.start();
    assert.ok(await w.until(() => a.snapshot().owned.length === 4, 60_000));
    const issued = new Map(a.snapshot().owned.map((o) => [o.shard, o.token]));
    await Promise.all([a.stop(), w.clock.advance(T.retryPeriodMs)]);
    assert.ok(
      w.shardRecords().every((v) => v.record.owner === null),
      'a released every shard',
    );
    for (const v of w.shardRecords()) w.store.delete(G, v.record);
    // b never saw a's tokens: only the header's highWater carries them.
    const b = w.member('b');
    await b.start();
    assert.ok(await w.until(() => b.snapshot().owned.length === 4, 60_000), w.lines.join('\n'));
    for (const o of b.snapshot().owned)
      assert.ok(o.token > issued.get(o.shard)!, `shard ${o.shard}: token ${o.token} issued again (a had ${issued.get(o.shard)})`);
    assert.equal(w.highWater(), Math.max(...b.snapshot().owned.map((o) => o.token)));
    await Promise.all([b.stop(), w.clock.advance(T.retryPeriodMs)]);
  });

  it('the header and every record deleted under a running member: it writes the header back with the highest token it saw, and the tokens after go past it', async () => {
    const w = world();
    const a = w.member('a');
    await a.start();
    assert.ok(await w.until(() => a.snapshot().owned.length === 4, 60_000));
    const highest = Math.max(...a.snapshot().owned.map((o) => o.token));
    const before = w.gained.length;
    for (const v of w.store.peek(G)) if (v.record.kind !== 'member') w.store.delete(G, v.record);
    assert.ok(await w.until(() => w.highWater() !== undefined, 10_000), w.lines.join('\n'));
    assert.ok(w.highWater()! >= highest, `written back with highWater ${w.highWater()}, below ${highest}`);
    assert.ok(w.lines.some((l) => /^a warn the shard group header was deleted: wrote it back/.test(l) && l.includes(`"highWater":${highest}`)));
    // a's held records are written back, drained, freed and taken again: past every earlier token.
    assert.ok(await w.until(() => w.gained.length >= before + 4, 60_000), w.lines.join('\n'));
    for (const g of w.gained.slice(before)) assert.ok(g.token > highest, `shard ${g.shard} taken again with token ${g.token}, not past ${highest}`);
    await Promise.all([a.stop(), w.clock.advance(T.retryPeriodMs)]);
  });

  it('a header from before highWater (an upgrade): the member starts from the highest token it sees, writes highWater, and says so', async () => {
    const w = world();
    w.store.put(G, header());
    for (let s = 0; s < 4; s++) w.store.put(G, { kind: 'shard', index: s, holderIdentity: '', owner: null, token: 5 + s, acquireTime: null });
    const a = w.member('a');
    await a.start();
    assert.ok(await w.until(() => a.snapshot().owned.length === 4, 60_000));
    assert.ok(
      a.snapshot().owned.every((o) => o.token > 8),
      JSON.stringify(a.snapshot().owned),
    );
    assert.ok(
      w.lines.some((l) => /^a info the group header had no highWater \(written before it existed\): set it to the highest token seen/.test(l)),
      w.lines.join('\n'),
    );
    assert.equal(w.highWater(), Math.max(...a.snapshot().owned.map((o) => o.token)));
    await Promise.all([a.stop(), w.clock.advance(T.retryPeriodMs)]);
  });

  it('a header written back lower than a token seen: the running member raises it again', async () => {
    const w = world();
    const a = w.member('a');
    await a.start();
    assert.ok(await w.until(() => a.snapshot().owned.length === 4, 60_000));
    const hw = w.highWater()!;
    w.store.put(G, header({ highWater: 1 }));
    assert.ok(await w.until(() => w.highWater()! >= hw, 10_000), `highWater stayed ${w.highWater()}`);
    assert.ok(w.lines.some((l) => /^a warn the group header held a highWater below a token this member saw: raised it/.test(l)));
    await Promise.all([a.stop(), w.clock.advance(T.retryPeriodMs)]);
  });

  it('a raise that loses its race to another member’s retries from the new value: the two blocks never share a token', async () => {
    const w = world();
    let raced = false;
    // Another member raises the header by 5 right before a's first raise lands.
    const racing: GroupStore = {
      backend: 'memory',
      location: 'memory',
      listGroup: (g: string, o?: CallOptions) => w.store.listGroup(g, o),
      createGroupRecord: (g: string, r: GroupRecord, o?: CallOptions) => w.store.createGroupRecord(g, r, o),
      updateGroupRecord: (g: string, r: GroupRecord, v: string, o?: CallOptions) => {
        if (r.kind === 'group' && !raced) {
          raced = true;
          const now = w.store.peek(G).find((x) => x.record.kind === 'group')!.record as GroupHeader;
          w.store.put(G, { ...now, highWater: (now.highWater ?? 0) + 5 });
        }
        return w.store.updateGroupRecord(g, r, v, o);
      },
    };
    const a = w.member('a', { store: racing });
    await a.start();
    assert.ok(await w.until(() => a.snapshot().owned.length === 4, 60_000), w.lines.join('\n'));
    assert.ok(raced);
    assert.deepEqual(
      a
        .snapshot()
        .owned.map((o) => o.token)
        .sort((x, y) => x - y),
      [6, 7, 8, 9],
      'a’s block starts past the other member’s (tokens 1 to 5)',
    );
    assert.equal(w.highWater(), 9);
    await Promise.all([a.stop(), w.clock.advance(T.retryPeriodMs)]);
  });
});
