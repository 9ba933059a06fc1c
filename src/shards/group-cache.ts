/**
 * A member's copy of its group's records, kept up to date by reading only what changed
 * (GroupStore.readGroupChanges; docs/design.md, "Planned: shard reads by change"). The member
 * asks it for the group where it listed the group before: an idle group then costs each read the
 * other members' heartbeats, not N + M + 1 records.
 *
 * A deletion leaves no change behind, only its evidence (GroupStore's DeletionEvidence): a
 * smaller count of the group's records than the copy holds, or a deletion mark moved since the
 * last read. A read that finds either reads in full at once, so a deleted record is gone from the
 * copy at the next read, as from a list. A read is also a full one at start, whenever
 * the store cannot continue from the cursor, and when the copy shows itself stale: a write the
 * store refused (`writer()` tells the copy) that a read sent after the refusal leaves holding the
 * record at the version the write expected (a create: still without the record). The stores
 * version every write, so only a writer outside the protocol (a version set by hand below the
 * cursor, triggers bypassed) leaves such a copy; a race with another member never does, its
 * write being past the cursor. No full read comes by the clock (docs/design.md, "Shard reads by
 * change": why that is safe, and what it costs).
 * A store without readGroupChanges is listed every time, as before; the copy then keeps nothing.
 *
 * Where the store answers from a copy kept by a watch (`fromWatch`: Kubernetes), the copy may
 * lag, so whoever takes from a judgment that rests on time passing (an owner's session over
 * because its slot did not change, an absent record waited out) calls `reread()` first: the
 * store's listGroup, sent now, not what the watch has told so far.
 */
import type { CallOptions } from '../backends/lease-store.js';
import { recordKey, type GroupChanges, type GroupRecord, type GroupStore, type VersionedGroupRecord } from '../backends/group-store.js';
import { notingRefusals } from './refused-writes.js';

/** One read of the copy: what it brought, and the group it left. */
export interface CacheRead {
  /** The records the read brought, when it read by change; null when it read the whole group. */
  readonly changes: readonly VersionedGroupRecord[] | null;
  /** The group as this read left it; asked before the next read (it says so if not). */
  all(): VersionedGroupRecord[];
  /** The version of record `key` (recordKey) in the group as this read left it, undefined when it holds none; asked before the next read. */
  version(key: string): string | undefined;
}

export class GroupCache {
  private readonly records = new Map<string, VersionedGroupRecord>();
  /** Moves on at each read: a CacheRead's all() must come before the next. */
  private reads = 0;
  /** Where the next read continues from; undefined: the next read is a full one. */
  private cursor: string | undefined;
  /** The store's deletion mark at the last read, where it gives one; undefined: not known (null from the store is not known either). */
  private deletionMark: string | null | undefined;
  /**
   * Writes the store refused since the last read began, by record key: the version each expected
   * (null: a create). The next read must explain each, or it reads in full.
   */
  private refused = new Map<string, string | null>();
  /** The read in flight: reads run one at a time, so an older answer never lands on a newer one. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: GroupStore,
    private readonly group: string,
  ) {}

  /**
   * The store to write through: the store itself, telling this copy of every write it refuses,
   * where the copy is read by query (readGroupChanges, not a watch's copy: the API server
   * versions every write, so a refusal there is a lag, the member's re-read rule's to handle).
   * Elsewhere the store itself, untouched (not one await more: the shard simulator's fingerprint).
   */
  writer(): GroupStore {
    if (!this.store.readGroupChanges || this.fromWatch) return this.store;
    return notingRefusals(this.store, this.group, (record, expected) => this.noteRefused(record, expected));
  }

  /** One read: the changes since the last, or the whole group where the copy needs it (above). Returns the group. */
  read(opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    // The store's own list, untouched: not one await more than before this copy existed (the
    // shard simulator's fingerprint, whose store has no readGroupChanges, depends on it).
    if (!this.byChange) return this.store.listGroup(this.group, opts);
    return this.serial(async () => (await this.readOnce(opts)).all());
  }

  /** Whether reads come by change (readChanges then says what changed); else each is a list. */
  get byChange(): boolean {
    return this.store.readGroupChanges !== undefined;
  }

