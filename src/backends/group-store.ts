/**
 * The storage half of shard groups (docs/design.md, "Shard groups"), as LeaseStore is for one
 * lease: a GroupStore stores a group's records with compare-and-swap and makes no decision. The
 * algorithm lives in src/shards/.
 *
 * A group G has three kinds of record, each keyed by (kind, index):
 * - the group header (index 0): the shard count, written once, the high-water token, raised
 *   by every member before it issues tokens, and the longest lease any member announced;
 * - member slots (index 0 .. maxMembers − 1): a member's heartbeat and its session;
 * - shards (index 0 .. shards − 1): a shard's owner session and its fencing token.
 */
import type { CallOptions } from './lease-store.js';

/** The largest shard count a group may have, and the largest number of member slots. */
export const MAX_SHARDS = 4096;
export const MAX_MEMBER_SLOTS = 4096;

/** A group's header: what every member must agree on. Written once, by the group's first member. */
export interface GroupHeader {
  kind: 'group';
  index: 0;
  /** The number of shards, fixed for the group's life. */
  shards: number;
  /** When the group was created (wall time, to the millisecond). */
  createdAt: Date;
  /**
   * The group's high-water token: at least every shard token ever issued in the group. A member
   * raises it by compare-and-swap before it issues tokens above it, a block at a time
   * (docs/design.md, "A group-wide high-water token"). Absent on a header written before it
   * existed (an upgrade): the members then start from the highest token they have seen.
   */
  highWater?: number;
  /**
   * The longest lease duration any member slot of the group announced, in seconds, as far as
   * the members that raised it saw: raised by compare-and-swap as `highWater` is, never lowered,
   * written back with the header. Every member waits out an absent shard, and a session it never
   * saw announce a lease, for at least this long (docs/design.md, "The longest lease in the
   * header"). Absent on a header written before it existed, or by a member that saw no slot.
   */
  longestLeaseSeconds?: number;
}

/** `leaving`: the member is giving its shards up (a stop, or its app not eligible) and takes none. */
export type MemberState = 'active' | 'leaving';

/** One member slot: a member's heartbeat. Like a lease: held, renewed, released, or expired. */
export interface MemberSlot {
  kind: 'member';
  index: number;
  /** The member holding the slot; '' when free. */
  holderIdentity: string;
  /** The slot's token: grows by one on every acquisition, so (index, session) names one member's session. */
  session: number;
  state: MemberState;
  /** When the holder's last heartbeat started (its own clock); null when free. */
  renewTime: Date | null;
  /** How long others must see the slot unchanged before its session counts as ended. */
  leaseDurationSeconds: number;
}

/** One shard: who owns it, under which session, and its fencing token. Written only when its owner changes. */
export interface ShardRecord {
  kind: 'shard';
  index: number;
  /** The owner's identity (for people and `status`); '' when free. */
  holderIdentity: string;
  /** The owner's session: its slot and the slot's session; null when free. */
  owner: { slot: number; session: number } | null;
  /** The shard's fencing token: grows by one on every change of owner; never decreases, never reused. */
  token: number;
  /** When the current owner took it; null when free or never owned. */
  acquireTime: Date | null;
}

export type GroupRecord = GroupHeader | MemberSlot | ShardRecord;

export interface VersionedGroupRecord<R extends GroupRecord = GroupRecord> {
  record: R;
  /**
   * Opaque, as VersionedRecord's: changes on every write by anyone that changes a value (a
   * millisecond of a time included), and never repeats for a key, across deletes and re-creates.
   * A write of the very values the record holds may keep it (the Kubernetes API server persists
   * no no-op update): nothing changed, so a compare-and-swap from it is still right. A heartbeat
   * or a change of owner always changes a value (renewTime, the owner, the token).
   */
  version: string;
}

/** The answer of GroupStore.readGroupChanges. */
export type GroupChanges = ChangesRead & DeletionEvidence;

/** What every answer of GroupStore.readGroupChanges carries. */
export interface ChangesRead {
  /** When `full`, every record of the group; otherwise those written since the cursor, maybe a few more. */
  records: VersionedGroupRecord[];
  /** Opaque: where the next read continues from. */
  cursor: string;
  /** Whether `records` is the whole group: a record the caller holds that is not in it was deleted. */
  full: boolean;
}

/**
 * How an answer shows that a record of the group was deleted, which no change shows (a deletion
 * leaves no record behind to bring), read in the same snapshot as the changes. One of:
 * - `total`: how many records the group has at this read. Every creation is a change, so a caller
 *   whose copy, with these changes applied, holds more records than this has missed a deletion.
 *   It costs the store a count of the group (PostgreSQL, Kubernetes, the in-memory store).
 * - `deletionMark`: a value the store moves at every deletion of one of the group's records, by
 *   anyone. The same mark at two reads means no record of the group was deleted between them;
 *   null means the store cannot tell (it keeps no mark for the group: none written yet, or its
 *   mark deleted by hand), nor can a caller that does not know the mark before. One step down an index where a count is a pass over the group (SQLite).
 * Either way a caller reads in full when it sees a deletion: which record went, only a full read
 * shows; a deletion is then gone from its copy at the next read, as from a list.
 */
export type DeletionEvidence = { total: number; deletionMark?: never } | { deletionMark: string | null; total?: never };

/**
 * The contract every group store keeps, stated once as a suite (src/testing/group-store-contract.ts)
 * and run against the in-memory store, SQLite, PostgreSQL and Kubernetes. Records of one group
 * never appear in another's list; (kind, index) is the key within a group.
 */
export interface GroupStore {
  /** 'sqlite', 'postgres', 'kubernetes' or 'memory'; used in logs and metric labels. */
  readonly backend: string;
  /** Where the records live (a file path, a table, a namespace), for messages. */
  readonly location: string;
  /** The largest token or session the store can hold (a Lease's int32; else 2^53 − 1). */
  readonly maxToken?: number;

