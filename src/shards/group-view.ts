/**
 * What one member believes about its group: the records of its last list, and, for each of
 * them, what only observation over time can tell (docs/design.md, "Why no shard has two
 * owners"). It never calls the store and tells nobody; the member (shard-member.ts) feeds it
 * each list and asks it questions.
 *
 * Expiry is judged as client-go judges a lease's: on this member's monotonic clock, from the
 * moment it last saw a slot's content change (holder, session, state, heartbeat), never by
 * comparing a record's time with the local clock. A session that is no longer in its slot
 * (released, re-taken, the slot gone) counts from the moment this member noticed it leave (the last time), so
 * such a change can start the count but never end it early.
 */
import type { Clock } from '../clock.js';
import { recordKey, type GroupHeader, type GroupRecord, type MemberSlot, type ShardRecord, type VersionedGroupRecord } from '../backends/group-store.js';

/** A member's session: its slot and the slot's session number. */
export interface SessionId {
  slot: number;
  session: number;
}

export const sessionKey = (s: SessionId): string => `${s.slot}/${s.session}`;

interface SlotSeen {
  content: string;
  /** When this member last saw the slot's content change (or first saw it). */
  changedAtMono: number;
  /**
   * Whether this member has seen the slot change or appear: false while it holds what this
   * member's first list found there, which may be a member that died long before.
   */
  witnessed: boolean;
}

export class GroupView {
  private header: VersionedGroupRecord<GroupHeader> | null = null;
  private readonly slots = new Map<number, VersionedGroupRecord<MemberSlot>>();
  /** Replaced whole by each list (observe): copying 4,096 entries into a kept map cost a turn its time. */
  private shards = new Map<number, VersionedGroupRecord<ShardRecord>>();
  private readonly slotSeen = new Map<number, SlotSeen>();
  /**
   * How many of `shards` name each session (slot → session → count), kept with them: what tells
   * observeChanges, without a pass over all N, whether a session is still named by a shard.
   */
  private named = new Map<number, Map<number, number>>();
  /** Sessions seen owning a shard but no longer in their slot: when first noticed since they were last seen in it. */
  private readonly goneSince = new Map<string, number>();
  /**
   * The lease duration each session announced in its slot (the last record seen with it, held
   * or released): a session counts as live for its own lease duration, not this member's, so a
   * member with a longer lease keeps what it holds for as long as it said (a leaver keeps a
   * shard whose work did not stop until it could have expired by its own lease).
   */
  private readonly sessionLeaseMs = new Map<string, number>();
  /** Shards seen absent: since when (a gap in this member's lists starts the wait over). */
  private readonly absentSince = new Map<number, number>();
  /** The highest token seen for each shard and session for each slot, records deleted or not. */
  private readonly highestToken = new Map<number, number>();
  private readonly highestSession = new Map<number, number>();
  /**
   * The highest shard token or header highWater this member ever saw in the group, records and
   * header deleted or not: a header written back, or raised, starts at least here.
   */
  private highestInGroup = 0;
  /**
   * The longest lease duration any slot ever announced to this member, or the group header said
   * one did (its longestLeaseSeconds, raised by the members that saw it: longest-lease.ts): a
   * replaced store (or a deleted slot) loses the slot of a member on a longer lease that may
   * still work on a shard, and the absence wait must not shrink with it (seed 154 of the shard
   * simulation), nor be shorter for a member that never saw that slot (seed 1400).
   */
  private longestLeaseSeenMs = 0;
  /** When the last list this view holds was sent (its answer is at least this fresh). */
  private listedAtMono: number | null = null;
  /** A change may have gone unseen since the last list (interruptAbsence): the next list starts every absence wait over. */
  private absenceInterrupted = false;
  /**
   * Moved on whenever the view's owner of a shard changes (another session, free, or the record
   * gone or back): with the members counted, all a target rests on (TargetMemo). Another
   * member's heartbeat does not move it.
   */
  private ownersEpochCount = 0;
  /**
   * Moved on at every change that can change a plan's facts other than by time passing
   * (docs/design.md, "Quiet turns"): a whole-group observe, a write or a read by change of a
   * shard or the header, a slot write or read that changes more than the slot's heartbeat, a
   * heartbeat that revives a session or is the first seen of its slot, an interrupted absence.
   */
  private structureEpochCount = 0;
  /**
   * The structure epoch at which it last moved for anything a list of shards and sessions cannot
   * say (an absence, a whole observe, a slot write of ours, a change of the absence wait): every
   * move after it changed shard records and the standing of sessions alone, listed in `moves`
   * (changesSince).
   */
  private listedSinceEpoch = 0;
  /** Since listedSinceEpoch, each move's epoch and what it changed: a shard, or a session's key, as pairs [epoch, shard or key, ...]. */
  private moves: (number | string)[] = [];
  /**
   * A write of our slot changed more than a heartbeat since the last whole observe (a rejoin):
   * what observe derives from the whole group (our old session no longer in its slot, named by
   * a shard, counts from now) is owed, so the next read is observed whole, not by change.
   */
  private observeOwed = false;
  /**
   * Our writes of shards and of the header since the last read, by record key, with the version
   * each got. The view holds them until a read shows them; a read by change shows only what
   * changed, so it is taken in as such only where the reader's copy holds each at the version the
   * view holds (observeChanges' `copy`): a record of ours deleted before the read (by hand), which
   * the copy never held, is then found by a whole observe, as it always was.
   */
  private writtenSinceRead = new Map<string, string>();
  /**
   * The sessions our shard writes since the last read named or stopped naming: their standing
   * (out of their slot from when, forgotten) is judged at the next read, as a whole observe then
   * would judge it, not at the write (a session that names itself again by then keeps its count).
   */
  private touchedSinceRead: SessionId[] = [];
  /**
   * How many sessions this view saw arrive in a slot after its first list (a newcomer's join, a
   * member's rejoin): the member greets each with a heartbeat at once (SessionUpkeep.greetDue).
   */
  private sessionsArrivedCount = 0;

