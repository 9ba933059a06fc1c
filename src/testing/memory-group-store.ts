import { ConflictError, NotFoundError } from '../errors.js';
import { InjectedFaults } from './injected-faults.js';
import type { CallOptions } from '../backends/lease-store.js';
import {
  recordKey,
  type GroupChanges,
  type GroupRecord,
  type GroupStore,
  type GroupWrite,
  type GroupWriteOutcome,
  type HighWaterRaise,
  type RaisedHighWater,
  type VersionedGroupRecord,
} from '../backends/group-store.js';
import { checkRaise, raiseStored } from '../backends/high-water-raise.js';
import { checkGroupWrites } from '../backends/group-writes.js';
import { checkGroupName, checkGroupRecord } from '../backends/group-record-check.js';

export type GroupStoreOp = 'list' | 'changes' | 'create' | 'update' | 'write';

/**
 * An in-memory GroupStore for the shard group's unit tests and simulation (every other tier uses
 * a real store). Versions come from one counter and never repeat. It refuses what every store
 * refuses (group-record-check.ts). It records each call, so tests can pin the traffic, and can be
 * told to fail or hang the next calls.
 */
export class MemoryGroupStore implements GroupStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  private readonly faults = new InjectedFaults<GroupStoreOp>();
  readonly calls: GroupStoreOp[] = this.faults.calls;
  private readonly groups = new Map<string, Map<string, VersionedGroupRecord>>();
  private seq = 0;
  private readonly watchers = new Map<string, Set<() => void>>();
  private readonly healthWatchers = new Set<(healthy: boolean) => void>();

  /** Seeds or overwrites a record as another writer would; returns its new version. */
  put(group: string, record: GroupRecord): string {
    const version = String(++this.seq);
    this.rows(group).set(recordKey(record), { record: structuredClone(record), version });
    this.changed(group);
    return version;
  }

  /**
   * Overwrites a record at a version of the caller's choosing, as a writer outside the protocol
   * would (a `sqlite3` shell setting `version`, PostgreSQL's triggers bypassed): no version is
   * drawn, so a read by change from a cursor past `version` does not bring it.
   */
  forge(group: string, record: GroupRecord, version: string): void {
    this.rows(group).set(recordKey(record), { record: structuredClone(record), version });
    this.changed(group);
  }

  /** Removes a record as an operator would; returns whether it was there. */
  delete(group: string, record: Pick<GroupRecord, 'kind' | 'index'>): boolean {
    const gone = this.rows(group).delete(recordKey(record));
    if (gone) this.changed(group);
    return gone;
  }

  /** The group's records as they are now, without counting a call. */
  peek(group: string): VersionedGroupRecord[] {
    return [...this.rows(group).values()].map((r) => structuredClone(r));
  }

  /** The next call of `op` ('*' = any) rejects with `error`. */
  failNext(op: GroupStoreOp | '*', error: Error): void {
    this.faults.failNext(op, error);
  }

  /** The next call of `op` never settles until its signal aborts, as a request to a dead server. */
  hangNext(op: GroupStoreOp | '*'): void {
    this.faults.hangNext(op);
  }

  /** Reports the watches as connected (true) or broken (false). */
  setWatchHealth(healthy: boolean): void {
    for (const h of this.healthWatchers) h(healthy);
  }

  async listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    await this.fault('list', opts);
    checkGroupName(group);
    return this.peek(group);
  }

  /**
   * Versions are the store's one counter, so the cursor is the counter as the read saw it, and
   * the changes are the records whose version is past it. A cursor past the counter was never
   * issued by this store: a full answer.
   */
  async readGroupChanges(group: string, cursor: string | undefined, opts?: CallOptions): Promise<GroupChanges> {
    await this.fault('changes', opts);
    checkGroupName(group);
    const since = cursor !== undefined && /^\d{1,15}$/.test(cursor) ? Number(cursor) : undefined;
    const now = String(this.seq);
    const all = this.peek(group);
    if (since === undefined || since > this.seq) return { records: all, cursor: now, full: true, total: all.length };
    return { records: all.filter((r) => Number(r.version) > since), cursor: now, full: false, total: all.length };
  }

  async createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    await this.fault('create', opts);
    checkGroupRecord(group, record);
    if (this.rows(group).has(recordKey(record))) throw new ConflictError(`${group} ${recordKey(record)} already exists`);
    return this.put(group, record);
  }

  async updateGroupRecord(group: string, record: GroupRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    await this.fault('update', opts);
    checkGroupRecord(group, record);
    const row = this.rows(group).get(recordKey(record));
    if (!row) throw new ConflictError(`${group} ${recordKey(record)} was deleted since it was read`);
    if (row.version !== expectedVersion) throw new ConflictError(`${group} ${recordKey(record)} changed since it was read`);
    return this.put(group, record);
  }

  /**
   * The SQL stores' raise of the header's highWater (GroupStore.raiseHighWater), at one moment as
   * their transaction makes it: for the simulation's links to a SQL store. Not raiseHighWater
   * itself, so the unit tests' members raise by compare-and-swap, as on Kubernetes.
   */
  raise(group: string, raise: HighWaterRaise): RaisedHighWater {
    checkRaise(group, raise, Number.MAX_SAFE_INTEGER);
    const row = this.rows(group).get(recordKey({ kind: 'group', index: 0 }));
    if (row?.record.kind !== 'group') throw new NotFoundError(`${group} has no header: its highWater was not raised`);
    const { from, raised } = raiseStored(group, row.record, raise, Number.MAX_SAFE_INTEGER);
    const version = this.put(group, raised);
    return { from, header: { record: structuredClone(raised), version } };
  }

  /** A batch ('write' in `calls`): each write its own compare-and-swap, all at one moment, as a transaction would. */
  async writeGroupRecords(group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]> {
    await this.fault('write', opts);
    checkGroupWrites(group, writes);
    return writes.map(({ record, expectedVersion }): GroupWriteOutcome => {
      const row = this.rows(group).get(recordKey(record));
      if (expectedVersion === null && row) return { written: false, conflict: `${group} ${recordKey(record)} already exists` };
      if (expectedVersion !== null && !row) return { written: false, conflict: `${group} ${recordKey(record)} was deleted since it was read` };
      if (expectedVersion !== null && row!.version !== expectedVersion)
        return { written: false, conflict: `${group} ${recordKey(record)} changed since it was read` };
      return { written: true, version: this.put(group, record) };
    });
  }

  watchGroup(group: string, onChange: () => void, onHealth?: (healthy: boolean) => void): () => void {
    const set = this.watchers.get(group) ?? new Set<() => void>();
    this.watchers.set(group, set);
    set.add(onChange);
    if (onHealth) this.healthWatchers.add(onHealth);
    return () => {
      set.delete(onChange);
      if (onHealth) this.healthWatchers.delete(onHealth);
    };
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  private rows(group: string): Map<string, VersionedGroupRecord> {
    let rows = this.groups.get(group);
    if (!rows) this.groups.set(group, (rows = new Map<string, VersionedGroupRecord>()));
    return rows;
  }

  private changed(group: string): void {
    for (const w of this.watchers.get(group) ?? []) w();
  }

  private fault(op: GroupStoreOp, opts: CallOptions | undefined): Promise<void> {
    return this.faults.call(op, opts);
  }
}