  /** Every record of the group, in one request; [] for a group with none. */
  listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]>;

  /**
   * Optional: what changed in the group since `cursor` (a cursor this call returned before, or
   * undefined for a full read), in one request (docs/design.md, "Shard reads by change"). Every
   * record created or written since the cursor is in `records`, as it is at this read (one written
   * before may be there too: the caller overwrites what it holds with each, in order). A deletion leaves no
   * change behind: only a `full` answer, the whole group, shows which record is gone, and
   * its DeletionEvidence shows that one is, so a caller reads in full then (and at start). A cursor the store cannot continue
   * from (malformed, another file, another server) gets a full answer, never an error.
   */
  readGroupChanges?(group: string, cursor: string | undefined, opts?: CallOptions): Promise<GroupChanges>;

  /**
   * True when readGroupChanges answers from a copy kept by a watch (Kubernetes), not from the
   * store at the call: a write, another's or a deletion, may show a little later (the store's own
   * writes show at once), and a watch that stalls shows nothing new. Compare-and-swap keeps a
   * write from such a view safe (a stale version loses); a judgment that rests on time passing
   * does not, so the member re-reads with listGroup first (docs/design.md, "Shard reads by change").
   */
  readonly changesFromWatch?: boolean;

  /** Creates the record; ConflictError when one with its kind and index exists. Returns the new version. */
  createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string>;

  /**
   * Replaces the record of the same kind and index only if its version is still
   * `expectedVersion`; ConflictError otherwise (changed, or deleted: never recreated by an
   * update). Returns the new version.
   */
  updateGroupRecord(group: string, record: GroupRecord, expectedVersion: string, opts?: CallOptions): Promise<string>;

  /**
   * Optional: several writes of one group in one round (docs/design.md, "Writes in batches"):
   * one transaction on SQLite and PostgreSQL, concurrent requests on Kubernetes. Each write is
   * its own compare-and-swap, as createGroupRecord (`expectedVersion` null) or
   * updateGroupRecord would make it: one that lost its race is reported as a conflict in its
   * place, and the others are written. The outcomes come in the order of the writes. The whole
   * call is refused, nothing written, when any record is (a bound, a group name) or two writes
   * name one record. A store without it gets the writes one by one (writeEachGroupRecord).
   */
  writeGroupRecords?(group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]>;

  /**
   * Optional: raises the group header's highWater in one transaction, with no version to lose a
   * race on (SQLite, PostgreSQL; docs/design.md, "A group-wide high-water token"): from the
   * larger of the stored highWater and `raise.atLeast`, by `raise.count`, every other field as
   * stored. Answers where the raise started (the tokens reserved are from + 1 to from + count,
   * issued to nobody else) and the header as written. NotFoundError when the group has no header,
   * ConflictError when it says another shard count than `raise.shards`, InvalidRecordError when
   * the raise would pass the store's maxToken: nothing written in each case. A store without it
   * is raised by compare-and-swap (updateGroupRecord), one member at a time.
   */
  raiseHighWater?(group: string, raise: HighWaterRaise, opts?: CallOptions): Promise<RaisedHighWater>;

  /**
   * Optional: a raise of the header's highWater (raiseHighWater, by `takes.length`) and the shard
   * writes its tokens are for, in one transaction (SQLite, PostgreSQL; docs/design.md, "A take's raise in its
   * batch"): the members taking at once after a leave each wait for the file's lock once, not
   * twice. `takes[i]` is written with token from + 1 + i (the token it carries is not read), each
   * its own compare-and-swap as in writeGroupRecords: one that lost its race is reported in its
   * place and its token is issued to nobody. Refused whole, nothing written, as raiseHighWater or
   * writeGroupRecords would refuse, or when a write is not of a shard. A store without it raises,
   * then writes the batch.
   */
  raiseAndTake?(group: string, raise: Omit<HighWaterRaise, 'count'>, takes: readonly GroupWrite[], opts?: CallOptions): Promise<RaisedAndTaken>;

  /**
   * Optional: `onChange()` after any change of the group's records, as soon as the store can
   * tell. A hint only: late, lost or spurious calls must not matter, every decision is a list
   * and a compare-and-swap. `onHealth(true)`: every change from now on will be reported.
   */
  watchGroup?(group: string, onChange: () => void, onHealth?: (healthy: boolean) => void): () => void;
}

/** A raise of the header's highWater (GroupStore.raiseHighWater). */
export interface HighWaterRaise {
  /** The raise starts at least here: the highest token or highWater the member saw. */
  atLeast: number;
  /** How many tokens it reserves, at least 1. */
  count: number;
  /** The shard count the member's group has: a header saying another is not raised. */
  shards: number;
}

/** What a raise wrote: the block is from + 1 to header.record.highWater. */
export interface RaisedHighWater {
  from: number;
  header: VersionedGroupRecord<GroupHeader>;
}

/** What raiseAndTake wrote: the raise, and each take's outcome in the order of the takes. */
export interface RaisedAndTaken extends RaisedHighWater {
  outcomes: GroupWriteOutcome[];
}

/** One write of a batch: a create when `expectedVersion` is null, else a compare-and-swap from it. */
export interface GroupWrite {
  record: GroupRecord;
  expectedVersion: string | null;
}

/** What became of one write of a batch: its new version, or the conflict that left it out. */
export type GroupWriteOutcome = { written: true; version: string } | { written: false; conflict: string };

/** The key of a record within its group, for maps and messages: `member/3`, `shard/42`, `group/0`. */
export function recordKey(r: Pick<GroupRecord, 'kind' | 'index'>): string {
  return `${r.kind}/${r.index}`;
}