  constructor(
    private readonly clock: Clock,
    /** The shard count of this member's group: shards past it are not looked at. */
    readonly shardCount: number,
    /** This member's lease duration: the wait for an absent shard and for a session no longer in its slot. */
    private readonly leaseDurationMs: number,
    /**
     * How far apart two lists may be and still count as one unbroken view of an absence: a
     * member lists every retryPeriod, so a gap longer than this (lists that failed, a pause) may
     * have hidden a record created and deleted meanwhile, whose owner may still work, and the
     * absence wait starts over, as a lease's does (RecordView.noteAbsent).
     */
    private readonly pollGapMs: number,
  ) {}

  /** Takes in one list, sent at `sentAtMono`. */
  observe(list: readonly VersionedGroupRecord[], sentAtMono: number): void {
    const now = this.clock.monotonic();
    this.structureMoved(null);
    this.observeOwed = false;
    this.writtenSinceRead.clear();
    this.touchedSinceRead = [];
    const first = this.listedAtMono === null;
    const gap = (this.listedAtMono !== null && sentAtMono - this.listedAtMono > this.pollGapMs) || this.absenceInterrupted;
    this.absenceInterrupted = false;
    this.listedAtMono = sentAtMono;
    this.header = null;
    const slots = new Map<number, VersionedGroupRecord<MemberSlot>>();
    const shards = new Map<number, VersionedGroupRecord<ShardRecord>>();
    for (const v of list) {
      const r: GroupRecord = v.record;
      if (r.kind === 'group') {
        this.header = v as VersionedGroupRecord<GroupHeader>;
        this.highestInGroup = Math.max(this.highestInGroup, r.highWater ?? 0);
        this.longestLeaseSeenMs = Math.max(this.longestLeaseSeenMs, (r.longestLeaseSeconds ?? 0) * 1000);
      } else if (r.kind === 'member') slots.set(r.index, v as VersionedGroupRecord<MemberSlot>);
      else if (r.index < this.shardCount) shards.set(r.index, v as VersionedGroupRecord<ShardRecord>);
    }
    for (const [i, v] of slots) {
      const before = this.slots.get(i)?.record;
      if (!first && v.record.holderIdentity !== '' && (!before || before.holderIdentity !== v.record.holderIdentity || before.session !== v.record.session))
        this.sessionsArrivedCount++;
      const key = sessionKey({ slot: i, session: v.record.session });
      this.sessionLeaseMs.set(key, v.record.leaseDurationSeconds * 1000);
      // Back in its slot: should it leave it again (a store replaced twice), its lease duration
      // counts from then, not from an earlier notice (chaos seed 1031 took a shard at once).
      if (v.record.holderIdentity !== '') this.goneSince.delete(key);
      const content = slotContent(v.record);
      const seen = this.slotSeen.get(i);
      if (!seen || seen.content !== content) this.slotSeen.set(i, { content, changedAtMono: now, witnessed: !first || seen !== undefined });
      this.bump(this.highestSession, i, v.record.session);
      this.longestLeaseSeenMs = Math.max(this.longestLeaseSeenMs, v.record.leaseDurationSeconds * 1000);
    }
    for (const i of [...this.slotSeen.keys()]) if (!slots.has(i)) this.slotSeen.delete(i);
    this.slots.clear();
    for (const [i, v] of slots) this.slots.set(i, v);
    // A gap, or a store replaced under this member, may have hidden a session's return to its
    // slot and its heartbeats (as it may hide a record: absentSince starts over below): a
    // session out of its slot counts from now again, never from a notice made before.
    if (gap) for (const k of this.goneSince.keys()) this.goneSince.set(k, now);
    let ownersMoved = false;
    for (let s = 0; s < this.shardCount; s++) {
      const v = shards.get(s);
      if (!ownersMoved && !sameOwner(this.shards.get(s)?.record.owner, v?.record.owner)) ownersMoved = true;
      if (v) {
        this.absentSince.delete(s);
        this.bump(this.highestToken, s, v.record.token);
        this.highestInGroup = Math.max(this.highestInGroup, v.record.token);
        const o = v.record.owner;
        if (o) {
          this.bump(this.highestSession, o.slot, o.session);
          if (!this.current(o) && !this.goneSince.has(sessionKey(o))) this.goneSince.set(sessionKey(o), now);
        }
      } else if (gap || !this.absentSince.has(s)) this.absentSince.set(s, now);
    }
    this.shards = shards;
    if (ownersMoved) this.ownersEpochCount++;
    // A session no shard names any more needs no memory: it never takes a shard again. Its key
    // made once per session, not once per shard (N strings per list at N = 4096).
    this.named = new Map();
    for (const v of shards.values()) this.countNamed(v.record.owner, 1);
    const named = new Set<string>();
    for (const [slot, sessions] of this.named) for (const session of sessions.keys()) named.add(sessionKey({ slot, session }));
    for (const k of [...this.goneSince.keys()]) if (!named.has(k)) this.goneSince.delete(k);
    const inSlots = new Set([...slots.values()].map((v) => sessionKey({ slot: v.record.index, session: v.record.session })));
    for (const k of [...this.sessionLeaseMs.keys()]) if (!named.has(k) && !inSlots.has(k)) this.sessionLeaseMs.delete(k);
  }

