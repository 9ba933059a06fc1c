/**
 * Shard group members on the in-memory group store and the fake clock: joining, balance, moves
 * through the end-of-term gate, a leave, a crash, the app's health, and a group with another
 * shard count refused. The seeded simulation (test/support/shard-sim.ts) adds faults.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { ManualHealth } from '../health/manual-health.js';
import { BackendUnavailableError, InvalidConfigError } from '../errors.js';
import { ShardMember, type ShardMemberOptions } from './shard-member.js';
import { MAX_BATCH_ROWS } from './write-batches.js';
import type {
  GroupChanges,
  GroupRecord,
  GroupStore,
  GroupWrite,
  GroupWriteOutcome,
  HighWaterRaise,
  RaisedAndTaken,
  RaisedHighWater,
  ShardRecord,
  VersionedGroupRecord,
} from '../backends/group-store.js';
import type { CallOptions } from '../backends/lease-store.js';
import type { Logger } from '../log.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const G = 'workers';

function world<S extends MemoryGroupStore = MemoryGroupStore>(shards = 12, store: S = new MemoryGroupStore() as S) {
  const clock = new FakeClock();
  const members: { m: ShardMember; events: string[] }[] = [];
  const add = async (identity: string, over: Partial<ShardMemberOptions> = {}) => {
    const events: string[] = [];
    const m = new ShardMember({
      ...T,
      store,
      group: G,
      shards,
      identity,
      clock,
      listener: {
        onShardGained: (t) => events.push(`+${t.shard}@${t.token}`),
        onShardLost: (s, token) => events.push(`-${s}@${token}`),
      },
      ...over,
    });
    await m.start();
    members.push({ m, events });
    return { m, events };
  };
  /** Shard -> the identities that believe they own it now. */
  const owners = () => {
    const by = new Map<number, string[]>();
    for (const { m } of members) for (const o of m.snapshot().owned) by.set(o.shard, [...(by.get(o.shard) ?? []), m.identity]);
    return by;
  };
  const counts = () => members.map(({ m }) => m.snapshot().owned.length);
  const advanceUntil = async (cond: () => boolean, maxMs: number, stepMs = 100) => {
    for (let t = 0; !cond() && t < maxMs; t += stepMs) await clock.advance(stepMs);
    return cond();
  };
  /** Stops every member, moving the clock on by `renewDeadlineMs` for what their stops wait out. */
  const stopAll = async (renewDeadlineMs = T.renewDeadlineMs) => {
    const stopping = Promise.all(members.map(({ m }) => m.stop()));
    await clock.advance(renewDeadlineMs);
    await stopping;
  };
  return { clock, store, add, owners, counts, members, advanceUntil, stopAll };
}

/** One member's network: while `cut`, its calls hang until their bound, as to a dead peer. */
class CutLink implements GroupStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  cut = false;
  constructor(private readonly inner: MemoryGroupStore) {}
  private send<R>(opts: CallOptions | undefined, fn: () => Promise<R>): Promise<R> {
    if (!this.cut) return fn();
    return new Promise<R>((_, reject) => opts?.signal?.addEventListener('abort', () => reject(opts.signal!.reason as Error), { once: true }));
  }
  listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    return this.send(opts, () => this.inner.listGroup(group, opts));
  }
  createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    return this.send(opts, () => this.inner.createGroupRecord(group, record, opts));
  }
  updateGroupRecord(group: string, record: GroupRecord, version: string, opts?: CallOptions): Promise<string> {
    return this.send(opts, () => this.inner.updateGroupRecord(group, record, version, opts));
  }
}

/** A store that raises the header itself, in one step (GroupStore.raiseHighWater: SQLite, PostgreSQL); it counts raises of either kind. */
class RaisingStore extends MemoryGroupStore {
  raises = 0;
  casRaises = 0;
  refuseRaises = false;
  async raiseHighWater(group: string, raise: HighWaterRaise): Promise<RaisedHighWater> {
    this.raises++;
    if (this.refuseRaises) throw new BackendUnavailableError('the raise found the file locked');
    return this.raise(group, raise);
  }
  override async updateGroupRecord(group: string, record: GroupRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    if (record.kind === 'group') this.casRaises++;
    return super.updateGroupRecord(group, record, expectedVersion, opts);
  }
}

/**
 * A store that raises the header and writes the takes in one call (GroupStore.raiseAndTake:
 * SQLite); it counts those calls, and the takes (a shard written with an owner) sent any other way.
 */
class TakingStore extends RaisingStore {
  takeCalls = 0;
  takesElsewhere = 0;
  async raiseAndTake(group: string, raise: Omit<HighWaterRaise, 'count'>, takes: readonly GroupWrite[], opts?: CallOptions): Promise<RaisedAndTaken> {
    this.takeCalls++;
    const { from, header } = this.raise(group, { ...raise, count: takes.length });
    const outcomes = await super.writeGroupRecords(
      group,
      takes.map((w, i) => ({ ...w, record: { ...(w.record as ShardRecord), token: from + 1 + i } })),
      opts,
    );
    return { from, header, outcomes };
  }
  override async writeGroupRecords(group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]> {
    this.takesElsewhere += writes.filter((w) => w.record.kind === 'shard' && w.record.owner !== null).length;
    return super.writeGroupRecords(group, writes, opts);
  }
  override async createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    if (record.kind === 'shard' && record.owner !== null) this.takesElsewhere++;
    return super.createGroupRecord(group, record, opts);
  }
}

