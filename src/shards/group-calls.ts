import type { Clock } from '../clock.js';
import { StoreReopenedError } from '../errors.js';
import type { CallOptions } from '../backends/lease-store.js';
import type { GroupStore, ShardRecord } from '../backends/group-store.js';
import { boundedCall } from '../holder/bounded-call.js';
import { LockWaits } from '../holder/lock-waits.js';
import { WriteBatches } from './write-batches.js';

/** Shards taken or released at once by one member: bounded, so a join of 512 shards is not 512 requests at once. */
const PARALLEL_WRITES = 16;

/**
 * A shard member's calls to its group store: each bounded in time (requestTimeoutMs), each write
 * paced on others' locks (lock-waits.ts), the shard writes of a pass in batches where the store
 * has them (write-batches.ts). Holds no fact of the group: only how a call is sent.
 */
export class GroupCalls {
  /** Whether a write may wait on another's lock now: not right after one that waited went unanswered. */
  private readonly lockWaits: LockWaits;
  /** The shard writes of a pass in batches, where the store has them (write-batches.ts). */
  private readonly batches: WriteBatches | null;

  constructor(
    private readonly store: GroupStore,
    private readonly group: string,
    private readonly clock: Clock,
    private readonly requestTimeoutMs: number,
    retryPeriodMs: number,
    /** Whichever call finds the store replaced: the absences seen before prove nothing (GroupView.interruptAbsence). */
    private readonly onReopened: () => void,
  ) {
    this.lockWaits = new LockWaits(clock, retryPeriodMs);
    const batch = store.writeGroupRecords?.bind(store);
    this.batches = batch ? new WriteBatches((writes, waitForLock) => this.call('batch', (o) => batch(group, writes, o), waitForLock)) : null;
  }

  /**
   * One store call, bounded in time. A write (any op but a list) waits on another's lock only if
   * its caller allows it (`waitForLock`: releaseWaitsForLock) and lockWaits does: no other write
   * that may wait is unanswered, and none went unanswered within a retryPeriod. At most one busy
   * timeout in a row.
   */
  call<T>(op: string, send: (opts: CallOptions) => Promise<T>, waitForLock = true): Promise<T> {
    const bounded = (waits: boolean) =>
      boundedCall(
        this.clock,
        this.requestTimeoutMs,
        `${this.store.backend} group ${op}`,
        (o) => send(waits ? o : { ...o, waitForLock: false }),
        (e) => {
          if (e instanceof StoreReopenedError) this.onReopened();
        },
      );
    // A list is a read: it never waits on a writer's lock (SQLite's WAL).
    return op === 'list' ? bounded(true) : this.lockWaits.send(waitForLock, bounded);
  }

  /**
   * A shard record's write (a create when `expected` is null): in a batch where the store has
   * them, where `stillWanted` is asked again right before it is sent (null: withdrawn); else alone.
   */
  writeShard(rec: ShardRecord, expected: string | null, stillWanted?: () => boolean, waitForLock = true): Promise<string | null> {
    if (this.batches) return this.batches.write(rec, expected, stillWanted, waitForLock);
    return this.call(
      expected === null ? 'create' : 'update',
      (o) => (expected === null ? this.store.createGroupRecord(this.group, rec, o) : this.store.updateGroupRecord(this.group, rec, expected, o)),
      waitForLock,
    );
  }

  /** Writes of a pass at once: every one where they go in batches (the batches bound them), else PARALLEL_WRITES. */
  get parallelWrites(): number {
    return this.batches ? Infinity : PARALLEL_WRITES;
  }
}
