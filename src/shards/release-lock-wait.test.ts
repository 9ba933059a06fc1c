/**
 * The shards follow the lease's lost-term rule to the letter (releaseWaitsForLock,
 * src/holder/end-of-term-rule.ts): a shard given up is released by a write that may wait on
 * another's lock, as any write; a lost session's shards, and every retried release, never wait.
 * On SQLite such a wait is the busy timeout, spent synchronously with the whole process stalled:
 * a member cut off by a neighbour's write lock would spend its time waiting on it, release after
 * release, answering nothing else (its /metrics, its drain endpoint).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { BackendUnavailableError } from '../errors.js';
import { ShardMember } from './shard-member.js';
import type { GroupRecord, GroupStore, GroupWrite, GroupWriteOutcome, VersionedGroupRecord } from '../backends/group-store.js';
import type { CallOptions } from '../backends/lease-store.js';
import { createLogger } from '../log.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 6_000, retryPeriodMs: 1_000 };
const G = 'workers';
const SHARDS = 4;

/**
 * A member's store whose writes another process may hold locked (reads answer, as SQLite's in
 * WAL mode); it notes, for each write that frees a shard, whether it may wait on the lock.
 */
class LockableLink implements GroupStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  writesLocked = false;
  /** Per shard-freeing write, answered or not: whether it may wait on the lock. */
  readonly frees: boolean[] = [];
  /** Every write call refused while locked: when, and whether it may wait on the lock. */
  readonly refused: { atMono: number; waits: boolean }[] = [];
  constructor(
    private readonly inner: MemoryGroupStore,
    private readonly clock: FakeClock,
  ) {}
  listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    return this.inner.listGroup(group, opts);
  }
  createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    this.written([record], opts);
    return this.inner.createGroupRecord(group, record, opts);
  }
  updateGroupRecord(group: string, record: GroupRecord, version: string, opts?: CallOptions): Promise<string> {
    this.written([record], opts);
    return this.inner.updateGroupRecord(group, record, version, opts);
  }
  writeGroupRecords(group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]> {
    this.written(
      writes.map((w) => w.record),
      opts,
    );
    return this.inner.writeGroupRecords(group, writes, opts);
  }
  private written(records: GroupRecord[], opts: CallOptions | undefined): void {
    for (const r of records) if (r.kind === 'shard' && r.owner === null) this.frees.push(opts?.waitForLock ?? true);
    if (!this.writesLocked) return;
    this.refused.push({ atMono: this.clock.monotonic(), waits: opts?.waitForLock ?? true });
    throw new BackendUnavailableError('another process holds the write lock');
  }
}

async function ownAll(batches: boolean) {
  const clock = new FakeClock();
  const inner = new MemoryGroupStore();
  const link = new LockableLink(inner, clock);
  const logged: { msg: string; count?: number }[] = [];
  const log = createLogger({ level: 'info', write: (line) => logged.push(JSON.parse(line) as { msg: string; count?: number }) });
  // Without writeGroupRecords, the member writes each record alone: both paths carry the option.
  if (!batches) (link as { writeGroupRecords?: unknown }).writeGroupRecords = undefined;
  const m = new ShardMember({ ...T, store: link, group: G, shards: SHARDS, identity: 'a', clock, log });
  await m.start();
  for (let t = 0; m.snapshot().owned.length < SHARDS && t < 40_000; t += 100) await clock.advance(100);
  assert.equal(m.snapshot().owned.length, SHARDS);
  return { clock, inner, link, m, logged };
}

