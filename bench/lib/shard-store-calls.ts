/**
 * The store calls of a shard member alone, without a member (docs/benchmarks.md, "Shard writes
 * at N = 4096"): at N shards, what one full list, one read of no change, one batch of
 * MAX_BATCH_ROWS shard writes and a pass of N/2 of them (a leave or join at M = 2) take, and
 * how long a heartbeat waits while that pass runs through the member's own WriteBatches, as
 * against alone. The store is opened in this process, as a member opens its own: SQLite's calls
 * are synchronous, so a heartbeat waits there for the batch call in progress, and gets its turn
 * between two calls (WriteBatches yields between them).
 */
import { ConflictError } from '../../src/errors.js';
import type { GroupStore, GroupWrite, MemberSlot, ShardRecord } from '../../src/backends/group-store.js';
import { MAX_BATCH_ROWS, WriteBatches } from '../../src/shards/write-batches.js';
import { quantile } from './quantile.js';

export interface StoreCallTimes {
  shards: number;
  /** ms, median of `samples` calls each. */
  listMs: number;
  /** readGroupChanges from the last cursor with nothing changed; null where the store has none. */
  noChangeMs: number | null;
  /** One writeGroupRecords call of MAX_BATCH_ROWS shard updates: median and p95. */
  batchMs: { median: number; p95: number };
  /** The N/2 shard updates of a pass, through WriteBatches, from the first call to the last answer. */
  passMs: number;
  passRows: number;
  /** A member slot's heartbeat (updateGroupRecord) alone: median. */
  heartbeatAloneMs: number;
  /** Heartbeats one after another while the pass runs, each from when it was due to its answer: median and the longest. */
  heartbeatDuringPassMs: { median: number; max: number; count: number };
}

const SAMPLES = 9;