  /** One read, as read() does, telling what it brought where it read by change (byChange only). */
  readChanges(opts?: CallOptions): Promise<CacheRead> {
    if (!this.byChange) throw new Error('readChanges needs a store that reads by change');
    return this.serial(() => this.readOnce(opts));
  }

  /** Whether the store's reads by change come from a watch's copy, which may lag behind the store. */
  get fromWatch(): boolean {
    return this.store.changesFromWatch === true && this.store.readGroupChanges !== undefined;
  }

  /**
   * The group as the store holds it now: its listGroup, never a watch's copy. What a take that
   * depends on time passing rests on. The copy takes it in; the cursor stays (what comes after
   * it is written over this, as it is at that read).
   */
  reread(opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    return this.serial(async () => {
      this.refused = new Map();
      this.replace(await this.store.listGroup(this.group, opts));
      this.reads++;
      return this.snapshot();
    });
  }

  /** The group as the last read left it, without a read. */
  snapshot(): VersionedGroupRecord[] {
    return [...this.records.values()];
  }

  /** What a read leaves: `changes` as it brought them (null: in full), the group on demand, before the next read. */
  private answer(changes: readonly VersionedGroupRecord[] | null): CacheRead {
    const read = ++this.reads;
    const current = () => {
      if (read !== this.reads) throw new Error('GroupCache: a read answer asked for the group after a later read');
    };
    return {
      changes,
      all: () => {
        current();
        return this.snapshot();
      },
      version: (key) => {
        current();
        return this.records.get(key)?.version;
      },
    };
  }

  private async readOnce(opts: CallOptions | undefined): Promise<CacheRead> {
    const readChanges = this.store.readGroupChanges!.bind(this.store);
    // The refusals this read must explain: each came back before this read is sent, so the write
    // that won over it, if it went through the protocol, is one of the changes this read brings.
    const refused = this.refused;
    this.refused = new Map();
    // A read that fails changes nothing here: the cursor still says what the copy has seen (the
    // refusals are not kept: that read's error is the caller's, and the next write tells again).
    let changes = await readChanges(this.group, this.cursor, opts);
    if (!changes.full) {
      for (const r of changes.records) this.records.set(recordKey(r.record), r);
      this.cursor = changes.cursor;
      // Which record a deletion took, only a full read tells. Rare (a record deleted by hand),
      // so a second request.
      if (!this.deletionShown(changes) && !this.unexplained(refused)) return this.answer(changes.records);
      // The copy holds changes its reader has not been given: should the full request fail, the
      // next read must be a full one too, not the changes after them (quiet turns would take
      // those in alone: docs/design.md).
      this.cursor = undefined;
      changes = await readChanges(this.group, undefined, opts);
    }
    this.replace(changes.records);
    this.cursor = changes.cursor;
    this.deletionMark = changes.deletionMark;
    return this.answer(null);
  }

  /**
   * Whether an answer by change, applied to the copy, shows a deletion the copy missed: every
   * creation is a change, so a copy larger than the group's count holds a deleted record; a mark
   * moved since the last read, or not known then or now, may mean one was deleted.
   */
  private deletionShown(changes: GroupChanges): boolean {
    if (changes.total !== undefined) return this.records.size !== changes.total;
    return this.deletionMark === undefined || changes.deletionMark === null || changes.deletionMark !== this.deletionMark;
  }

  private noteRefused(record: GroupRecord, expectedVersion: string | null): void {
    this.refused.set(recordKey(record), expectedVersion);
  }

  /**
   * Whether a refused write shows the copy stale: it still holds the record at the version the
   * write expected (a create: still lacks it), after the changes of a read sent since.
   */
  private unexplained(refused: ReadonlyMap<string, string | null>): boolean {
    for (const [key, expected] of refused) {
      const held = this.records.get(key);
      if (expected === null ? held === undefined : held?.version === expected) return true;
    }
    return false;
  }

  private replace(list: VersionedGroupRecord[]): void {
    this.records.clear();
    for (const r of list) this.records.set(recordKey(r.record), r);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => {});
    return next;
  }
}
