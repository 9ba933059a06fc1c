import { ConflictError } from '../errors.js';
import { InjectedFaults } from './injected-faults.js';
import type { CallOptions, LeaseRecord, LeaseStore, SuccessorClaimSupport, VersionedRecord, WatchEvent } from '../backends/lease-store.js';

export type StoreOp = 'get' | 'create' | 'update';

/**
 * An in-memory LeaseStore for unit tests: the elector's here (every other tier uses a real
 * store), and, through `leasehold/testing`, an app's own. It records each call so tests can pin
 * the exact backend traffic, and can be told to fail or hang the next calls.
 */
export class MemoryLeaseStore implements LeaseStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  private readonly faults = new InjectedFaults<StoreOp>();
  readonly calls: StoreOp[] = this.faults.calls;
  private rows = new Map<string, VersionedRecord>();
  private seq = 0;

  private watchers = new Set<(e: WatchEvent) => void>();
  private healthWatchers = new Set<(healthy: boolean) => void>();
  /** Send versioned records in events, as a Kubernetes watch does (default: empty hints). */
  eventsCarryRecords = false;

  /**
   * Count each record's versions from 1 again when it is created, as a per-row counter does
   * (PostgreSQL's `version + 1` before it drew versions that never repeat): a version read before
   * a deletion becomes current again once the re-created record has been written as often. Only
   * the elector's own rule (no takeover from an old view) keeps it safe then. Default false: a
   * version never repeats.
   */
  versionsRestartOnCreate = false;

  /** Seeds or overwrites a record as another writer would; returns its new version. */
  put(name: string, record: LeaseRecord): string {
    const previous = this.rows.get(name);
    const version = this.versionsRestartOnCreate ? String(previous ? Number(previous.version) + 1 : 1) : String(++this.seq);
    record = withoutEmptySuccessor(record);
    this.rows.set(name, { record: structuredClone(record), version });
    for (const w of this.watchers) w(this.eventsCarryRecords ? { record: { record: structuredClone(record), version } } : {});
    return version;
  }

  watch(_name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    this.watchers.add(onEvent);
    if (onHealth) this.healthWatchers.add(onHealth);
    return () => {
      this.watchers.delete(onEvent);
      if (onHealth) this.healthWatchers.delete(onHealth);
    };
  }

  /** Reports the watch as connected (true) or broken (false). */
  setWatchHealth(healthy: boolean): void {
    for (const h of this.healthWatchers) h(healthy);
  }

  /** How many records delete() has removed (the simulator tells a write in flight across one). */
  deletions = 0;

  delete(name: string): void {
    const row = this.rows.get(name);
    this.rows.delete(name);
    if (row) this.deletions++;
    if (row) for (const w of this.watchers) w(this.eventsCarryRecords ? { record: null, deleted: structuredClone(row.record) } : {});
  }

  /** The record and its version as they are now, without counting a call; null when absent. */
  peekVersioned(name: string): VersionedRecord | null {
    const row = this.rows.get(name);
    return row ? structuredClone(row) : null;
  }

  peek(name: string): LeaseRecord | undefined {
    const row = this.rows.get(name);
    return row ? structuredClone(row.record) : undefined;
  }

  /** The next call of `op` ('*' = any) rejects with `error`. */
  failNext(op: StoreOp | '*', error: Error): void {
    this.faults.failNext(op, error);
  }

  /** The next call of `op` never settles, as a request to a dead server. */
  hangNext(op: StoreOp | '*'): void {
    this.faults.hangNext(op);
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  /** Calls that hang until their signal aborts (as a destroyed request would). */
  get hanging(): number {
    return this.faults.hanging;
  }

  private fault(op: StoreOp, opts: CallOptions | undefined): Promise<void> {
    return this.faults.call(op, opts);
  }

  async get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    await this.fault('get', opts);
    const row = this.rows.get(name);
    return row ? structuredClone(row) : null;
  }

  async create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    await this.fault('create', opts);
    if (this.rows.has(name)) throw new ConflictError(`lease ${name} already exists`);
    return this.put(name, record);
  }

  async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    await this.fault('update', opts);
    const row = this.rows.get(name);
    if (!row) throw new ConflictError(`lease ${name} was deleted since it was read`);
    if (row.version !== expectedVersion) throw new ConflictError(`lease ${name} changed since it was read`);
    return this.put(name, record);
  }

  /** Keeps a successor claim, as every real store with room for it does. */
  readonly successorClaims: SuccessorClaimSupport = { kept: () => true };

  async close(): Promise<void> {}
}

/** No claim is stored as no field, as the real stores read it back. */
function withoutEmptySuccessor(record: LeaseRecord): LeaseRecord {
  if (record.successor) return record;
  const { successor: _none, ...rest } = record;
  return rest;
}