for (const batches of [true, false]) {
  describe(`a member's shard releases and another's lock (${batches ? 'in batches' : 'one write each'})`, () => {
    it("a lost session's releases never wait on the lock, nor do their retries; once the lock goes, they land", async () => {
      const w = await ownAll(batches);
      const lost = w.m.snapshot().session!;
      assert.equal((await w.inner.listGroup(G)).filter((v) => v.record.kind === 'shard' && v.record.owner?.session === lost.session).length, SHARDS);
      w.link.writesLocked = true;
      for (let t = 0; w.m.snapshot().session !== null && t < 10_000; t += 50) await w.clock.advance(50);
      assert.equal(w.m.snapshot().session, null, 'the session ends at the renew deadline');
      await w.clock.advance(3 * T.retryPeriodMs);
      assert.ok(w.link.frees.length >= SHARDS, `each shard's release tried: ${w.link.frees.length}`);
      assert.deepEqual(
        w.link.frees.filter((waits) => waits),
        [],
        'no release of a lost session may wait on a lock',
      );
      w.link.writesLocked = false;
      const free = async () => (await w.inner.listGroup(G)).filter((v) => v.record.kind === 'shard' && v.record.owner === null).length;
      for (let t = 0; (await free()) < SHARDS && t < 5_000; t += 100) await w.clock.advance(100);
      // Freed, then taken back by its next session: either way no record names the lost one.
      const named = (await w.inner.listGroup(G)).filter((v) => v.record.kind === 'shard' && v.record.owner?.session === lost.session);
      assert.deepEqual(named, [], 'every release landed once the lock went');
      const stopping = w.m.stop();
      await w.clock.advance(T.renewDeadlineMs);
      await stopping;
    });

    it('a lost session on a locked store: no two writes in a row wait on the lock, releases retried each retryPeriod, told once a turn', async () => {
      // On SQLite each write allowed to wait spends the busy timeout synchronously: the last
      // heartbeat and two slot takes once waited it out back to back (the sidecar stalled ~3 s),
      // a store refusing at once was asked again at a hint's pace, and every round logged a line
      // per shard (lock-waits.ts, release-failures.ts).
      const w = await ownAll(batches);
      w.link.writesLocked = true;
      const lockedAt = w.clock.monotonic();
      const loggedBefore = w.logged.length;
      for (let t = 0; w.m.snapshot().session !== null && t < 10_000; t += 50) await w.clock.advance(50);
      assert.equal(w.m.snapshot().session, null, 'the session ends at the renew deadline');
      const lostAt = w.clock.monotonic();
      const freesBefore = w.link.frees.length;
      const rounds = 4;
      for (let t = 0; t < rounds * T.retryPeriodMs; t += 50) await w.clock.advance(50);
      const waited = w.link.refused.filter((r) => r.waits);
      assert.ok(waited.length >= 2, `writes may still wait, paced: ${JSON.stringify(w.link.refused)}`);
      for (let i = 1; i < waited.length; i++)
        assert.ok(
          waited[i]!.atMono - waited[i - 1]!.atMono >= T.retryPeriodMs,
          `two waits in a row: ${JSON.stringify(waited.map((r) => r.atMono - lockedAt))}`,
        );
      const released = w.link.frees.length - freesBefore;
      assert.ok(released <= (rounds + 1) * SHARDS, `${released} release writes in ${rounds} retry periods: retried at a hint's pace`);
      const told = w.logged.slice(loggedBefore).filter((l) => l.msg.startsWith('releasing'));
      assert.ok(told.length >= 1 && told.length <= rounds + 2, `${told.length} lines for the unanswered releases: ${JSON.stringify(told)}`);
      assert.ok(told.every((l) => (l.count ?? 1) <= SHARDS));
      assert.ok(w.clock.monotonic() > lostAt);
      w.link.writesLocked = false;
      const stopping = w.m.stop();
      await w.clock.advance(T.renewDeadlineMs);
      await stopping;
    });

    it("a graceful leave's releases may wait on the lock, as any write (so they land beside a neighbour's write)", async () => {
      const w = await ownAll(batches);
      const stopping = w.m.stop();
      await w.clock.advance(T.renewDeadlineMs);
      await stopping;
      assert.equal(w.link.frees.length, SHARDS);
      assert.ok(
        w.link.frees.every((waits) => waits),
        JSON.stringify(w.link.frees),
      );
    });
  });
}