const everyShardOnce = (owners: Map<number, string[]>, n: number) => owners.size === n && [...owners.values()].every((o) => o.length === 1);

describe('a shard group member', () => {
  it('a newcomer is greeted: every member heartbeats at its next turn, not at its own pace, so the newcomer counts it at once', async () => {
    const w = world(12);
    await w.add('a');
    await w.add('b');
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().every((c) => c === 6), 60_000));
    const slotOf = (id: string) => w.store.peek(G).find((r) => r.record.kind === 'member' && r.record.holderIdentity === id)!.version;
    // Right after a's own heartbeat: at its own pace the next comes a retry period later.
    const before = slotOf('a');
    assert.ok(await w.advanceUntil(() => slotOf('a') !== before, 5_000, 10));
    const beat = slotOf('a');
    const joinedAt = w.clock.monotonic();
    await w.add('c');
    assert.ok(await w.advanceUntil(() => slotOf('a') !== beat, T.retryPeriodMs, 10), 'a heartbeat for the newcomer');
    const after = w.clock.monotonic() - joinedAt;
    assert.ok(after < T.retryPeriodMs / 4, `a greeted the newcomer ${after} ms after it joined`);
  });

  it('alone: creates the group, waits a lease duration for shards never seen, then owns all of them, tokens 1 to 12 from one raise of highWater', async () => {
    const w = world(12);
    const a = await w.add('a');
    await w.clock.advance(T.leaseDurationMs - 100);
    assert.equal(a.m.snapshot().owned.length, 0, 'no shard before a lease duration of absence');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 12, 5_000));
    assert.deepEqual(
      a.m
        .snapshot()
        .owned.map((o) => o.token)
        .sort((x, y) => x - y),
      Array.from({ length: 12 }, (_, i) => i + 1),
    );
    const header = w.store.peek(G).find((v) => v.record.kind === 'group');
    assert.equal(header?.record.kind === 'group' && header.record.shards, 12);
    assert.equal(header?.record.kind === 'group' && header.record.highWater, 12, 'the header holds the highest token issued');
    await a.m.stop();
  });

  it('gives the same frozen owned list from snapshot to snapshot while no shard moves, and a new one once one does', async () => {
    // shards.json is built from a snapshot at every turn: the list is built again only when a
    // shard changes phase (a member owning 2,000 shards sorted them all at each turn).
    const w = world(4);
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 4, 30_000));
    const list = a.m.snapshot().owned;
    await w.clock.advance(5_000); // heartbeats and lists: no shard moves
    assert.equal(a.m.snapshot().owned, list, 'the same list');
    assert.ok(Object.isFrozen(list) && Object.isFrozen(list[0]), 'shared: frozen');
    const b = await w.add('b');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 2 && b.m.snapshot().owned.length === 2, 30_000));
    const after = a.m.snapshot().owned;
    assert.notEqual(after, list, 'two shards moved: a new list');
    assert.deepEqual(
      after.map((o) => o.shard),
      list.map((o) => o.shard).filter((s) => !b.m.snapshot().owned.some((o) => o.shard === s)),
    );
    await Promise.all([a.m.stop(), b.m.stop(), w.clock.advance(T.leaseDurationMs)]);
  });

  it('on a store that raises the header itself: every token from its raises, none by compare-and-swap; while its raises fail, nothing is taken', async () => {
    const w = world(12, new RaisingStore());
    const [a] = [await w.add('a'), await w.add('b'), await w.add('c')];
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().join() === '4,4,4', 40_000));
    assert.ok(w.store.raises > 0, 'the store raised the header');
    assert.equal(w.store.casRaises, 0, 'no header write by compare-and-swap');
    const tokens = w.members.flatMap(({ m }) => m.snapshot().owned.map((o) => o.token));
    assert.equal(new Set(tokens).size, 12, 'no token issued twice');
    const header = w.store.peek(G).find((v) => v.record.kind === 'group')!.record;
    assert.ok(header.kind === 'group' && header.highWater! >= Math.max(...tokens), 'the header holds every token issued');
    // a leaves while the store refuses raises: its shards stay free, then are taken once it raises again.
    w.store.refuseRaises = true;
    await a.m.stop();
    await w.clock.advance(3 * T.retryPeriodMs);
    assert.deepEqual(w.counts().slice(1), [4, 4], 'no take without a raise');
    w.store.refuseRaises = false;
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().slice(1).join() === '6,6', 3 * T.retryPeriodMs, 10));
    assert.equal(w.store.casRaises, 0);
    await Promise.all(w.members.slice(1).map(({ m }) => m.stop()));
  });

  it('on a store that raises and takes in one call: every take through it, one call per taker after a leave, tokens from its blocks', async () => {
    const w = world(12, new TakingStore());
    const [a] = [await w.add('a'), await w.add('b'), await w.add('c')];
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().join() === '4,4,4', 40_000));
    assert.ok(w.store.takeCalls > 0, 'the store raised and took');
    assert.deepEqual([w.store.takesElsewhere, w.store.raises, w.store.casRaises], [0, 0, 0], 'no take, and no raise, sent any other way');
    const before = w.store.takeCalls;
    await a.m.stop();
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().slice(1).join() === '6,6', 3 * T.retryPeriodMs, 10));
    assert.equal(w.store.takeCalls - before, 2, "a's 4 shards: one call for each of the two takers");
    const tokens = w.members.slice(1).flatMap(({ m }) => m.snapshot().owned.map((o) => o.token));
    assert.equal(new Set(tokens).size, 12, 'no token issued twice');
    const header = w.store.peek(G).find((v) => v.record.kind === 'group')!.record;
    assert.ok(header.kind === 'group' && header.highWater! >= Math.max(...tokens), 'the header holds every token issued');
    assert.deepEqual([w.store.takesElsewhere, w.store.raises, w.store.casRaises], [0, 0, 0]);
    await Promise.all(w.members.slice(1).map(({ m }) => m.stop()));
  });

  it('on a store that raises and takes in one call: a pass of more takes than a batch holds goes in calls of at most MAX_BATCH_ROWS, tokens one block each', async () => {
    const n = 2 * MAX_BATCH_ROWS + 88;
    const w = world(n, new TakingStore());
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === n, 40_000));
    assert.equal(w.store.takeCalls, 3, `${n} shards created in one pass: ${MAX_BATCH_ROWS}, ${MAX_BATCH_ROWS}, 88`);
    const tokens = a.m.snapshot().owned.map((o) => o.token);
    assert.deepEqual(
      [...tokens].sort((x, y) => x - y),
      Array.from({ length: n }, (_, i) => i + 1),
      'tokens 1 to N, each once',
    );
    await a.m.stop();
  });

  it('members joining one by one: balanced each time, only the newcomer’s share moves, never two owners, tokens grow', async () => {
    const w = world(12);
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 12, 20_000));
    let seen = new Map<number, number>(a.m.snapshot().owned.map((o) => [o.shard, o.token]));
    for (const [id, want] of [
      ['b', [6, 6]],
      ['c', [4, 4, 4]],
      ['d', [3, 3, 3, 3]],
    ] as const) {
      await w.add(id);
      const ok = await w.advanceUntil(() => {
        const o = w.owners();
        assert.ok(
          [...o.values()].every((x) => x.length === 1),
          `two owners: ${JSON.stringify([...o])}`,
        );
        return everyShardOnce(o, 12) && w.counts().join() === want.join();
      }, 10_000);
      assert.ok(ok, `after ${id} joined: ${w.counts().join()}`);
      const now = new Map<number, number>(w.members.flatMap(({ m }) => m.snapshot().owned.map((o) => [o.shard, o.token] as [number, number])));
      const moved = [...now].filter(([s, t]) => t !== seen.get(s));
      assert.equal(moved.length, want[want.length - 1], `only ${id}'s share moved`);
      // Every token issued comes from a block raised past every token the group held: past all of them.
      const before = Math.max(...seen.values());
      for (const [s, t] of moved) assert.ok(t > before, `shard ${s}: token ${t} is not past every earlier token (${before})`);
      assert.equal(new Set(now.values()).size, now.size, 'no token issued twice in the group');
      seen = now;
    }
    await Promise.all(w.members.map(({ m }) => m.stop()));
  });

  it('a graceful leave: its shards are owned by the others at once (a release, not an expiry)', async () => {
    const w = world(12);
    const a = await w.add('a');
    await w.add('b');
    await w.add('c');
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().join() === '4,4,4', 40_000));
    const stopped = a.m.stop();
    const ok = await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().slice(1).join() === '6,6', 1_000, 10);
    assert.ok(ok, `within a second: ${w.counts().join()}`);
    await stopped;
    const slot = w.store.peek(G).find((v) => v.record.kind === 'member' && v.record.holderIdentity === '');
    assert.ok(slot, 'its slot was released');
  });

  it('a graceful leave of 300 shards: its releases, and the takes of the one who stays, go in batches of at most 256 rows, no shard written alone', async () => {
    const w = world(600);
    const batches: number[] = [];
    const single: string[] = [];
    const { store } = w;
    const batch = store.writeGroupRecords.bind(store);
    const update = store.updateGroupRecord.bind(store);
    const create = store.createGroupRecord.bind(store);
    store.writeGroupRecords = (g, writes, o) => (batches.push(writes.length), batch(g, writes, o));
    store.updateGroupRecord = (g, r, v, o) => (single.push(`update ${r.kind}`), update(g, r, v, o));
    store.createGroupRecord = (g, r, o) => (single.push(`create ${r.kind}`), create(g, r, o));
    const a = await w.add('a');
    await w.add('b');
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 600) && w.counts().join() === '300,300', 60_000));
    batches.length = 0;
    single.length = 0;
    const stopped = a.m.stop();
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 600) && w.counts()[1] === 600, 1_000, 10), `within a second: ${w.counts().join()}`);
    await stopped;
    assert.deepEqual(
      single.filter((op) => op.endsWith('shard')),
      [],
      'a shard written alone',
    );
    assert.equal(
      batches.reduce((a, b) => a + b, 0),
      600,
      `300 releases and 300 takes, in batches of ${batches.join(', ')}`,
    );
    assert.ok(
      batches.every((n) => n <= MAX_BATCH_ROWS),
      `a batch over ${MAX_BATCH_ROWS} rows: ${batches.join(', ')}`,
    );
    assert.ok(batches.length <= 6, `releases and takes in a few batches, not ${batches.length}`);
  });

  it('a leave of 600 shards: the loop is woken once their gates are over, not by each batch of releases (a turn is O(N))', async () => {
    const w = world(1200);
    // No store hints: the turns counted are the member's own wake-ups.
    Object.assign(w.store, { watchGroup: undefined });
    let turns = 0;
    const a = await w.add('a', { listener: { onChange: () => turns++ } });
    await w.add('b');
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 1200) && w.counts().join() === '600,600', 60_000));
    turns = 0;
    const stopped = a.m.stop();
    await w.clock.advance(0);
    await stopped;
    // The turn that gives the shards up, and the one woken after their gates, which leaves:
    // woken at each gate's end, the leaver ran a turn after each batch of releases (4 here).
    assert.ok(turns <= 2, `${turns} turns of the leaver for one leave`);
    await Promise.all([w.members[1]!.m.stop(), w.clock.advance(T.renewDeadlineMs)]);
  });

  it('a leave of 64 shards: one drain bound for the pass, not one timer per shard; each shard released once its own drain answers, a slow one kept alone', async () => {
    const w = world(128);
    const DRAIN_MS = 7_777; // the bound's timers are the ones set for exactly this long
    let bounds = 0;
    const setTimer = w.clock.setTimer.bind(w.clock);
    w.clock.setTimer = (fn, ms) => {
      if (ms === DRAIN_MS) bounds++;
      return setTimer(fn, ms);
    };
    let slow = -1;
    const a = await w.add('a', { drain: (s) => (s === slow ? new Promise<void>(() => {}) : Promise.resolve()), drainTimeoutMs: DRAIN_MS });
    await w.add('b');
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 128) && w.counts().join() === '64,64', 60_000));
    slow = a.m.snapshot().owned[0]!.shard;
    bounds = 0;
    const stopped = a.m.stop();
    assert.ok(
      await w.advanceUntil(() => w.counts()[1] === 127, 1_000, 10),
      `the 63 shards whose app answered moved within a second, not after the slow one's bound: ${w.counts().join()}`,
    );
    assert.equal(bounds, 1, `one drain bound for the 64 shards the leave gave up, not ${bounds}`);
    assert.ok(!w.owners().has(slow), 'the slow shard is not owned by anyone while its work may run');
    assert.ok(
      await w.advanceUntil(() => everyShardOnce(w.owners(), 128), DRAIN_MS + T.leaseDurationMs + 5_000),
      'the slow shard moves once it could have expired',
    );
    await stopped;
    await Promise.all([w.members[1]!.m.stop(), w.clock.advance(T.renewDeadlineMs)]);
  });

  it('a crash (its heartbeats stop): its shards are owned by the others once its session could have expired, not before', async () => {
    const w = world(12);
    const link = new CutLink(w.store);
    const a = await w.add('a', { store: link });
    await w.add('b');
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().join() === '6,6', 40_000));
    const lastBeat = Math.max(
      ...w.store.peek(G).flatMap((v) => (v.record.kind === 'member' && v.record.holderIdentity === 'a' ? [v.record.renewTime!.getTime()] : [])),
    );
    link.cut = true; // a's process is gone as far as the store can tell
    const b = w.members[1]!.m;
    const tookAll = await w.advanceUntil(() => b.snapshot().owned.length === 12, 30_000, 50);
    assert.ok(tookAll);
    const tookAt = w.clock.now().getTime();
    assert.ok(tookAt - lastBeat >= T.leaseDurationMs, `b took a's shards ${tookAt - lastBeat} ms after a's last heartbeat, not before the lease duration`);
    assert.ok(tookAt - lastBeat <= T.leaseDurationMs + T.retryPeriodMs + 1_000, `and within a lease duration and a retry period (${tookAt - lastBeat} ms)`);
    assert.equal(a.m.snapshot().owned.length, 0, 'a stopped believing at its renew deadline');
    await w.stopAll();
  });

  it('a crash in a group of two: the other owns its shards when it judges the session could have expired, not at its next list', async () => {
    const w = world(8);
    const link = new CutLink(w.store);
    await w.add('a', { store: link });
    // b out of a's phase: its own turns (a list and a heartbeat each retry period) fall 700 ms off a's.
    await w.clock.advance(700);
    const b = (await w.add('b')).m;
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 8) && w.counts().join() === '4,4', 40_000));
    // a's next heartbeat, then its process gone: b lists at once on the store's hint (HINT_LIST_MS).
    const beats = () =>
      w.store
        .peek(G)
        .filter((v) => v.record.kind === 'member' && v.record.holderIdentity === 'a')
        .map((v) => v.version);
    const before = beats().join();
    assert.ok(await w.advanceUntil(() => beats().join() !== before, T.retryPeriodMs + 100, 10));
    const beatAt = w.clock.monotonic();
    assert.ok(await w.advanceUntil(() => b.snapshot().lastTurnMonotonic! >= beatAt + 50, 1_000, 10));
    link.cut = true;
    assert.ok(await w.advanceUntil(() => b.snapshot().owned.length === 8, 30_000, 10));
    const after = w.clock.monotonic() - beatAt;
    // b saw the heartbeat within a hint's list (50 ms) of it; nothing else wakes it near the
    // expiry but its own pace (a list and a heartbeat each retry period): up to 2 s later.
    assert.ok(after >= T.leaseDurationMs, `b took a's shards ${after} ms after a's last heartbeat, before the lease duration`);
    assert.ok(after <= T.leaseDurationMs + 200, `b took a's shards ${after} ms after a's last heartbeat: it waited for its own pace past the expiry`);
    await w.stopAll();
  });

  it("a shard record naming this member's session for another member (a store replaced, numbers started over): it joins anew, and the shard waits a lease", async () => {
    const w = world(8);
    await w.add('a');
    const b = (await w.add('b')).m;
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 8) && w.counts().join() === '4,4', 40_000));
    const mine = b.snapshot().session!;
    const s = w.members[0]!.m.snapshot().owned[0]!.shard;
    // Another member held slot and session number of b's in a store since replaced, and writes
    // its shard back into this one, still working on it (write-backs.ts).
    const ghost: ShardRecord = {
      kind: 'shard',
      index: s,
      holderIdentity: 'ghost',
      owner: { slot: mine.slot, session: mine.session },
      token: 100,
      acquireTime: w.clock.now(),
    };
    w.store.put(G, ghost);
    const putAt = w.clock.monotonic();
    const record = () => w.store.peek(G).find((v) => v.record.kind === 'shard' && v.record.index === s)!.record as ShardRecord;
    // Until the ghost's session could have expired, counted from when the members saw it: nobody takes it or frees it.
    while (w.clock.monotonic() - putAt < T.leaseDurationMs - 500) {
      await w.clock.advance(100);
      assert.deepEqual(record(), ghost, `shard ${s}'s record was written ${w.clock.monotonic() - putAt} ms after the ghost's: its work may still run`);
      assert.ok(!w.owners().has(s) || w.clock.monotonic() - putAt < 200, `shard ${s} owned by ${w.owners().get(s)?.join()} beside the ghost`);
    }
    const now = b.snapshot().session!;
    assert.deepEqual({ slot: now.slot, later: now.session > mine.session }, { slot: mine.slot, later: true }, 'b kept the session another names');
    assert.ok(
      await w.advanceUntil(() => w.owners().get(s)?.length === 1, 5_000, 50),
      `shard ${s} is not owned again once the ghost's session could have expired`,
    );
    assert.ok(record().token > 100);
    await w.stopAll();
  });

  it('a newcomer after a crash long over takes its share at once: the dead slot it finds is no member of its assignment', async () => {
    // The dead member's slot keeps its holder until another takes the slot. A newcomer that
    // counted it as live (it cannot tell its age from one list) would assign it shards for a
    // lease duration, and leave unowned the ones the others released for the newcomer.
    const w = world(12);
    const link = new CutLink(w.store);
    await w.add('a');
    await w.add('b');
    await w.add('c', { store: link });
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().join() === '4,4,4', 40_000));
    link.cut = true;
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().slice(0, 2).join() === '6,6', 30_000, 50));
    const dead = w.store.peek(G).find((v) => v.record.kind === 'member' && v.record.holderIdentity === 'c');
    assert.ok(dead, 'the crashed member still holds its slot');
    const d = await w.add('d');
    const joined = w.clock.monotonic();
    const ok = await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && [w.counts()[0], w.counts()[1], w.counts()[3]].join() === '4,4,4', 20_000, 50);
    assert.ok(ok, `balanced: ${w.counts().join()}`);
    const took = w.clock.monotonic() - joined;
    assert.ok(took <= T.retryPeriodMs, `d had its share ${took} ms after it joined, within a retry period, not after the dead slot's lease duration`);
    assert.equal(d.m.snapshot().owned.length, 4);
    await w.stopAll();
  });

  it('cut off until its session is over for itself, then healed: it releases what drained and takes its slot back, no wait for an expiry', async () => {
    // Issue 43: a member cut off from the store ends its session at its renew deadline and its
    // app drains its shards, but the releases cannot reach the store. For the others that
    // session may act until a lease after its last heartbeat. Healed before then, the member
    // must release what drained and leave the others' assignment at once, or its shards stay
    // unowned until that session could have expired.
    const t = { leaseDurationMs: 15_000, renewDeadlineMs: 6_000, retryPeriodMs: 1_000, requestTimeoutMs: 2_000 };
    const w = world(12);
    const link = new CutLink(w.store);
    await w.add('a', t);
    await w.add('b', t);
    const c = await w.add('c', { ...t, store: link });
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().join() === '4,4,4', 40_000));
    const before = c.m.snapshot().owned.map((o) => o.shard);
    const slot = c.m.snapshot().session!;
    link.cut = true;
    const cutAt = w.clock.monotonic();
    assert.ok(await w.advanceUntil(() => c.m.snapshot().session === null, 10_000, 50), 'c ends its session at its renew deadline');
    // Its releases go unanswered (request timeout 2 s), then it is healed: still well within a
    // lease of its last heartbeat, so a and b would judge its session live for seconds more.
    await w.clock.advance(2_500);
    link.cut = false;
    const healedAt = w.clock.monotonic();
    assert.ok(healedAt - cutAt < t.leaseDurationMs - 4_000);
    const ok = await w.advanceUntil(() => everyShardOnce(w.owners(), 12) && w.counts().join() === '4,4,4', 20_000, 50);
    assert.ok(ok, `settled: ${w.counts().join()}`);
    const took = w.clock.monotonic() - healedAt;
    assert.ok(took <= 2 * t.retryPeriodMs, `every shard owned again ${took} ms after the heal, not after c's old session could have expired`);
    assert.deepEqual(
      c.m.snapshot().owned.map((o) => o.shard),
      before,
      'c owns its shards again',
    );
    assert.deepEqual(
      c.m.snapshot().session,
      { slot: slot.slot, session: slot.session + 1 },
      'in its old slot, with the next session: the ended one is no member of anyone’s assignment',
    );
    await w.stopAll(t.renewDeadlineMs);
  });

  it('its slot rewritten by hand at a version below its cursor: the heartbeat that loses reads the group in full, and the session goes on', async () => {
    const w = world(12);
    // Each write a turn of the event loop, as a real store's: a member that retried a lost
    // heartbeat at once for ever would let the clock run (its session end), not hang the test.
    const update = w.store.updateGroupRecord.bind(w.store);
    w.store.updateGroupRecord = async (...args) => {
      await new Promise((resolve) => setImmediate(resolve));
      return update(...args);
    };
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 12, 20_000));
    const slot = w.store.peek(G).find((v) => v.record.kind === 'member' && v.record.holderIdentity === 'a')!;
    // A writer outside the protocol: the same values at a version of its own, which no read by change brings.
    w.store.forge(G, slot.record, '1');
    await w.clock.advance(T.leaseDurationMs + T.renewDeadlineMs);
    assert.equal(a.m.snapshot().owned.length, 12, 'the session ended: every heartbeat lost on the version the copy kept');
    assert.deepEqual(
      a.events.filter((e) => e.startsWith('-')),
      [],
    );
    const now = w.store.peek(G).find((v) => v.record.kind === 'member' && v.record.holderIdentity === 'a')!;
    assert.ok(now.record.kind === 'member' && w.clock.now().getTime() - now.record.renewTime!.getTime() <= 2 * T.retryPeriodMs, 'its heartbeats land again');
    const stopping = a.m.stop();
    await w.clock.advance(T.renewDeadlineMs);
    await stopping;
  });

  it('counts the shards it sees with no live owner (orphaned) and the live members, at every turn', async () => {
    const w = world(12);
    const health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: 0 }, w.clock);
    health.healthy();
    const link = new CutLink(w.store);
    const a = await w.add('a', { store: link });
    assert.equal(a.m.snapshot().orphaned, 12, 'before its first turn, nothing is known to be owned');
    await w.clock.advance(T.retryPeriodMs);
    assert.equal(a.m.snapshot().orphaned, 12, 'no shard record yet: every shard is orphaned');
    assert.equal(a.m.snapshot().members, 1);
    assert.ok(await w.advanceUntil(() => a.m.snapshot().orphaned === 0, 20_000));
    assert.equal(a.m.snapshot().owned.length, 12);
    const b = await w.add('b', { eligibility: health });
    assert.ok(await w.advanceUntil(() => b.m.snapshot().members === 2 && everyShardOnce(w.owners(), 12) && w.counts().join() === '6,6', 20_000));
    assert.equal(b.m.snapshot().orphaned, 0);
    // a crashes: b takes its shards in the turn that finds its session over, so none is left orphaned.
    link.cut = true;
    assert.ok(await w.advanceUntil(() => b.m.snapshot().owned.length === 12, 30_000, 50));
    assert.equal(b.m.snapshot().orphaned, 0);
    assert.equal(b.m.snapshot().members, 1);
    // b's app fails: b gives every shard up and nobody is left to take them.
    health.unhealthy('down');
    assert.ok(await w.advanceUntil(() => b.m.snapshot().owned.length === 0, 5_000, 10));
    assert.ok(await w.advanceUntil(() => b.m.snapshot().orphaned === 12, 5_000, 10), `orphaned ${b.m.snapshot().orphaned}`);
    assert.equal(b.m.snapshot().members, 0, 'a leaving member takes no shards: not counted');
    await w.stopAll();
  });

  it('a group whose header says another shard count is refused at start, naming the rule', async () => {
    const w = world(12);
    await w.add('a');
    await w.clock.advance(1_000);
    await assert.rejects(
      () => new ShardMember({ ...T, store: w.store, group: G, shards: 16, identity: 'b', clock: w.clock }).start(),
      (err: unknown) =>
        err instanceof InvalidConfigError && /shard group workers has 12 shards, not 16: every member of a group gives the same --shards/.test(err.message),
    );
    await Promise.all(w.members.map(({ m }) => m.stop()));
  });

  it('a group recreated with another shard count under a running member: it leaves, and says its loop is not running', async () => {
    const w = world(4);
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 4, 20_000));
    const header = w.store.peek(G).find((v) => v.record.kind === 'group')!.record;
    assert.equal(header.kind, 'group');
    w.store.put(G, { ...header, shards: 5 });
    assert.ok(await w.advanceUntil(() => a.m.snapshot().session === null, 5_000), 'it left the group');
    assert.equal(a.m.snapshot().owned.length, 0);
    // Its loop is over for good: a liveness probe must say so now, not a lease duration later.
    assert.equal(a.m.snapshot().running, false, 'a loop that ended on its own is not running');
    await a.m.stop();
    assert.equal(a.m.snapshot().running, false);
  });

  it('a move waits for the app to say the shard’s work stopped: the next owner takes it only then', async () => {
    const w = world(2);
    const finish = new Map<number, () => void>();
    const a = await w.add('a', { drain: (s) => new Promise<void>((resolve) => finish.set(s, resolve)) });
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 2, 20_000));
    const b = await w.add('b');
    await w.clock.advance(5_000);
    assert.equal(b.m.snapshot().owned.length, 0, 'not while a’s work of the moving shard runs');
    assert.equal(a.m.snapshot().owned.length, 1, 'a said it no longer owns the moving shard');
    const moving = [...finish.keys()][0]!;
    finish.get(moving)!();
    assert.ok(await w.advanceUntil(() => b.m.snapshot().owned.length === 1, 1_000, 10));
    assert.equal(b.m.snapshot().owned[0]!.shard, moving);
    finish.clear();
    await Promise.all([a.m.stop(), b.m.stop(), w.clock.advance(T.renewDeadlineMs)]);
  });

  it('an app that never says the shard’s work stopped: the shard is kept until it could have expired, then moves', async () => {
    const w = world(2);
    const a = await w.add('a', { drain: () => new Promise<void>(() => {}), drainTimeoutMs: 3_000 });
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 2, 20_000));
    const b = await w.add('b');
    const joined = w.clock.monotonic();
    assert.ok(await w.advanceUntil(() => b.m.snapshot().owned.length === 1, 30_000, 100));
    assert.ok(
      w.clock.monotonic() - joined >= T.leaseDurationMs - T.retryPeriodMs,
      `moved after ${w.clock.monotonic() - joined} ms: kept until it could have expired`,
    );
    const stopping = Promise.all([a.m.stop(), b.m.stop()]);
    await w.clock.advance(T.renewDeadlineMs);
    await stopping;
  });

  it('a member whose app is not eligible gives its shards up the graceful way and takes none until it is', async () => {
    const w = world(6);
    const health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: 0 }, w.clock);
    health.healthy();
    const a = await w.add('a', { eligibility: health });
    await w.add('b');
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 6) && w.counts().join() === '3,3', 40_000));
    health.unhealthy('down');
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 6) && w.counts().join() === '0,6', 1_000, 10), w.counts().join());
    assert.equal(a.m.snapshot().state, 'leaving');
    health.healthy();
    assert.ok(await w.advanceUntil(() => everyShardOnce(w.owners(), 6) && w.counts().join() === '3,3', 5_000, 10), w.counts().join());
    await Promise.all(w.members.map(({ m }) => m.stop()));
  });
  it('an app that stops being eligible is told in the log: one warn when it stands aside, one info when it takes shards again', async () => {
    const w = world(2);
    const lines: string[] = [];
    const line = (level: string) => (msg: string, f?: Record<string, unknown>) => lines.push(`${level} ${msg} ${JSON.stringify(f ?? {})}`);
    const log: Logger = { debug() {}, info: line('info'), warn: line('warn'), error: line('error') };
    const health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: 0 }, w.clock);
    health.healthy();
    const a = await w.add('a', { eligibility: health, log });
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 2, 20_000));
    const aside = () => lines.filter((l) => / standing aside /.test(l));
    assert.deepEqual(aside(), [], 'nothing said while it is eligible');
    health.unhealthy('connection refused');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 0, 1_000, 10));
    health.unhealthy('connection refused');
    await w.clock.advance(1_000);
    assert.equal(aside().length, 1, lines.join('\n'));
    assert.match(aside()[0]!, /^warn standing aside \{"reason":"app unhealthy: connection refused","since":"/);
    health.healthy();
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 2, 5_000, 10));
    assert.deepEqual(
      lines.filter((l) => /^info the app is eligible/.test(l)),
      ['info the app is eligible: taking shards {}'],
    );
    await a.m.stop();
  });
  it('shards never seen: one info line says they are created after a lease duration, and when; a deleted one not written back is told anew', async () => {
    const w = world(12);
    const lines: string[] = [];
    const line = (msg: string, f?: Record<string, unknown>) => lines.push(`${msg} ${JSON.stringify(f ?? {})}`);
    const log: Logger = { debug() {}, info: line, warn: line, error: line };
    const t0 = w.clock.now().getTime();
    const a = await w.add('a', { log });
    await w.clock.advance(1_000);
    const told = () => lines.filter((l) => l.startsWith('shards absent'));
    assert.equal(told().length, 1, lines.join('\n'));
    const f = JSON.parse(told()[0]!.slice(told()[0]!.indexOf('{'))) as { absent: number; waitMs: number; createsAt: string };
    assert.equal(f.absent, 12);
    assert.ok(f.waitMs > T.leaseDurationMs - 1_500 && f.waitMs <= T.leaseDurationMs, `waitMs ${f.waitMs}`);
    const saidAt = Date.parse(f.createsAt) - f.waitMs;
    assert.ok(saidAt >= t0 && saidAt <= t0 + 1_000, 'createsAt is when it was said + waitMs');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 12, 20_000));
    assert.equal(told().length, 1, 'said once for the whole wait');
    // Deleted, and its holder's write-back fails: it is absent again for everyone, a too.
    w.store.failNext('create', new Error('test: the write-back fails'));
    w.store.delete(G, { kind: 'shard', index: 3 });
    assert.ok(await w.advanceUntil(() => told().length === 2, 5_000), lines.join('\n'));
    assert.match(told()[1]!, /"absent":1,/);
    await a.m.stop();
  });
});