/** Measures the calls on `store` in a group of its own (`group`, which must not exist yet), leaving its records behind. */
export async function measureStoreCalls(store: GroupStore, group: string, shards: number): Promise<StoreCallTimes> {
  const write = store.writeGroupRecords?.bind(store);
  if (!write) throw new Error(`the ${store.backend} store has no batch writes`);
  const versions = new Map<number, string>();
  let token = 0;
  const shardWrite = (s: number, holder: string): GroupWrite => ({
    record: { kind: 'shard', index: s, holderIdentity: holder, owner: holder ? { slot: 0, session: 1 } : null, token: ++token, acquireTime: new Date() },
    expectedVersion: versions.get(s) ?? null,
  });
  const landed = (writes: readonly GroupWrite[], outcomes: readonly { written: boolean; version?: string }[]) => {
    outcomes.forEach((o, i) => {
      if (!o.written || o.version === undefined) throw new Error(`a bench write lost its compare-and-swap: ${JSON.stringify(o)}`);
      versions.set((writes[i]!.record as ShardRecord).index, o.version);
    });
  };
  // The group as a member sees it: its header, one member slot, N shards.
  await store.createGroupRecord(group, { kind: 'group', index: 0, shards, createdAt: new Date(), highWater: 0 });
  const slot = (renewTime: Date): MemberSlot => ({
    kind: 'member',
    index: 0,
    holderIdentity: 'bench',
    session: 1,
    state: 'active',
    renewTime,
    leaseDurationSeconds: 15,
  });
  let slotVersion = await store.createGroupRecord(group, slot(new Date()));
  for (let s = 0; s < shards; s += MAX_BATCH_ROWS) {
    const writes = Array.from({ length: Math.min(MAX_BATCH_ROWS, shards - s) }, (_, i) => shardWrite(s + i, 'bench'));
    landed(writes, await write(group, writes));
  }

  const timed = async (fn: () => Promise<unknown>): Promise<number> => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const median = (xs: number[]) => quantile(xs, 0.5);

  const lists: number[] = [];
  for (let i = 0; i < SAMPLES; i++) lists.push(await timed(() => store.listGroup(group)));
  let noChangeMs: number | null = null;
  if (store.readGroupChanges) {
    let cursor = (await store.readGroupChanges(group, undefined)).cursor;
    const reads: number[] = [];
    for (let i = 0; i < SAMPLES; i++) reads.push(await timed(async () => (cursor = (await store.readGroupChanges!(group, cursor)).cursor)));
    noChangeMs = median(reads);
  }

  const batches: number[] = [];
  const rows = Math.min(MAX_BATCH_ROWS, shards);
  for (let i = 0; i < SAMPLES; i++) {
    const writes = Array.from({ length: rows }, (_, k) => shardWrite((i * rows + k) % shards, i % 2 ? 'bench' : ''));
    batches.push(await timed(async () => landed(writes, await write(group, writes))));
  }

  const heartbeat = async () => {
    try {
      slotVersion = await store.updateGroupRecord(group, slot(new Date()), slotVersion);
    } catch (err) {
      if (err instanceof ConflictError) throw new Error('the bench heartbeat lost its compare-and-swap: another writer in the bench group', { cause: err });
      throw err;
    }
  };
  const alone: number[] = [];
  for (let i = 0; i < SAMPLES; i++) alone.push(await timed(heartbeat));

  // The pass: N/2 shards released, each its own write asked in one turn, as a member's leave asks them.
  const batcher = new WriteBatches((writes) => write(group, writes));
  const passRows = Math.max(1, Math.floor(shards / 2));
  const during: number[] = [];
  const t0 = performance.now();
  let passDone = false;
  const pass = Promise.all(
    Array.from({ length: passRows }, async (_, s) => {
      const w = shardWrite(s, '');
      const version = await batcher.write(w.record, w.expectedVersion);
      if (version === null) throw new Error('a bench write was withdrawn');
      versions.set(s, version);
    }),
  ).then(() => {
    passDone = true;
    return performance.now() - t0;
  });
  // The first heartbeat goes once the pass's first call is under way (WriteBatches sends after this turn).
  // Heartbeats one after another, each due at once and sent from a timer, as a member's: timed from
  // when it was due to its answer, so the wait for a batch in progress counts (SQLite's calls are
  // synchronous: the heartbeat's timer runs only once the call in progress returns).
  await new Promise<void>((resolve) => setImmediate(resolve));
  while (!passDone) {
    const due = performance.now();
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    await heartbeat();
    during.push(performance.now() - due);
  }
  const passMs = await pass;
  return {
    shards,
    listMs: median(lists),
    noChangeMs,
    batchMs: { median: median(batches), p95: quantile(batches, 0.95) },
    passMs,
    passRows,
    heartbeatAloneMs: median(alone),
    heartbeatDuringPassMs: { median: during.length ? median(during) : 0, max: during.length ? Math.max(...during) : 0, count: during.length },
  };
}

const ms = (x: number) => (x < 10 ? x.toFixed(1) : x.toFixed(0));

/** The store calls' table, one row per store and N. */
export function storeCallsMarkdown(rows: readonly { store: string; load: number; t: StoreCallTimes }[]): string {
  if (rows.length === 0) return '';
  const lines = rows.map(
    ({ store, load, t }) =>
      `| ${store} | ${t.shards} | ${ms(t.listMs)} | ${t.noChangeMs === null ? '-' : ms(t.noChangeMs)} | ${ms(t.batchMs.median)} / ${ms(t.batchMs.p95)} | ${t.passRows} in ${ms(t.passMs)} | ${ms(t.heartbeatAloneMs)} | ${ms(t.heartbeatDuringPassMs.median)} / ${ms(t.heartbeatDuringPassMs.max)} (${t.heartbeatDuringPassMs.count}) | ${load.toFixed(1)} |`,
  );
  return [
    '### The store calls alone',
    '',
    `In ms, the bench's own process calling the store (JIT on, unlike the members), in a group of its own with N shard records: a full list and a read of no change (median of ${SAMPLES}); one batch of ${MAX_BATCH_ROWS} shard writes, each its own compare-and-swap (median / p95 of ${SAMPLES}); a pass of N/2 writes through the member's WriteBatches (a leave or a join at M = 2); a member slot's heartbeat alone (median of ${SAMPLES}), and heartbeats sent one after another while the pass runs (median / longest, how many): what a heartbeat waits behind a batch.`,
    '',
    '| store | N | list | read of no change | batch of 256 rows, median / p95 | pass | heartbeat alone | heartbeat during the pass | load |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...lines,
    '',
  ].join('\n');
}
