/**
 * A member's copy of its group's records, kept up to date by reading only what changed
 * (GroupStore.readGroupChanges; docs/design.md, "Planned: shard reads by change"). The member
 * asks it for the group where it listed the group before: an idle group then costs each read the
 * other members' heartbeats, not N + M + 1 records.
 *
 * A deletion leaves no change behind, only a smaller count of the group's records: a read that
 * finds the copy larger than the group reads it in full at once, so a deleted record is gone
 * from the copy at the next read, as from a list. A read is also a full one at start, once every
 * `fullEveryMs` (a minute: a version written by hand below the cursor is found then), and
 * whenever the store cannot continue from the cursor.
 * A store without readGroupChanges is listed every time, as before; the copy then keeps nothing.
 *
 * Where the store answers from a copy kept by a watch (`fromWatch`: Kubernetes), the copy may
 * lag, so whoever takes from a judgment that rests on time passing (an owner's session over
 * because its slot did not change, an absent record waited out) calls `reread()` first: the
 * store's listGroup, sent now, not what the watch has told so far.
 */
import type { Clock } from '../clock.js';
import type { CallOptions } from '../backends/lease-store.js';
import { recordKey, type GroupStore, type VersionedGroupRecord } from '../backends/group-store.js';

/** How often a read is a full one, at least. */
export const FULL_READ_INTERVAL_MS = 60_000;

export class GroupCache {
  private readonly records = new Map<string, VersionedGroupRecord>();
  /** Where the next read continues from; undefined: the next read is a full one. */
  private cursor: string | undefined;
  /** When the last full read was sent (monotonic ms). */
  private fullSentMono = -Infinity;
  /** The read in flight: reads run one at a time, so an older answer never lands on a newer one. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: GroupStore,
    private readonly group: string,
    private readonly clock: Clock,
    private readonly fullEveryMs = FULL_READ_INTERVAL_MS,
  ) {}

  /** One read: the changes since the last, or the whole group when one is due. Returns the group. */
  read(opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    // The store's own list, untouched: not one await more than before this copy existed (the
    // shard simulator's fingerprint, whose store has no readGroupChanges, depends on it).
    if (!this.store.readGroupChanges) return this.store.listGroup(this.group, opts);
    return this.serial(() => this.readOnce(false, opts));
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
      this.replace(await this.store.listGroup(this.group, opts));
      return this.snapshot();
    });
  }

  /** The group as the last read left it, without a read. */
  snapshot(): VersionedGroupRecord[] {
    return [...this.records.values()];
  }

  private async readOnce(forceFull: boolean, opts: CallOptions | undefined): Promise<VersionedGroupRecord[]> {
    const sent = this.clock.monotonic();
    const due = forceFull || this.cursor === undefined || sent - this.fullSentMono >= this.fullEveryMs;
    const readChanges = this.store.readGroupChanges?.bind(this.store);
    // A read that fails changes nothing here: the cursor still says what the copy has seen.
    if (!readChanges) {
      this.replace(await this.store.listGroup(this.group, opts));
      this.fullSentMono = sent;
      return this.snapshot();
    }
    let changes = await readChanges(this.group, due ? undefined : this.cursor, opts);
    if (!changes.full) {
      for (const r of changes.records) this.records.set(recordKey(r.record), r);
      this.cursor = changes.cursor;
      if (this.records.size === changes.total) return this.snapshot();
      // Every creation was a change, so a copy larger than the group holds a deleted record:
      // which one, only a full read tells. Rare (a record deleted by hand), so a second request.
      changes = await readChanges(this.group, undefined, opts);
    }
    this.replace(changes.records);
    this.fullSentMono = sent;
    this.cursor = changes.cursor;
    return this.snapshot();
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