  /**
   * Takes in a read by change (`changes`, sent at `sentAtMono`: the records created or updated
   * since the last read, never a deletion) in O(changes), leaving the view as observe would leave
   * it given the last group with these records written over it. Exact because, between two
   * observes, what observe derives from the whole group can change only where a record changed:
   * every unchanged record already had its effect, and a session's standing (current, named by a
   * shard) moves only with a changed slot or shard, whose sessions before and after are looked at
   * again. So it refuses (false, nothing changed) only where observe would do more than that:
   * before the first list, after a gap in the lists (the poll gap, an interrupted absence: every
   * wait starts over), after a write of our slot that changed more than a heartbeat (observeOwed:
   * what it derives, a session out of its slot counting from now, is a whole observe's), and
   * where `copy` (the reader's copy after this read: a record key's version there) does not hold
   * a shard or header we wrote since the last read as the view will (writtenSinceRead: one
   * deleted before the read, which the copy never held). Without `copy`, wherever we wrote one.
   *
   * The structure epoch moves when anything but a heartbeat (a held slot's same holder, session,
   * state and lease duration) changed, and for a heartbeat that revives a session judged over or
   * is the first this member sees of its slot: a live, witnessed session's heartbeat changes no
   * fact of a plan (docs/design.md, "Quiet turns").
   */
  observeChanges(changes: readonly VersionedGroupRecord[], sentAtMono: number, copy?: (key: string) => string | undefined): boolean {
    if (this.listedAtMono === null || this.observeOwed || this.absenceInterrupted || sentAtMono - this.listedAtMono > this.pollGapMs) return false;
    if (!this.copyHoldsOurWrites(changes, copy)) return false;
    this.writtenSinceRead.clear();
    const now = this.clock.monotonic();
    this.listedAtMono = sentAtMono;
    let structure = false;
    let ownersMoved = false;
    // What the read changed for changesSince: the shards, the sessions a slot's change moved; and
    // whether it moved the absence wait (every absent shard's judgment and unannounced session's end).
    const waitBefore = this.absenceWaitMs();
    const changedShards: number[] = [];
    const changedSessions: string[] = [];
    // The sessions whose standing may have moved: a changed slot's before, a changed shard's owner before and after.
    const touched: SessionId[] = [];
    for (const v of changes) {
      const r = v.record;
      const held = r.kind === 'group' ? this.header : r.kind === 'member' ? this.slots.get(r.index) : this.shards.get(r.index);
      // A read may bring a record again, unchanged (GroupChanges: "maybe a few more"; a re-read's
      // records after its cursor): its version says so, and it has had its effect.
      if (held?.version === v.version) continue;
      if (r.kind === 'group') {
        structure = true;
        this.header = v as VersionedGroupRecord<GroupHeader>;
        this.highestInGroup = Math.max(this.highestInGroup, r.highWater ?? 0);
        this.longestLeaseSeenMs = Math.max(this.longestLeaseSeenMs, (r.longestLeaseSeconds ?? 0) * 1000);
      } else if (r.kind === 'member') {
        if (!this.slotChanged(v as VersionedGroupRecord<MemberSlot>, now, touched, changedSessions)) structure = true;
      } else if (r.index < this.shardCount) {
        const before = held as VersionedGroupRecord<ShardRecord> | undefined;
        structure = true;
        changedShards.push(r.index);
        if (!sameOwner(before?.record.owner, r.owner)) {
          ownersMoved = true;
          this.countNamed(before?.record.owner, -1);
          this.countNamed(r.owner, 1);
          if (before?.record.owner) touched.push(before.record.owner);
        }
        this.shards.set(r.index, v as VersionedGroupRecord<ShardRecord>);
        this.absentSince.delete(r.index);
        this.bump(this.highestToken, r.index, r.token);
        this.highestInGroup = Math.max(this.highestInGroup, r.token);
        if (r.owner) {
          this.bump(this.highestSession, r.owner.slot, r.owner.session);
          touched.push(r.owner);
        }
      }
    }
    // Our writes' sessions are judged now, as the whole observe this read used to be would judge
    // them. One that starts counting out of its slot now (named by a record of ours, not in its
    // slot: a write-back naming our ended session) gets an end: the structure moves, its key listed.
    for (const key of this.standingMoved(this.touchedSinceRead, now)) {
      structure = true;
      changedSessions.push(key);
    }
    this.touchedSinceRead = [];
    this.standingMoved(touched, now);
    // A header that raised only highWater moves no fact of a shard; one that raised the longest
    // lease, or a slot announcing a longer one, moves every absence wait and every unannounced session's end.
    if (structure) this.structureMoved(this.absenceWaitMs() !== waitBefore ? null : { shards: changedShards, sessions: changedSessions });
    if (ownersMoved) this.ownersEpochCount++;
    return true;
  }