/**
 * A member's store whose reads by change come from a copy a watch keeps (changesFromWatch, as on
 * Kubernetes), which holds back the records named in `held`: it shows each as it was when held,
 * or absent when `hidden`, as a watch that lags or stalls would; the member's own writes show
 * at once (the store's read waits for them). listGroup and the writes are the store's own.
 */
class HeldBackCopy implements GroupStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  readonly changesFromWatch = true;
  private readonly held = new Map<string, VersionedGroupRecord | null>();
  lists = 0;
  /** The records this member sent a create for. */
  readonly creates: string[] = [];
  constructor(private readonly inner: MemoryGroupStore) {}
  /** From now on the copy shows `key` as it is now (or absent with `hidden`), whatever is written to it. */
  hold(group: string, key: string, hidden = false): void {
    this.held.set(key, hidden ? null : (this.inner.peek(group).find((v) => `${v.record.kind}/${v.record.index}` === key) ?? null));
  }
  release(key: string): void {
    this.held.delete(key);
  }
  async readGroupChanges(group: string): Promise<GroupChanges> {
    const records = this.inner.peek(group).flatMap((v) => {
      const key = `${v.record.kind}/${v.record.index}`;
      if (!this.held.has(key)) return [v];
      const h = this.held.get(key);
      return h ? [h] : [];
    });
    return { records, cursor: '0', full: true, total: records.length };
  }
  listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    this.lists++;
    return this.inner.listGroup(group, opts);
  }
  createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    this.creates.push(`${record.kind}/${record.index}`);
    return this.inner.createGroupRecord(group, record, opts);
  }
  updateGroupRecord(group: string, record: GroupRecord, version: string, opts?: CallOptions): Promise<string> {
    return this.inner.updateGroupRecord(group, record, version, opts);
  }
}

