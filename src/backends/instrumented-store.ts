import type { Counter, Histogram } from 'prom-client';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord } from './lease-store.js';
import type { GroupRecord, GroupStore, GroupWrite, GroupWriteOutcome, VersionedGroupRecord } from './group-store.js';

/** Wraps a store to time every request into a histogram labelled by op and result. */
export class InstrumentedStore implements LeaseStore {
  readonly backend: string;
  readonly location: string;
  readonly maxToken: number | undefined;
  readonly successorClaims?: LeaseStore['successorClaims'];

  constructor(
    private readonly inner: LeaseStore,
    private readonly histogram: Histogram<'backend' | 'op' | 'result'>,
  ) {
    this.backend = inner.backend;
    this.location = inner.location;
    this.maxToken = inner.maxToken;
    if (inner.watch) this.watch = inner.watch.bind(inner);
    // Without it the elector would see a store that keeps no claims, and never claim.
    if (inner.successorClaims) this.successorClaims = inner.successorClaims;
  }

  get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    return this.time('get', () => this.inner.get(name, opts));
  }

  create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    return this.time('create', () => this.inner.create(name, record, opts));
  }

  update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    return this.time('update', () => this.inner.update(name, record, expectedVersion, opts));
  }

  watch?: LeaseStore['watch'];

  close(): Promise<void> {
    return this.inner.close();
  }

  private time<T>(op: string, fn: () => Promise<T>): Promise<T> {
    return timed(this.histogram, this.backend, op, fn);
  }
}

/** Times one request into `histogram`, labelled by its result: ok, conflict, not_found or error. */
async function timed<T>(histogram: Histogram<'backend' | 'op' | 'result'>, backend: string, op: string, fn: () => Promise<T>): Promise<T> {
  const end = histogram.startTimer({ backend, op });
  try {
    const v = await fn();
    end({ result: 'ok' });
    return v;
  } catch (err) {
    const code = (err as { code?: string }).code;
    end({ result: code === 'LEASEHOLD_ERR_CONFLICT' ? 'conflict' : code === 'LEASEHOLD_ERR_NOT_FOUND' ? 'not_found' : 'error' });
    throw err;
  }
}

/**
 * What a member's reads of its group brought, labelled by `group` and `read`: `full` for an answer
 * holding the whole group (a list, or a read by change the store answered in full), `changes` for
 * one holding what changed since the last. The request histogram counts calls; these say how many
 * of them were whole-group reads and how many records came back, which is what grows with N.
 */
export interface GroupReadCounters {
  reads: Counter<'group' | 'read'>;
  records: Counter<'group' | 'read'>;
}

/**
 * A shard group's store, timed into the same histogram: `list`, `changes`, `create` and `update`
 * of its records (`changes` only where such a read is a request, not one from a watch's copy),
 * and `batch` for a batch of writes (its result `ok` whatever each row's outcome); with
 * `counters`, each read that answered is counted with the records it brought.
 */
export class InstrumentedGroupStore implements GroupStore {
  readonly backend: string;
  readonly location: string;
  readonly maxToken: number | undefined;
  /** Carried: without it a member would judge time passing from a watch's copy without re-reading. */
  readonly changesFromWatch: boolean | undefined;
  watchGroup?: GroupStore['watchGroup'];
  readGroupChanges?: GroupStore['readGroupChanges'];
  writeGroupRecords?: GroupStore['writeGroupRecords'];
  raiseHighWater?: GroupStore['raiseHighWater'];
  raiseAndTake?: GroupStore['raiseAndTake'];

  constructor(
    private readonly inner: GroupStore,
    private readonly histogram: Histogram<'backend' | 'op' | 'result'>,
    private readonly counters?: GroupReadCounters,
  ) {
    this.backend = inner.backend;
    this.location = inner.location;
    this.maxToken = inner.maxToken;
    this.changesFromWatch = inner.changesFromWatch;
    if (inner.watchGroup) this.watchGroup = inner.watchGroup.bind(inner);
    const changes = inner.readGroupChanges?.bind(inner);
    // A read answered from a watch's copy sends no request (the copy's LIST and watch are its
    // own, as watchGroup's are): timed as op="changes" it would count requests never sent.
    const sendsRequest = inner.changesFromWatch !== true;
    if (changes)
      this.readGroupChanges = async (group, cursor, opts) => {
        const read = () => changes(group, cursor, opts);
        const answer = await (sendsRequest ? timed(this.histogram, this.backend, 'changes', read) : read());
        this.counted(group, answer.full ? 'full' : 'changes', answer.records.length);
        return answer;
      };
    // Without it the member would see a store without batches, and write one record at a time.
    const batch = inner.writeGroupRecords?.bind(inner);
    if (batch)
      this.writeGroupRecords = (group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]> =>
        timed(this.histogram, this.backend, 'batch', () => batch(group, writes, opts));
    // Without it the member would raise the header by compare-and-swap, and lose races it need not.
    const raise = inner.raiseHighWater?.bind(inner);
    if (raise) this.raiseHighWater = (group, r, opts) => timed(this.histogram, this.backend, 'raise', () => raise(group, r, opts));
    // Without it the member would raise, then write its takes: two waits for SQLite's lock.
    const take = inner.raiseAndTake?.bind(inner);
    if (take) this.raiseAndTake = (group, r, takes, opts) => timed(this.histogram, this.backend, 'take', () => take(group, r, takes, opts));
  }

  async listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    const list = await timed(this.histogram, this.backend, 'list', () => this.inner.listGroup(group, opts));
    this.counted(group, 'full', list.length);
    return list;
  }

  createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    return timed(this.histogram, this.backend, 'create', () => this.inner.createGroupRecord(group, record, opts));
  }

  updateGroupRecord(group: string, record: GroupRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    return timed(this.histogram, this.backend, 'update', () => this.inner.updateGroupRecord(group, record, expectedVersion, opts));
  }

  private counted(group: string, read: 'full' | 'changes', records: number): void {
    this.counters?.reads.inc({ group, read });
    this.counters?.records.inc({ group, read }, records);
  }
}