  /**
   * Whether the reader's copy after this read (`copy`: a record key's version there) holds each
   * record we wrote since the last read as the view will: at the version `changes` bring for it,
   * else at the one the view holds. Without a copy to ask, only when we wrote none.
   */
  private copyHoldsOurWrites(changes: readonly VersionedGroupRecord[], copy: ((key: string) => string | undefined) | undefined): boolean {
    if (this.writtenSinceRead.size === 0) return true;
    if (!copy) return false;
    const brought = new Map(changes.map((v) => [recordKey(v.record), v.version]));
    for (const key of this.writtenSinceRead.keys()) {
      const [kind, index] = key.split('/') as [GroupRecord['kind'], string];
      const held = kind === 'group' ? this.header : kind === 'member' ? this.slots.get(Number(index)) : this.shards.get(Number(index));
      const want = brought.get(key) ?? held?.version;
      if (want === undefined || copy(key) !== want) return false;
    }
    return true;
  }

  /**
   * What observe's pass over the shards and its clean-up do, for the sessions whose standing a
   * change can have moved. Returns the keys of those that start counting out of their slot now.
   */
  private standingMoved(touched: readonly SessionId[], now: number): string[] {
    const started: string[] = [];
    for (const id of touched) {
      const key = sessionKey(id);
      if (this.namedCount(id) === 0) {
        this.goneSince.delete(key);
        if (this.slots.get(id.slot)?.record.session !== id.session) this.sessionLeaseMs.delete(key);
      } else if (!this.current(id) && !this.goneSince.has(key)) {
        this.goneSince.set(key, now);
        started.push(key);
      }
    }
    return started;
  }