describe('a shard group member reading from a watch’s copy that may lag (the freshness rule)', () => {
  it("a copy that missed a live owner's heartbeats: the take from its expired-looking session re-reads the store first, and never takes a shard the owner still holds", async () => {
    const w = world(12);
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 12, 20_000));
    const slotOfA = a.m.snapshot().session!.slot;
    const link = new HeldBackCopy(w.store);
    // b's copy never shows a's heartbeats from now on: a looks dead to it after a lease duration.
    link.hold(G, `member/${slotOfA}`);
    const b = await w.add('b', { store: link });
    for (let t = 0; t < 40_000; t += 100) {
      await w.clock.advance(100);
      const two = [...w.owners()].filter(([, o]) => o.length > 1);
      assert.deepEqual(two, [], `two owners at t=${t}: b took a's shards on a copy that missed a's heartbeats`);
    }
    assert.ok(link.lists > 0, 'b never re-read the store before a take from time passing');
    // The store showed a alive each time, so the count restarted; the shards a gives b move the graceful way.
    assert.equal(
      w.counts().reduce((x, y) => x + y, 0),
      12,
    );
    assert.equal(a.m.snapshot().validUntil !== null, true);
    await b.m.stop();
    await a.m.stop();
  });

  it('an absent record the copy does not show yet: no create from the waited-out absence; the count starts over from the store’s read', async () => {
    const w = world(4);
    const link = new HeldBackCopy(w.store);
    // A shard record another member created, which b's copy does not show.
    w.store.put(G, { kind: 'shard', index: 2, holderIdentity: 'gone', owner: { slot: 9, session: 1 }, token: 7, acquireTime: new Date(w.clock.now()) });
    link.hold(G, 'shard/2', true);
    const b = await w.add('b', { store: link });
    assert.ok(await w.advanceUntil(() => b.m.snapshot().owned.length === 3, 20_000), `owned ${b.m.snapshot().owned.length}`);
    await w.clock.advance(2 * T.leaseDurationMs);
    assert.ok(link.lists > 0, 'b never re-read the store before creating the absent shards');
    // The store showed shard 2 each time: no create was sent for it from the waited-out absence.
    assert.deepEqual(link.creates.filter((k) => k.startsWith('shard/')).sort(), ['shard/0', 'shard/1', 'shard/3']);
    // Once the copy shows it, it is a record like any other: its owner's session (slot 9, never
    // seen written) is over a lease duration later, and b takes it past token 7 and past every
    // token it issued before (they come from the header's high-water blocks).
    link.release('shard/2');
    assert.ok(await w.advanceUntil(() => b.m.snapshot().owned.length === 4, 40_000));
    const owned = b.m.snapshot().owned;
    const two = owned.find((o) => o.shard === 2)!.token;
    assert.ok(two > 7 && owned.every((o) => o.shard === 2 || o.token < two), `shard 2 taken with token ${two}: ${JSON.stringify(owned)}`);
    await b.m.stop();
  });

  it('a copy that stalls (it shows none of our new heartbeats) renews nothing: the session ends within renewDeadline though every read succeeds', async () => {
    const w = world(4);
    const link = new HeldBackCopy(w.store);
    const a = await w.add('a', { store: link });
    assert.ok(await w.advanceUntil(() => a.m.snapshot().owned.length === 4, 20_000));
    const first = a.m.snapshot().session!;
    link.hold(G, `member/${first.slot}`);
    const stalledAt = w.clock.monotonic();
    // Its heartbeats still land; only the copy it reads stands still (a deletion of one of its
    // shards' records would not show either). It may join again after, as a new session.
    const ended = () => a.m.snapshot().session?.slot !== first.slot;
    assert.ok(await w.advanceUntil(ended, T.renewDeadlineMs + T.retryPeriodMs), 'the session went on from reads of a copy that showed none of its heartbeats');
    assert.ok(w.clock.monotonic() - stalledAt <= T.renewDeadlineMs + 100);
    await a.m.stop();
  });
});
