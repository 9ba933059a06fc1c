import { BackendError, ConflictError } from '../errors.js';
import type { GroupRecord, GroupWrite, GroupWriteOutcome } from '../backends/group-store.js';

/**
 * The rows one batch call carries at most. The heartbeat shares what a batch uses (SQLite's
 * synchronous connection, PostgreSQL's one connection, the client's sockets): between two calls
 * it gets its turn, so it waits for one call of at most this many rows, not for a pass
 * (docs/benchmarks.md, "Shard writes in batches").
 */
export const MAX_BATCH_ROWS = 256;

interface Queued {
  write: GroupWrite;
  /** Asked right before the write is sent: false withdraws it. */
  stillWanted: (() => boolean) | undefined;
  /** Whether its call may wait on another's lock (CallOptions.waitForLock). */
  waitForLock: boolean;
  resolve(version: string | null): void;
  reject(err: unknown): void;
}

/**
 * A shard member's record writes, gathered into batches (GroupStore.writeGroupRecords): the
 * writes asked for in one turn of the event loop go in one call, at most MAX_BATCH_ROWS rows, one
 * call at a time; what is asked meanwhile goes in the next. Each write is still its own
 * compare-and-swap: a lost one rejects with ConflictError, as a single write would, and the
 * others are written. A call that fails rejects every write it carried.
 */
export class WriteBatches {
  private queue: Queued[] = [];
  private sending = false;

  constructor(
    /** One batch call, bounded in time by the caller; `waitForLock` false: it must not wait on another's lock. */
    private readonly send: (writes: GroupWrite[], waitForLock: boolean) => Promise<GroupWriteOutcome[]>,
  ) {}

  /**
   * Writes `record` (a create when `expectedVersion` is null) in the next batch: its new version,
   * or null when `stillWanted`, asked right before the batch is sent, withdrew it (a judgment
   * made when the write was asked for is made again, however long it waited). `waitForLock`
   * false: this write need not wait on another's lock; a call waits if any write it carries may.
   */
  write(record: GroupRecord, expectedVersion: string | null, stillWanted?: () => boolean, waitForLock = true): Promise<string | null> {
    return new Promise<string | null>((resolve, reject) => {
      this.queue.push({ write: { record, expectedVersion }, stillWanted, waitForLock, resolve, reject });
      if (this.sending) return;
      this.sending = true;
      // After the turn that asked: every write that turn asks for goes in the same call.
      setImmediate(() => void this.sendAll());
    });
  }

  private async sendAll(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.nextBatch();
        if (batch.length > 0) await this.sendOne(batch);
        // The heartbeat's turn, and the other turns of the event loop, between two calls.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.sending = false;
    }
  }

  /** Up to MAX_BATCH_ROWS writes, one per record (a second of the same record waits for the next call); the withdrawn answered null. */
  private nextBatch(): Queued[] {
    const batch: Queued[] = [];
    const keys = new Set<string>();
    const later: Queued[] = [];
    for (const q of this.queue) {
      const key = `${q.write.record.kind}/${q.write.record.index}`;
      if (batch.length >= MAX_BATCH_ROWS || keys.has(key)) later.push(q);
      else if (q.stillWanted && !q.stillWanted()) q.resolve(null);
      else {
        keys.add(key);
        batch.push(q);
      }
    }
    this.queue = later;
    return batch;
  }

  private async sendOne(batch: Queued[]): Promise<void> {
    let outcomes: GroupWriteOutcome[];
    try {
      outcomes = await this.send(
        batch.map((q) => q.write),
        batch.some((q) => q.waitForLock),
      );
    } catch (err) {
      for (const q of batch) q.reject(err);
      return;
    }
    batch.forEach((q, i) => {
      const o = outcomes[i];
      if (o?.written) q.resolve(o.version);
      else if (o) q.reject(new ConflictError(o.conflict));
      // A store that answers fewer outcomes than writes: whether this one was written is unknown.
      else q.reject(new BackendError(`the store's batch answered no outcome for record ${q.write.record.kind}/${q.write.record.index}`));
    });
  }
}