  /**
   * Does to slot record `v`, brought by a read by change, what observe does to it; adds the
   * sessions whose standing it may move to `touched`. True when it was a heartbeat that changes
   * no fact of a plan (observeChanges): its holder, session, state and lease duration unchanged,
   * its session live and its slot witnessed before it. Else the keys of the sessions whose
   * judgment it may move (the slot's session before and now) go to `changed`.
   */
  private slotChanged(v: VersionedGroupRecord<MemberSlot>, now: number, touched: SessionId[], changed: string[]): boolean {
    const r = v.record;
    const id = { slot: r.index, session: r.session };
    const before = this.slots.get(r.index)?.record;
    const seen = this.slotSeen.get(r.index);
    const content = slotContent(r);
    if (before && r.holderIdentity !== '' && sameSession(before, r)) {
      // A heartbeat: what else observe does to a slot holds already (its session's lease and
      // standing, the highest session), the session being the one the slot held.
      const quiet = seen!.content === content || (seen!.witnessed && this.live(id));
      if (seen!.content !== content) this.slotSeen.set(r.index, { content, changedAtMono: now, witnessed: true });
      this.slots.set(r.index, v);
      if (!quiet) changed.push(sessionKey(id));
      return quiet;
    }
    if (r.holderIdentity !== '' && (!before || before.holderIdentity !== r.holderIdentity || before.session !== r.session)) this.sessionsArrivedCount++;
    const key = sessionKey(id);
    this.sessionLeaseMs.set(key, r.leaseDurationSeconds * 1000);
    if (r.holderIdentity !== '') this.goneSince.delete(key);
    if (!seen || seen.content !== content) this.slotSeen.set(r.index, { content, changedAtMono: now, witnessed: true });
    this.slots.set(r.index, v);
    this.bump(this.highestSession, r.index, r.session);
    this.longestLeaseSeenMs = Math.max(this.longestLeaseSeenMs, r.leaseDurationSeconds * 1000);
    // The session the slot held may be current no more. Its new one, if not current, was not
    // before either (another session, or no slot record): what observe derives for it holds.
    if (before) touched.push({ slot: r.index, session: before.session });
    changed.push(key);
    if (before) changed.push(sessionKey({ slot: r.index, session: before.session }));
    return false;
  }

  /** How many of the view's shards name session `id`. */
  private namedCount(id: SessionId): number {
    return this.named.get(id.slot)?.get(id.session) ?? 0;
  }

  /** One shard of the view names `o` more (+1) or no more (−1); nothing for no owner. */
  private countNamed(o: SessionId | null | undefined, by: 1 | -1): void {
    if (!o) return;
    let sessions = this.named.get(o.slot);
    if (!sessions) this.named.set(o.slot, (sessions = new Map<number, number>()));
    const n = (sessions.get(o.session) ?? 0) + by;
    if (n > 0) sessions.set(o.session, n);
    else if (sessions.delete(o.session) && sessions.size === 0) this.named.delete(o.slot);
  }

  /**
   * How long session `id` counts as live once it stops changing: the longer of its announced
   * lease duration and this member's. A session this member never saw announce one (its slot
   * gone with a replaced store, a record written back by its holder: vanished-shards.ts) counts
   * for the longest lease any slot announces, as an absence is waited out: its holder may be on
   * a longer lease and keep its shard's work until it could have expired by it.
   */
  private leaseOf(id: SessionId): number {
    const announced = this.sessionLeaseMs.get(sessionKey(id));
    return announced === undefined ? this.absenceWaitMs() : Math.max(this.leaseDurationMs, announced);
  }

