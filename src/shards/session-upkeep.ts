/**
 * A shard member's session as it writes it: the join (a member slot, as a new session; the
 * group's header first where there is none and nobody runs), a heartbeat every retryPeriod (and
 * one at once to greet a newcomer), the session's end when its validity is over or its slot is
 * not ours (every owned shard ends through the gate at once: shard-term-ends.ts), and the slot
 * released on leaving. What the session is (its slot, token, version, validity) is MemberSession's.
 */
import { ConflictError, describeError } from '../errors.js';
import type { GroupHeader, MemberSlot, MemberState } from '../backends/group-store.js';
import { fnv1a64 } from './key-to-shard.js';
import { longestLeaseField } from './longest-lease.js';
import type { MemberContext } from './member-context.js';
import type { Session } from './member-session.js';
import type { ShardTermEnds } from './shard-term-ends.js';

export class SessionUpkeep {
  /** Whether the log said no member slot is free. */
  private noSlotSaid = false;
  /** Whether the log said this member waits for live members to write the group's header back. */
  private headerWaitSaid = false;
  /**
   * A session arrived in the group since this member's last heartbeat (a newcomer): it heartbeats
   * at its next turn, not at its own pace, so the newcomer, which counts only the members it has
   * seen write since it started, counts this one at once instead of taking shards meant for it
   * and handing them back up to a retry period later.
   */
  private greetDue = false;

  constructor(
    private readonly ctx: MemberContext,
    private readonly ends: ShardTermEnds,
    /** How many member slots the group has (K). */
    private readonly maxMembers: number,
    /** Whether the store's reads come from a watch's copy (GroupCache.fromWatch). */
    private readonly fromWatch: boolean,
    /** Reads the group again (ShardMember.list): after a heartbeat that lost its race. */
    private readonly relist: () => Promise<void>,
  ) {}

  /** A newcomer arrived: this member heartbeats at its next turn (greetDue). */
  greet(): void {
    this.greetDue = true;
  }

  /** Takes a member slot: the group's header first when there is none, then a free slot, as a new session. */
  async join(): Promise<void> {
    if (!this.ctx.view.freshWithin(this.ctx.requestTimeoutMs)) return;
    if (!this.ctx.view.groupHeader) {
      // Live member slots without a header: the header was deleted under running members, who
      // write it back with their count within a retry period. Creating it here could give the
      // group a second count; the newcomer waits (the slots of members long gone expire).
      const live = this.ctx.view.liveSlots().length;
      if (live > 0) {
        if (!this.headerWaitSaid)
          this.ctx.log.warn('the shard group has live members but no header: waiting for them to write it back before joining', { liveMembers: live });
        this.headerWaitSaid = true;
        return;
      }
      this.headerWaitSaid = false;
      try {
        // A group whose header and every record are gone starts from what this member saw: 0 if nothing.
        // Its longest lease at least this member's own, which its slot announces next.
        const header: GroupHeader = {
          kind: 'group',
          index: 0,
          shards: this.ctx.shards,
          createdAt: this.ctx.clock.now(),
          highWater: this.ctx.view.highestSeen,
          ...longestLeaseField(Math.max(this.ctx.view.longestLeaseSeen, this.ctx.timings.leaseDurationMs)),
        };
        const version = await this.ctx.calls.call('create', (o) => this.ctx.store.createGroupRecord(this.ctx.group, header, o));
        this.ctx.view.wrote({ record: header, version });
        this.ctx.log.info('created the shard group', { shards: this.ctx.shards });
      } catch (err) {
        if (!(err instanceof ConflictError)) this.ctx.log.warn('creating the group failed', { reason: describeError(err) });
        this.ctx.writeFailed(err);
        return;
      }
    }
    const start = Number(fnv1a64(this.ctx.identity) % BigInt(this.maxMembers));
    // The slot of this member's own ended session first: it knows that session is over.
    const ended = this.ctx.sessions.ended;
    const free = this.ctx.view.freeSlot(this.maxMembers, ended?.slot ?? start, ended && { ...ended, identity: this.ctx.identity });
    if (!free) {
      if (!this.noSlotSaid) this.ctx.log.warn('no free member slot: the group has as many members as --max-members', { maxMembers: this.maxMembers });
      this.noSlotSaid = true;
      return;
    }
    this.noSlotSaid = false;
    const at = { mono: this.ctx.clock.monotonic(), wall: this.ctx.clock.now() };
    const slot: MemberSlot = {
      kind: 'member',
      index: free.index,
      holderIdentity: this.ctx.identity,
      session: free.session,
      state: 'active',
      renewTime: at.wall,
      leaseDurationSeconds: this.ctx.timings.leaseDurationMs / 1000,
    };
    try {
      const version = await this.ctx.calls.call(free.current ? 'update' : 'create', (o) =>
        free.current
          ? this.ctx.store.updateGroupRecord(this.ctx.group, slot, free.current.version, o)
          : this.ctx.store.createGroupRecord(this.ctx.group, slot, o),
      );
      this.ctx.view.wrote({ record: slot, version });
      // From a watch's copy, the list part of a session's validity counts from the heartbeats it
      // shows (heartbeatShown); the join is the first, and a new session owns no shard to miss.
      if (this.fromWatch) this.ctx.sessions.listed(at);
      this.ctx.sessions.begin(slot.index, slot.session, version, at);
      this.ctx.log.info('joined the shard group', { slot: slot.index, session: slot.session, shards: this.ctx.shards });
      this.renewed();
    } catch (err) {
      this.ctx.writeFailed(err);
      if (!(err instanceof ConflictError)) this.ctx.log.warn('taking a member slot failed', { slot: free.index, reason: describeError(err) });
    }
  }

