import type { GroupRecord, VersionedGroupRecord } from '../backends/group-store.js';

/**
 * A group's records as a store holds them, each with its change number (its version), for the
 * tests that feed one GroupView whole and another by change (quiet-turn-facts.test.ts,
 * group-view-changes.test.ts). No calls, no faults: the model of what a read brings.
 */
export class ModelGroupRecords {
  private version = 0;
  private readonly records = new Map<string, { v: VersionedGroupRecord; seq: number }>();
  /** A record was deleted since the last read: a copy would read in full (GroupCache). */
  deletedSince = false;
  private cursor = 0;

  put(r: GroupRecord): VersionedGroupRecord {
    const v = { record: r, version: String(++this.version) };
    this.records.set(key(r), { v, seq: this.version });
    return v;
  }

  /** The record of `k` (`shard/3`, `member/1`, `group/0`), if any. */
  get<R extends GroupRecord>(k: string): R | undefined {
    return this.records.get(k)?.v.record as R | undefined;
  }

  delete(k: string): boolean {
    const gone = this.records.delete(k);
    this.deletedSince ||= gone;
    return gone;
  }

  all(): VersionedGroupRecord[] {
    return [...this.records.values()].map((e) => e.v);
  }

  /**
   * What changed since the last read, as a read by change brings it; with `more`, each record
   * that did not change comes too when it draws below 0.02, as a store may bring a few more
   * (GroupChanges). Without it, no draw is taken.
   */
  changes(more?: () => number): VersionedGroupRecord[] {
    const out = [...this.records.values()].filter((e) => e.seq > this.cursor || (more !== undefined && more() < 0.02)).map((e) => e.v);
    this.cursor = this.version;
    return out;
  }
}

/** One read of a ModelCopy: what the store brought, null in `changes` when the copy read whole, and the copy after it. */
export interface ModelRead {
  brought: VersionedGroupRecord[];
  changes: VersionedGroupRecord[] | null;
  /** The version of record `k` in the copy after this read (GroupCache's CacheRead.version). */
  version(k: string): string | undefined;
}

/**
 * A member's copy of the model's records, read as GroupCache reads the store: by change, and
 * whole when the copy holds more records than the group (a deletion it can count). A record
 * created and deleted between two reads (one of ours, deleted by hand before the read) is one
 * the copy never held: no count shows it, and the view is what must notice.
 */
export class ModelCopy {
  private readonly records = new Map<string, VersionedGroupRecord>();

  constructor(private readonly store: ModelGroupRecords) {
    for (const v of store.all()) this.records.set(key(v.record), v);
  }

  read(more?: () => number): ModelRead {
    const brought = this.store.changes(more);
    for (const v of brought) this.records.set(key(v.record), v);
    const all = this.store.all();
    const whole = this.records.size !== all.length;
    if (whole) {
      this.records.clear();
      for (const v of all) this.records.set(key(v.record), v);
    }
    this.store.deletedSince = false;
    const copy = new Map(this.records);
    return { brought, changes: whole ? null : brought, version: (k) => copy.get(k)?.version };
  }
}

const key = (r: GroupRecord) => `${r.kind}/${r.index}`;