  /**
   * A write of ours landed: the view holds it until the next list. A shard's or the header's is
   * taken in as a read by change takes it in, its sessions' standing looked at again at the next
   * read (touchedSinceRead), so that read may be one by change; our slot's, beyond a heartbeat,
   * leaves a whole observe owed.
   */
  wrote(v: VersionedGroupRecord): void {
    const r = v.record;
    if (r.kind === 'member') {
      const held = this.slots.get(r.index)?.record;
      // Our heartbeat changes no fact of a plan; anything else of our slot may.
      const quiet =
        held !== undefined && sameSession(held, r) && r.holderIdentity !== '' && this.witnessed(r.index) && this.live({ slot: r.index, session: r.session });
      if (!quiet) this.structureChanged();
      this.slots.set(r.index, v as VersionedGroupRecord<MemberSlot>);
      this.slotSeen.set(r.index, { content: slotContent(r), changedAtMono: this.clock.monotonic(), witnessed: true });
      this.sessionLeaseMs.set(sessionKey({ slot: r.index, session: r.session }), r.leaseDurationSeconds * 1000);
      this.bump(this.highestSession, r.index, r.session);
      // Our own lease, announced: the header is raised to it in the same turn (HeaderKeeper.keep).
      this.longestLeaseSeenMs = Math.max(this.longestLeaseSeenMs, r.leaseDurationSeconds * 1000);
    } else if (r.kind === 'shard') {
      this.structureMoved({ shards: [r.index], sessions: [] });
      this.writtenSinceRead.set(recordKey(r), v.version);
      const before = this.shards.get(r.index)?.record.owner;
      if (!sameOwner(before, r.owner)) {
        this.ownersEpochCount++;
        this.countNamed(before, -1);
        this.countNamed(r.owner, 1);
        if (before) this.touchedSinceRead.push(before);
      }
      this.shards.set(r.index, v as VersionedGroupRecord<ShardRecord>);
      this.absentSince.delete(r.index);
      this.bump(this.highestToken, r.index, r.token);
      this.highestInGroup = Math.max(this.highestInGroup, r.token);
      if (r.owner) {
        this.bump(this.highestSession, r.owner.slot, r.owner.session);
        this.touchedSinceRead.push(r.owner);
      }
    } else {
      const longestBefore = this.longestLeaseSeenMs;
      this.header = v as VersionedGroupRecord<GroupHeader>;
      this.highestInGroup = Math.max(this.highestInGroup, r.highWater ?? 0);
      this.longestLeaseSeenMs = Math.max(this.longestLeaseSeenMs, (r.longestLeaseSeconds ?? 0) * 1000);
      this.structureMoved(this.longestLeaseSeenMs === longestBefore ? { shards: [], sessions: [] } : null);
      this.writtenSinceRead.set(recordKey(r), v.version);
    }
  }

  /**
   * The longest lease any slot announced to this member or the header held, ever (0 before any):
   * what it raises the header's longestLeaseSeconds to.
   */
  get longestLeaseSeen(): number {
    return this.longestLeaseSeenMs;
  }

  /** Moves on whenever a shard's owner changes in the view (ownersEpochCount). */
  get ownersEpoch(): number {
    return this.ownersEpochCount;
  }

  /** A write of ours changed more than a heartbeat: the plan's facts may have, and the next read is observed whole. */
  private structureChanged(): void {
    this.structureMoved(null);
    this.observeOwed = true;
  }

  /**
   * The structure epoch moves on: for the records of `changed.shards` and the judgment of the
   * sessions keyed in `changed.sessions` alone (none: a header raising only highWater), or for
   * anything else (null). The list of moves is bounded: past a few times N entries it starts
   * over as if something else had moved, and the memos compute again whole.
   */
  private structureMoved(changed: { shards: readonly number[]; sessions: readonly string[] } | null): void {
    const epoch = ++this.structureEpochCount;
    if (changed === null || this.moves.length + 2 * (changed.shards.length + changed.sessions.length) > 4 * (this.shardCount + 64)) {
      this.listedSinceEpoch = epoch;
      this.moves = [];
      return;
    }
    for (const s of changed.shards) this.moves.push(epoch, s);
    for (const k of changed.sessions) this.moves.push(epoch, k);
  }

  /**
   * What changed since structure epoch `epoch`, when a list can say it: the shards whose records
   * changed (an owner, a token; a header raising only highWater changes none) and the sessions
   * whose judgment a slot's change may have moved (its session before and after: a state
   * change, a rejoin, a release, a session revived). Null when anything else did (an absence,
   * a whole observe, a slot write of ours, a change of the absence wait), or when the list no
   * longer reaches back that far. Entries may repeat. What the memos of a turn's facts and
   * target (turn-facts.ts, target-memo.ts) patch instead of computing again in O(N).
   */
  changesSince(epoch: number): { shards: number[]; sessions: string[] } | null {
    if (epoch < this.listedSinceEpoch || epoch > this.structureEpochCount) return null;
    const moves = this.moves;
    let i = moves.length;
    while (i >= 2 && (moves[i - 2] as number) > epoch) i -= 2;
    const changed = { shards: [] as number[], sessions: [] as string[] };
    for (; i < moves.length; i += 2) {
      const m = moves[i + 1]!;
      if (typeof m === 'number') changed.shards.push(m);
      else changed.sessions.push(m);
    }
    return changed;
  }