  /** One heartbeat: the slot rewritten (renewTime, state) by compare-and-swap on its version. */
  async heartbeat(state: MemberState): Promise<void> {
    const m = this.ctx.sessions.current!;
    this.greetDue = false;
    // Right before the write: a slot nobody touched would take a heartbeat of a session the
    // others may already have judged over, and bring it back to life.
    if (this.endIfExpired(m)) return;
    const at = { mono: this.ctx.clock.monotonic(), wall: this.ctx.clock.now() };
    m.heartbeatSentMono = at.mono;
    const slot: MemberSlot = {
      kind: 'member',
      index: m.slot,
      holderIdentity: this.ctx.identity,
      session: m.session,
      state,
      renewTime: at.wall,
      leaseDurationSeconds: this.ctx.timings.leaseDurationMs / 1000,
    };
    try {
      const version = await this.ctx.calls.call('update', (o) => this.ctx.store.updateGroupRecord(this.ctx.group, slot, m.version, o));
      if (this.ctx.sessions.current !== m) return; // the session ended while the heartbeat was in flight
      this.ctx.view.wrote({ record: slot, version });
      // The session's validity ended while the heartbeat was in flight: it may have landed after
      // the others judged the session over, so it ends here as if the deadline had fired first.
      if (this.endIfExpired(m)) return;
      if (at.mono + this.ctx.timings.renewDeadlineMs <= this.ctx.clock.monotonic()) return; // answered too late to count
      Object.assign(m, { version, state, renewedAtMono: at.mono, renewedAt: at.wall });
      this.renewed();
    } catch (err) {
      if (this.ctx.sessions.current !== m) return;
      if (err instanceof ConflictError) {
        // An unanswered heartbeat of ours may have landed (the slot still holds our session):
        // take its version and go on; anything else means the slot is no longer ours.
        await this.relist();
        const now = this.ctx.view.slot(m.slot);
        if (now && now.record.holderIdentity === this.ctx.identity && now.record.session === m.session) {
          m.version = now.version;
          m.heartbeatSentMono = null;
          this.ctx.wakeUp();
          return;
        }
        this.lost(
          now
            ? `the member slot ${m.slot} was taken by another member (${now.record.holderIdentity || 'released'}, session ${now.record.session})`
            : `the member slot ${m.slot} was deleted from the store (by hand?): its session is over`,
        );
        return;
      }
      this.ctx.log.warn('heartbeat failed', { reason: describeError(err) });
    }
  }

  /** A heartbeat or a list succeeded: the session's deadline moves on, and the listener hears the new validUntil. */
  renewed(): void {
    const validUntil = this.ctx.sessions.rearm(() =>
      this.lost(`no successful heartbeat and list within renewDeadline (${this.ctx.timings.renewDeadlineMs} ms)`),
    );
    if (validUntil) this.ctx.listener.onRenewed?.(validUntil);
  }

  /**
   * The session is over: every owned shard ends at once, announced, then drained, then released
   * by a compare-and-swap from the version this member last wrote (it lands only if nobody wrote
   * the record since): the rule a lost lease term follows too (docs/design.md, "The end-of-term gate").
   */
  lost(reason: string): void {
    const m = this.ctx.sessions.end();
    if (!m) return;
    this.ctx.log.warn('lost the shard group session', { slot: m.slot, session: m.session, reason, owned: this.ctx.phases.ownedCount() });
    this.ends.end(
      this.ctx.phases.ownedShards().map((s) => ({ s, reason, end: 'lost' as const })),
      m,
    );
    this.ctx.wakeUp();
  }

  /** Stopping: the slot released (holder none) once nothing is owned; a slot not ours any more is left. */
  async leave(): Promise<void> {
    const m = this.ctx.sessions.end();
    if (!m) return;
    const slot: MemberSlot = {
      kind: 'member',
      index: m.slot,
      holderIdentity: '',
      session: m.session,
      state: 'leaving',
      renewTime: this.ctx.clock.now(),
      leaseDurationSeconds: this.ctx.timings.leaseDurationMs / 1000,
    };
    try {
      await this.ctx.calls.call('update', (o) => this.ctx.store.updateGroupRecord(this.ctx.group, slot, m.version, o));
      this.ctx.log.info('left the shard group', { slot: m.slot, session: m.session });
    } catch (err) {
      this.ctx.log.warn('releasing the member slot failed: it expires', { slot: m.slot, reason: describeError(err) });
    }
    this.ctx.listener.onChange?.();
  }

  /**
   * Ends session `m` when its validity is over (its deadline passed, whether or not the deadline
   * timer has fired yet): a session that has expired stays expired. After a pause, the overdue
   * turn may run before the overdue deadline timer, and a store answering synchronously
   * (better-sqlite3) would otherwise let its heartbeat renew a session the others took shards
   * from. Returns whether it ended.
   */
  endIfExpired(m: Session): boolean {
    if (this.ctx.sessions.current !== m || this.ctx.sessions.valid(m)) return false;
    this.lost(
      `the session's validity ended (no successful heartbeat and list within renewDeadline, ${this.ctx.timings.renewDeadlineMs} ms): it is not renewed, the member joins anew`,
    );
    return true;
  }

  heartbeatDue(): boolean {
    const sent = this.ctx.sessions.current?.heartbeatSentMono ?? null;
    return this.greetDue || sent === null || this.ctx.clock.monotonic() - sent >= this.ctx.timings.retryPeriodMs;
  }
}