  /** Sessions seen arriving in a slot after the first list (sessionsArrivedCount). */
  get sessionsArrived(): number {
    return this.sessionsArrivedCount;
  }

  /** Moves on at every change that can change a plan's facts other than by time (structureEpochCount). */
  get structureEpoch(): number {
    return this.structureEpochCount;
  }

  /**
   * The earliest moment (monotonic) a judgment of time this view makes can flip, as things
   * stand: a live session's end (in its slot or out of it), an absent shard's wait's end, the
   * view's freshness for `freshMs`. −Infinity before the first list. Heartbeats only move these later.
   */
  nextFlipMono(freshMs: number): number {
    let next = this.listedAtMono === null ? -Infinity : this.listedAtMono + freshMs;
    const sessions: SessionId[] = [];
    for (const { record: r } of this.slots.values()) if (r.holderIdentity !== '') sessions.push({ slot: r.index, session: r.session });
    for (const key of this.goneSince.keys()) {
      const [slot, session] = key.split('/').map(Number) as [number, number];
      sessions.push({ slot, session });
    }
    for (const id of sessions) next = Math.min(next, this.liveUntilMono(id) ?? Infinity);
    const now = this.clock.monotonic();
    const wait = this.absenceWaitMs();
    for (const since of this.absentSince.values()) if (now - since < wait) next = Math.min(next, since + wait);
    return next;
  }

  /** The highest shard token or header highWater this member ever saw in the group (0 before any). */
  get highestSeen(): number {
    return this.highestInGroup;
  }

  get groupHeader(): VersionedGroupRecord<GroupHeader> | null {
    return this.header;
  }

  slot(i: number): VersionedGroupRecord<MemberSlot> | null {
    return this.slots.get(i) ?? null;
  }

  shard(s: number): VersionedGroupRecord<ShardRecord> | null {
    return this.shards.get(s) ?? null;
  }

  /** The last list was sent within `ms`: fresh enough to write a takeover from. */
  freshWithin(ms: number): boolean {
    return this.listedAtMono !== null && this.clock.monotonic() - this.listedAtMono <= ms;
  }

  /** Whether `id` is the session its slot holds now (held, that session). */
  current(id: SessionId): boolean {
    const r = this.slots.get(id.slot)?.record;
    return r !== undefined && r.holderIdentity !== '' && r.session === id.session;
  }

  /**
   * Whether session `id` may still be acting, as far as this member can tell: in its slot and
   * seen to change within its lease duration, or out of its slot for less than a lease duration
   * since this member noticed it leave (the last time: a session seen back in its slot starts over).
   */
  live(id: SessionId): boolean {
    const now = this.clock.monotonic();
    const slot = this.slots.get(id.slot)?.record;
    if (slot && slot.holderIdentity !== '' && slot.session === id.session) {
      const seen = this.slotSeen.get(id.slot)!;
      return now - seen.changedAtMono < this.leaseOf(id);
    }
    const since = this.goneSince.get(sessionKey(id));
    return since === undefined || now - since < this.leaseOf(id);
  }

  /**
   * Whether this member has seen slot `i` written since it began to watch (a heartbeat, a join):
   * a slot whose holder has not written since this member's first list may have died before this
   * member started, and only a lease duration of watching could tell. A live holder heartbeats
   * within a retry period, so it is witnessed by then.
   */
  witnessed(i: number): boolean {
    return this.slotSeen.get(i)?.witnessed ?? false;
  }

  /** When session `id` stops counting as live (monotonic), for scheduling; null when it already has. */
  liveUntilMono(id: SessionId): number | null {
    if (!this.live(id)) return null;
    const slot = this.slots.get(id.slot)?.record;
    if (slot && this.current(id)) return this.slotSeen.get(id.slot)!.changedAtMono + this.leaseOf(id);
    const since = this.goneSince.get(sessionKey(id));
    return since === undefined ? null : since + this.leaseOf(id);
  }

  /** The held slots whose sessions are live: the members, leaving or not. */
  liveSlots(): VersionedGroupRecord<MemberSlot>[] {
    return [...this.slots.values()].filter((v) => v.record.holderIdentity !== '' && this.live({ slot: v.record.index, session: v.record.session }));
  }

  /**
   * A free slot this member may take now: free, absent (with the session to write), expired, or
   * holding `ended`, a session of this member's (`identity`) that it ended itself. That one may still look
   * live to everyone (a member cut off from the store ends its session at renewDeadline, the
   * others judge it over a lease after its last heartbeat), but taking its slot renews nothing:
   * the slot gets the next session, and the shards the ended session still names stay its own
   * until they are released or could have expired (a session gone from its slot counts as live
   * for a lease duration from when the others notice). What it ends at once is the ended
   * session's place in the others' assignment, which would otherwise give it shards nobody takes.
   */
  freeSlot(
    maxSlots: number,
    startAt: number,
    ended: (SessionId & { identity: string }) | null = null,
  ): { index: number; current: VersionedGroupRecord<MemberSlot> | null; session: number } | null {
    for (let k = 0; k < maxSlots; k++) {
      const i = (startAt + k) % maxSlots;
      const v = this.slots.get(i);
      const next = (this.highestSession.get(i) ?? 0) + 1;
      if (!v) return { index: i, current: null, session: next };
      const r = v.record;
      const ours = ended !== null && ended.slot === i && ended.session === r.session && ended.identity === r.holderIdentity;
      if (r.holderIdentity === '' || ours || !this.live({ slot: i, session: r.session })) return { index: i, current: v, session: next };
    }
    return null;
  }

  /**
   * The store was replaced (a SQLite file replaced or deleted, reopened: StoreReopenedError): a
   * shard record may have been created in the old store and lost with it between two of this
   * member's lists, its owner still working on it, so the absences seen before prove nothing.
   * Every absence wait starts over, from now and again from the next list, as the election's
   * does for a lease (RecordView.interruptAbsence).
   */
  interruptAbsence(): void {
    const now = this.clock.monotonic();
    for (const s of this.absentSince.keys()) this.absentSince.set(s, now);
    this.absenceInterrupted = true;
    this.structureMoved(null);
  }

  /** A shard absent from the store for a lease duration of this member's lists: it may be created. */
  absentLongEnough(s: number): boolean {
    const since = this.absentSince.get(s);
    return since !== undefined && this.clock.monotonic() - since >= this.absenceWaitMs();
  }

  /**
   * How long an absence is waited out: the longest lease duration any slot announces or ever
   * announced to this member, or the header ever held, this member's at least. A record deleted
   * under a member with a longer lease may still be worked on for that long, its slot gone with
   * the record or not.
   */
  private absenceWaitMs(): number {
    let ms = Math.max(this.leaseDurationMs, this.longestLeaseSeenMs);
    for (const v of this.slots.values()) ms = Math.max(ms, v.record.leaseDurationSeconds * 1000);
    return ms;
  }

  /** How long shard `s` must still be seen absent before it may be created (a lease duration when not seen absent yet). */
  absentWaitLeftMs(s: number): number {
    const since = this.absentSince.get(s);
    const wait = this.absenceWaitMs();
    return since === undefined ? wait : Math.max(0, Math.round(wait - (this.clock.monotonic() - since)));
  }

  /** The token a new owner of shard `s` writes: past every token seen for it. */
  nextToken(s: number): number {
    return Math.max(this.highestToken.get(s) ?? 0, this.shards.get(s)?.record.token ?? 0) + 1;
  }

  private bump(m: Map<number, number>, k: number, v: number): void {
    if (v > (m.get(k) ?? -Infinity)) m.set(k, v);
  }
}

/** Everything of a slot whose change shows its holder is alive (or gone). */
function slotContent(r: MemberSlot): string {
  return JSON.stringify([r.holderIdentity, r.session, r.state, r.renewTime?.getTime() ?? null, r.leaseDurationSeconds]);
}

/** Whether slot record `b` holds what `a` holds but its heartbeat: the same holder, session, state and lease duration. */
function sameSession(a: MemberSlot, b: MemberSlot): boolean {
  return a.holderIdentity === b.holderIdentity && a.session === b.session && a.state === b.state && a.leaseDurationSeconds === b.leaseDurationSeconds;
}

/** Whether two owners are the same session (or both none: free, or no record). */
function sameOwner(a: SessionId | null | undefined, b: SessionId | null | undefined): boolean {
  if (!a || !b) return !a && !b;
  return a.slot === b.slot && a.session === b.session;
}
