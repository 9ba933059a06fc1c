/**
 * One member of a shard group (docs/design.md, "Shard groups"): it holds a member slot and
 * heartbeats it every retryPeriod (its session), computes with every other member the same
 * balanced assignment (assignment.ts) from the one list of the group's records it reads, takes
 * the free shards assigned to it by compare-and-swap, and gives up the others through the same
 * end-of-term gate as a lease: "not owned" first, then the app's drain (bounded), then the
 * release. Its idle writes are one heartbeat per retryPeriod, whatever N; it lists the group on
 * every hint of a change (the other members' heartbeats included, at most every HINT_LIST_MS)
 * and at least once per retryPeriod.
 *
 * This class is the member's life and pace (start, stop, the loop and its waits), its reads, and
 * each turn's plan (turn-plan.ts decides; reconcile sends, in order). The rest is in parts that
 * share a MemberContext (member-context.ts), one job each: the session's writes
 * (session-upkeep.ts), the group's header (header-keeper.ts), the takes (shard-takes.ts), the ends
 * of shards' terms (shard-term-ends.ts), the write-backs of vanished records (write-backs.ts);
 * the store calls (group-calls.ts) are one of the context's members. Two parts call back into
 * the member's list (`relist`): a heartbeat and a raise of the header that lost their race read
 * the group again, and that list may end shards, renew the session or refuse the group
 * (InvalidConfigError, out through the part) as any list does.
 *
 * What it guarantees, given a store with honest compare-and-swap and clock rates that agree:
 * a member says it owns a shard only while its session is valid (its last successful heartbeat
 * started + renewDeadline), and takes a shard only when it is free or its owner's session has
 * not been seen to change for a lease duration; so no shard has two owners as the members see
 * it, and a shard's token only grows. A paused member may still believe: the token is what
 * the protected resource checks.
 */
import { realClock, sleep, type Clock } from '../clock.js';
import { BackendUnavailableError, InvalidConfigError, describeError } from '../errors.js';
import { silentLogger, guardedLogger, type Logger } from '../log.js';
import type { GroupStore, MemberState, VersionedGroupRecord } from '../backends/group-store.js';
import { JITTER_FACTOR, type Timings } from '../config/election-options.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';
import { EligibilityCheck } from '../holder/eligibility-check.js';
import { releaseWaitsForLock } from '../holder/end-of-term-rule.js';
import type { MemberContext, ShardListener } from './member-context.js';
export type { ShardListener, ShardTerm } from './member-context.js';
import { HeaderKeeper } from './header-keeper.js';
import { SessionUpkeep } from './session-upkeep.js';
import { ShardTakes } from './shard-takes.js';
import { ShardTermEnds } from './shard-term-ends.js';
import { WriteBacks } from './write-backs.js';
import { GroupCache } from './group-cache.js';
import { GroupView, sessionKey, type SessionId } from './group-view.js';
import { MemberSession, type Session } from './member-session.js';
import { ShardPhases } from './shard-phases.js';
import { GroupCalls } from './group-calls.js';
import { inBatches } from '../util/in-batches.js';
import { shardFact, ShardFactsMemo, slotFacts } from './turn-facts.js';
import { TargetMemo } from './target-memo.js';
import { changesConcernPlan, planEnds, planLost, planWrites, takeRestsOnTime, type SessionFacts, type Target, type TurnFacts } from './turn-plan.js';

export interface ShardMemberOptions extends Timings {
  store: GroupStore;
  /** The group's name (`--lease`). */
  group: string;
  /** The group's shard count; a group whose header says otherwise is refused. */
  shards: number;
  identity: string;
  /** How many member slots the group has (K). Default 64. */
  maxMembers?: number;
  clock?: Clock;
  log?: Logger;
  /** While it says not eligible, the member is `leaving`: it gives its shards up and takes none. */
  eligibility?: Eligibility;
  listener?: ShardListener;
  /**
   * The end-of-term gate's drain for one shard: resolves once the work of `shard` under `token`
   * has stopped, false when it cannot say. `bound` aborts when drainTimeoutMs has passed (one
   * bound for every shard the pass gave up): a wait the drain began may end then, with no timer
   * of its own. Default: none, no work to wait for.
   */
  drain?: (shard: number, token: number, bound: AbortSignal) => Promise<boolean | void>;
  /** How long the gate waits for `drain`; past it the shard is kept until it could have expired. Default renewDeadline. */
  drainTimeoutMs?: number;
  /** Bound on one store call. Default renewDeadline / 2. */
  requestTimeoutMs?: number;
  /**
   * Greet each session that arrives in the group with a heartbeat at once (greetDue). Default
   * true; false only replays the shard simulator's seeds found before greeting as they ran.
   */
  greetNewcomers?: boolean;
  /**
   * Wake when a session's end or an absence's wait in the view can flip (waitNext). Default
   * true; false only replays the shard simulator's seeds found before it as they ran.
   */
  wakeAtFlips?: boolean;
}

export interface ShardMemberSnapshot {
  group: string;
  shards: number;
  identity: string;
  /** This member's slot and session; null while it has none. */
  session: SessionId | null;
  state: MemberState | null;
  /** The live members taking shards (state active), this one included when it is. */
  members: number;
  /**
   * The shards with no live owner as this member sees the group (free, absent, or named by a
   * session that is over): 0 once every shard has an owner. Counted at each turn's end.
   */
  orphaned: number;
  owned: readonly { shard: number; token: number }[];
  /** When every owned shard stops counting unless a heartbeat renews it; null without a session. */
  validUntil: Date | null;
  standingAside: StandAside | null;
  running: boolean;
  /** When the loop last began a turn (this clock's monotonic ms); null before the first. */
  lastTurnMonotonic: number | null;
  /** Turns with a session that planned, and that did not, their facts the settled plan's (docs/design.md, "Quiet turns"). */
  turns: { planned: number; quiet: number };
}

/** A store's change hint is followed by a list at most this often. */
const HINT_LIST_MS = 50;

/** What a plan that found nothing to do rested on (ShardMember.settledBasis). */
interface Settled {
  /** The target the plan was made for: a later turn whose target is this same object (TargetMemo) was asked nothing new of it. */
  readonly target: Target;
  readonly session: Session;
  readonly state: MemberState;
  readonly stopping: boolean;
  readonly epoch: number;
  readonly moves: number;
  readonly untilMono: number;
}

export class ShardMember {
  readonly group: string;
  readonly identity: string;
  readonly shards: number;
  readonly timings: Readonly<Timings>;
  private readonly store: GroupStore;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly view: GroupView;
  /** The group as read by change (group-cache.ts): what `list` reads instead of the whole group. */
  private readonly cache: GroupCache;
  private readonly requestTimeoutMs: number;
  private readonly listener: ShardListener;
  /**
   * The app's eligibility and its log lines (the lease's EligibilityCheck): one warn line when the
   * member stands aside (it gives every shard up), one info line when it takes shards again.
   */
  private readonly eligibility: EligibilityCheck;
  /** Its store calls: bounded, paced on others' locks, the shard writes in batches (group-calls.ts). */
  private readonly calls: GroupCalls;

  /** This member's session (its slot, the slot's token, its validity and deadline): member-session.ts. */
  private readonly sessions: MemberSession;
  /**
   * Each held shard's phase: owned, ending (through the gate), or kept (its work not seen to stop
   * in time: its record keeps naming the session that owned it until it could have expired, then
   * is freed; a member leaving goes without waiting: the records expire with the session). A
   * shard whose work stopped but whose release the store did not answer is kept too, due at once.
   */
  private readonly phases = new ShardPhases();
  /** The last target, kept while the members and the owners stay (another member's heartbeat moves neither). */
  private readonly targets = new TargetMemo();
  /** The shards' facts while the view's structure and time stand (turn-facts.ts). */
  private readonly facts = new ShardFactsMemo();
  /** Held shards' vanished records written back (write-backs.ts): their release waits for it. */
  private readonly writeBacks: WriteBacks;
  /** The end of each given-up shard's term: the gate, the release, the kept shards (shard-term-ends.ts). */
  private readonly ends: ShardTermEnds;
  /** The takes, each judged again before its write, and their token blocks (shard-takes.ts). */
  private readonly takes: ShardTakes;
  /** The session's writes: the join, the heartbeats, its end, the leave (session-upkeep.ts). */
  private readonly upkeep: SessionUpkeep;
  /** The group's header as the running members keep it (header-keeper.ts). */
  private readonly header: HeaderKeeper;
  /**
   * Where the member's life is: its loop (null before start() and once stop() has awaited it),
   * whether it is stopping (stop(), or a refusal), and whether the loop has returned (on stop, or
   * on its own: the group was recreated with another count; it never starts again). Replaced whole.
   */
  private life: { readonly loop: Promise<void> | null; readonly stopping: boolean; readonly ended: boolean } = {
    loop: null,
    stopping: false,
    ended: false,
  };
  /**
   * Resolves with the refusal when the member leaves the group on its own (the group's records
   * came to say another shard count: a start race, or the group recreated); never otherwise.
   * The sidecar command ends on it (exit 2) instead of running on as a member of nothing.
   */
  readonly refused: Promise<InvalidConfigError>;
  private readonly refuse: (err: InvalidConfigError) => void;
  /** The current wait (to end it early), or a wake-up that came between waits: the next wait returns at once. */
  private wake: AbortController | 'pending' | null = null;
  /** When the last list was sent, answered or not: lists are paced by it, so a store that fails at once is not asked in a loop. */
  private listTriedMono: number | null = null;
  private hinted = false;
  /** What a status shows of the group as this member last counted it: its live active members, the shards without a live owner. Replaced whole. */
  private counts: { readonly members: number; readonly orphaned: number };
  private lastTurnMono: number | null = null;
  /** The last plan that found nothing to do, and what it rested on (docs/design.md, "Quiet turns"); null: plan at the next turn. */
  private settled: Settled | null = null;
  /** The view's count of arrived sessions this member has greeted up to. */
  private arrivalsGreeted = 0;
  /** Turns with a session, by whether they planned: counted for the metrics. */
  private readonly turnsBy = { planned: 0, quiet: 0 };

  constructor(private readonly opts: ShardMemberOptions) {
    let refuse: (err: InvalidConfigError) => void = () => {};
    this.refused = new Promise((resolve) => (refuse = resolve));
    this.refuse = refuse;
    this.group = opts.group;
    this.identity = opts.identity;
    this.shards = opts.shards;
    this.timings = { leaseDurationMs: opts.leaseDurationMs, renewDeadlineMs: opts.renewDeadlineMs, retryPeriodMs: opts.retryPeriodMs };
    this.clock = opts.clock ?? realClock;
    this.log = opts.log ? guardedLogger(opts.log) : silentLogger;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? opts.renewDeadlineMs / 2;
    this.listener = opts.listener ?? {};
    this.eligibility = new EligibilityCheck(opts.eligibility ?? null, this.clock, this.log, {
      eligible: 'the app is eligible: taking shards',
      firstEligible: false,
    });
    // A member lists every retryPeriod; two missed lists and a slow one break its view (GroupView).
    this.view = new GroupView(this.clock, opts.shards, opts.leaseDurationMs, opts.retryPeriodMs * (2 + JITTER_FACTOR));
    this.cache = new GroupCache(opts.store, opts.group);
    // Every write goes through the copy's writer: a refused one may show the copy stale.
    this.store = this.cache.writer();
    this.counts = { members: 0, orphaned: opts.shards };
    this.sessions = new MemberSession(this.clock, opts.renewDeadlineMs);
    this.calls = new GroupCalls(this.store, opts.group, this.clock, this.requestTimeoutMs, opts.retryPeriodMs, () => this.view.interruptAbsence());
    const ctx: MemberContext = {
      group: this.group,
      identity: this.identity,
      shards: this.shards,
      timings: this.timings,
      clock: this.clock,
      log: this.log,
      requestTimeoutMs: this.requestTimeoutMs,
      view: this.view,
      store: this.store,
      calls: this.calls,
      phases: this.phases,
      sessions: this.sessions,
      listener: this.listener,
      writeFailed: (err) => this.writeFailed(err),
      wakeUp: () => this.wakeUp(),
    };
    this.writeBacks = new WriteBacks(ctx);
    this.takes = new ShardTakes(ctx, () => this.list());
    this.ends = new ShardTermEnds(ctx, this.writeBacks, opts.drain, opts.drainTimeoutMs ?? opts.renewDeadlineMs);
    this.upkeep = new SessionUpkeep(ctx, this.ends, opts.maxMembers ?? 64, this.cache.fromWatch, () => this.list());
    this.header = new HeaderKeeper(ctx);
  }

  private get mine(): Session | null {
    return this.sessions.current;
  }

  private get stopping(): boolean {
    return this.life.stopping;
  }

  /**
   * Reads the group once and refuses what cannot work (InvalidConfigError): a group whose header
   * says another shard count. Then starts the loop and returns.
   */
  async start(): Promise<void> {
    if (this.life.loop) return;
    const sent = this.clock.monotonic();
    if (this.cache.byChange) this.view.observe((await this.calls.call('list', (o) => this.cache.readChanges(o))).all(), sent);
    else this.view.observe(await this.calls.call('list', (o) => this.cache.read(o)), sent);
    this.header.check();
    const unwatch = this.store.watchGroup?.(this.group, () => this.hint());
    const unsubscribe = this.eligibility.subscribe(() => this.wakeUp());
    const loop = this.run().finally(() => {
      this.life = { ...this.life, ended: true };
      unwatch?.();
      unsubscribe?.();
    });
    this.life = { ...this.life, loop };
  }

  /**
   * Leaves the group: `leaving` first (the others stop counting this member), every owned shard
   * through the gate (its work drains, then it is released), then the slot is released. A shard
   * whose work did not stop in time is left to expire with the session.
   */
  async stop(): Promise<void> {
    this.life = { ...this.life, stopping: true };
    this.wakeUp();
    await this.life.loop;
    this.life = { ...this.life, loop: null };
  }

  /** How many shards this member owns now: what snapshot().owned.length says, without building the list. */
  ownedCount(): number {
    return this.phases.ownedCount();
  }

  snapshot(): ShardMemberSnapshot {
    const m = this.mine;
    return {
      group: this.group,
      shards: this.shards,
      identity: this.identity,
      session: m ? { slot: m.slot, session: m.session } : null,
      state: m?.state ?? null,
      members: this.counts.members,
      orphaned: this.counts.orphaned,
      owned: this.phases.ownedByShard(),
      validUntil: m ? this.sessions.validUntil(m) : null,
      standingAside: this.eligibility.standingAside(),
      // A loop that ended on its own leaves `loop` set until stop(): it is not running all the same.
      running: this.life.loop !== null && !this.life.ended,
      lastTurnMonotonic: this.lastTurnMono,
      turns: { ...this.turnsBy },
    };
  }

  private async run(): Promise<void> {
    while (!(this.stopping && this.done())) {
      try {
        await this.turn();
      } catch (err) {
        if (err instanceof InvalidConfigError) {
          // The group changed under this member (recreated with another count): it takes no part.
          this.log.error('leaving the shard group', { reason: err.message });
          this.life = { ...this.life, stopping: true };
          this.refuse(err);
        } else this.log.warn('shard member turn failed', { reason: describeError(err) });
      }
      if (this.stopping && this.done()) break;
      await this.waitNext();
    }
    this.ends.tellFailures();
    await this.upkeep.leave();
  }

  /** Stopping and nothing left to do but release the slot: no shard owned or going through its gate. */
  private done(): boolean {
    return !this.phases.anyOwnedOrEnding() && this.writeBacks.size === 0;
  }

  private async turn(): Promise<void> {
    this.lastTurnMono = this.clock.monotonic();
    const desired: MemberState = this.stopping || !this.eligible() ? 'leaving' : 'active';
    if (this.mine) this.upkeep.endIfExpired(this.mine);
    if (this.mine && (this.upkeep.heartbeatDue() || this.mine.state !== desired)) await this.upkeep.heartbeat(desired);
    if (this.listDue()) await this.list();
    if (!this.mine && !this.stopping && this.eligible()) await this.upkeep.join();
    if (this.mine && this.view.freshWithin(this.requestTimeoutMs)) await this.header.keep();
    // A turn whose facts are the last settled plan's plans nothing and counts nothing new
    // (docs/design.md, "Quiet turns"): after another member's heartbeat, most turns. One after
    // changes that cannot concern this member's plan (other members' takes that conform to the
    // target) plans nothing either, but counts what moved.
    const settled = this.mine === null ? false : this.planSettled(this.mine);
    const quiet = settled !== false;
    if (quiet) this.turnsBy.quiet++;
    else if (this.mine) {
      this.turnsBy.planned++;
      await this.reconcile();
    } else await this.freeKept();
    this.ends.tellFailures();
    if (settled !== 'unmoved') this.countGroup();
    this.listener.onChange?.();
  }

  /** What a status shows of the group as this member sees it: its live active members, and the shards without a live owner. */
  private countGroup(): void {
    const members = this.view.liveSlots().filter((v) => v.record.state === 'active').length;
    // Free, absent, or named by a session that is not live: counted with the facts (turn-facts.ts).
    this.counts = { members, orphaned: this.facts.orphans(this.view, this.clock.monotonic()) };
  }

  private async list(): Promise<void> {
    const sent = this.clock.monotonic();
    const sentWall = this.clock.now();
    this.hinted = false;
    this.listTriedMono = sent;
    try {
      // A read by change is taken in as such, in O(changes) (docs/design.md, "Quiet turns"); a
      // whole read, or one the view cannot take so (a gap, a write of ours owed), observed whole.
      let brought: readonly VersionedGroupRecord[];
      if (this.cache.byChange) {
        const read = await this.calls.call('list', (o) => this.cache.readChanges(o));
        if (read.changes !== null && this.view.observeChanges(read.changes, sent, (k) => read.version(k))) brought = read.changes;
        else this.view.observe((brought = read.all()), sent);
      } else this.view.observe((brought = await this.calls.call('list', (o) => this.cache.read(o))), sent);
      // Before anything is judged from this read: a session of ours that another member's record names is not ours alone.
      this.endIfNamedByAnother(brought);
      // A newcomer in the group: greeted with a heartbeat at the next turn (greetDue).
      if (this.view.sessionsArrived !== this.arrivalsGreeted) {
        this.arrivalsGreeted = this.view.sessionsArrived;
        if (this.mine && !this.stopping && this.opts.greetNewcomers !== false) {
          this.upkeep.greet();
          this.wakeUp();
        }
      }
      // Before anything ends: a held shard's vanished record is written back with its token.
      this.restoreVanished();
      // A shard whose record this list shows gone or taken ends before the list renews anything:
      // the list proves the others' records, not that one.
      this.endLostShards();
      // A list answered after the session's validity ended must not renew it (its deadline
      // timer may simply not have fired yet).
      if (this.mine) this.upkeep.endIfExpired(this.mine);
      const listedAt = this.cache.fromWatch ? this.heartbeatShown() : { mono: sent, wall: sentWall };
      if (listedAt) this.sessions.listed(listedAt);
      this.upkeep.renewed();
      this.header.check();
    } catch (err) {
      if (err instanceof InvalidConfigError) throw err;
      this.log.warn('listing the group failed', { reason: describeError(err) });
    }
  }

  /**
   * Ends this member's session when a shard record the read brought names it (its slot and
   * session number) for another member. Session numbers count up per slot in one store; a store
   * replaced under the group starts them over where a member never saw the old ones. A member
   * that held the same slot and number in the old store, still working, writes its shards back
   * into the new one naming that number (write-backs.ts), and without this the member holding
   * it now would take those shards as its own strays at once: chaos seed 574, where one was
   * started while its old owner's work ran. Joining anew, this member draws a later number (the
   * record counts in highestSession), and the record names a session out of its slot, which
   * counts as live for a lease duration from then, as any.
   */
  private endIfNamedByAnother(records: readonly VersionedGroupRecord[]): void {
    const m = this.mine;
    if (!m) return;
    for (const { record: r } of records) {
      if (r.kind !== 'shard' || !r.owner || r.owner.slot !== m.slot || r.owner.session !== m.session || r.holderIdentity === this.identity) continue;
      this.upkeep.lost(
        `shard ${r.index}'s record names this session (slot ${m.slot}, session ${m.session}) for another member, ${r.holderIdentity || 'nobody'}: the same number held in a store replaced since; joining anew with a later one`,
      );
      return;
    }
  }

  /**
   * What a read from a watch's copy proves fresh: not the moment it was sent (the copy may lag),
   * but the start of our last heartbeat, when the copy shows it: the store's read waits for its
   * own writes, so the copy then holds every write before that heartbeat landed. A copy that
   * stalls shows no new heartbeat, so the session's validity stops moving on and it ends within
   * renewDeadline, as without lists. Null: the copy does not show our last heartbeat yet.
   */
  private heartbeatShown(): { mono: number; wall: Date } | null {
    const m = this.mine;
    if (!m) return null;
    return this.view.slot(m.slot)?.version === m.version ? { mono: m.renewedAtMono, wall: m.renewedAt } : null;
  }

  /**
   * Gives up what the target names another live member for (or everything while leaving), takes
   * the free shards the target names this member for, and frees records that name this session
   * for a shard it does not own (a write whose answer was lost). The decisions are the plan's
   * (turn-plan.ts); here are the writes.
   */
  private async reconcile(): Promise<void> {
    const m = this.mine!;
    this.settled = null;
    // What a settled plan rests on, as it stood before the facts were read: anything moving
    // during the plan's writes and waits leaves it unsettled.
    const basis = this.settledBasis(m);
    const now = this.turnFacts(m);
    const target = this.targets.of(this.group, now, this.view);
    this.counts = { ...this.counts, members: target.members.length };
    const endSteps = planEnds(now, target);
    this.ends.endPlanned(endSteps, m);
    // Kept shards whose time has come are freed between the two halves: the takes see them free.
    await this.freeKept();
    const writes = planWrites(this.turnFacts(m), target);
    if (endSteps.length === 0 && writes && writes.free.length === 0 && writes.take.length === 0) this.settle({ ...basis, target }, m);
    if (!writes) return;
    // Each freed from the version planned on: a record that changed since is not freed blindly.
    const strays = writes.free.map((s) => this.view.shard(s)!);
    this.takes.tellAbsent(writes.take);
    // A stray is given up, freed at each turn it is found, as the takes it came from are sent: waiting as they do.
    await inBatches(strays, this.calls.parallelWrites, async (v) => void (await this.ends.free(v, m, releaseWaitsForLock('given up', 0))));
    // From a watch's copy, the takes that rest on time passing are confirmed by a read first.
    const toTake = this.cache.fromWatch ? await this.confirmTimedTakes(writes.take, m) : writes.take;
    // One raise of the header's highWater for the takes allowed now; each is judged again before its write.
    const due = toTake.filter((s) => this.takes.allowed(s, m));
    if (due.length === 0) return;
    // Where the store raises and takes in one transaction (SQLite), one call; else a raise, then the takes.
    if (await this.takes.takeWithRaise(due, m)) return;
    const block = await this.takes.reserveTokens(due.length);
    if (!block) return;
    await inBatches(due, this.calls.parallelWrites, (s) => this.takes.take(s, m, block));
  }

  /**
   * What a settled plan rests on, now: the view's structure, the phases, the session and its
   * state, and the earliest moment a judgment of time in the plan's facts can flip (a live
   * session's end, an absence waited out, the view's freshness, this session's validity).
   */
  private settledBasis(m: Session): Omit<Settled, 'target'> {
    return {
      session: m,
      state: m.state,
      stopping: this.stopping,
      epoch: this.view.structureEpoch,
      moves: this.phases.moves,
      untilMono: Math.min(this.view.nextFlipMono(this.requestTimeoutMs), this.sessions.validUntilMono(m)),
    };
  }

  /** The plan found nothing to do from `basis`: settled, if nothing it rests on moved meanwhile and nothing is ending, kept or restored. */
  private settle(basis: Settled, m: Session): void {
    if (this.stands(basis, m) && this.phases.onlyOwned() && this.writeBacks.size === 0) this.settled = basis;
  }

  /**
   * Whether a plan now would be the settled one, which found nothing to do: 'unmoved' when
   * nothing it rests on moved and no judgment of time can have flipped; 'others' when, beyond
   * that, only changes that cannot concern this member's plan came (othersMovedOnly); false: plan.
   */
  private planSettled(m: Session): 'unmoved' | 'others' | false {
    const k = this.settled;
    if (k === null || this.writeBacks.size !== 0 || this.clock.monotonic() >= k.untilMono || !this.sameMember(k, m)) return false;
    if (k.epoch === this.view.structureEpoch) return 'unmoved';
    return this.othersMovedOnly(k, m) ? 'others' : false;
  }

  /**
   * Whether the structure moved since the settled plan `k` only where that plan cannot change:
   * the same session, state and phases (the caller asks: sameMember); no slot's change (a member arriving, leaving or ending
   * moves the judgment of sessions, and the members counted); the same target (TargetMemo gives
   * the same object only when every owner change conformed to it); and no shard that changed is
   * held here or names this session (changesConcernPlan says why that is enough), so from these
   * facts it finds nothing to do, again. After a leave of a member of 32, the others' takes made each of
   * the 31 plan again after every one of them, in O(N) each. When it holds, the settled plan is
   * moved on to the structure as it stands, and to the nearer of its bound and the view's next
   * flip now (a record naming a session out of its slot starts a wait of its own).
   */
  private othersMovedOnly(k: Settled, m: Session): boolean {
    const changed = this.view.changesSince(k.epoch);
    if (changed === null || changed.sessions.length > 0) return false;
    const facts = this.turnFacts(m);
    if (this.targets.of(this.group, facts, this.view) !== k.target) return false;
    if (changesConcernPlan(changed.shards, facts, (s) => this.phases.holds(s))) return false;
    const untilMono = Math.min(k.untilMono, this.view.nextFlipMono(this.requestTimeoutMs));
    if (this.clock.monotonic() >= untilMono) return false;
    this.settled = { ...k, epoch: this.view.structureEpoch, untilMono };
    return true;
  }

  /** Whether what `k` rested on stands: the member as it was (sameMember), and the view's structure unmoved. */
  private stands(k: Omit<Settled, 'target'>, m: Session): boolean {
    return this.sameMember(k, m) && k.epoch === this.view.structureEpoch;
  }

  /** The same session, state and stopping as `k` rested on, and no phase moved since. */
  private sameMember(k: Omit<Settled, 'target'>, m: Session): boolean {
    return k.session === m && k.state === m.state && k.stopping === this.stopping && k.moves === this.phases.moves;
  }

  /**
   * The freshness rule for a view read from a watch's copy (docs/design.md, "Shard reads by
   * change"): a take that rests on time passing (takeRestsOnTime) is only as good as the copy's
   * record of the owner's heartbeats, or of the shard's absence, and the copy may lag. So the
   * group is read again, from the store (GroupCache.reread: its listGroup, sent now), and the view
   * takes it in: a slot the copy showed unchanged that the store shows written counts as changed
   * now, and an absent record the store holds is present, so takeAllowed, asked again at each
   * write, refuses those takes and their count starts over. Returns the takes that may go on:
   * without the takes that rest on time when the read fails.
   */
  private async confirmTimedTakes(takes: readonly number[], m: Session): Promise<readonly number[]> {
    const me = sessionKey(m);
    const timed = takes.filter((s) => takeRestsOnTime(shardFact(this.view, s), me));
    if (timed.length === 0) return takes;
    const sent = this.clock.monotonic();
    try {
      const list = await this.calls.call('list', (o) => this.cache.reread(o));
      this.view.observe(list, sent);
      this.endIfNamedByAnother(list);
      this.restoreVanished();
      this.endLostShards();
      return takes;
    } catch (err) {
      this.hinted = true;
      this.log.warn('reading the group before a take from an expired session failed: not taking those shards now', {
        shards: timed.length,
        reason: describeError(err),
      });
      const waiting = new Set(timed);
      return takes.filter((s) => !waiting.has(s));
    }
  }

  /** The plain facts a plan is made from, now (turn-facts.ts). */
  private turnFacts(m: Session): TurnFacts {
    return {
      me: this.sessionFacts(m),
      stopping: this.stopping,
      shards: this.facts.of(this.view, this.clock.monotonic()),
      slots: slotFacts(this.view),
      owned: this.phases.ownedShards(),
      ending: this.phases.endingShards(),
      kept: this.phases.keptShards(),
      ...this.takes.freshness(m),
    };
  }

  private sessionFacts(m: Session): SessionFacts {
    return { slot: m.slot, key: sessionKey(m), state: m.state };
  }

  /** Ends, without a release (not ours to free), each owned shard whose record the view shows gone or naming another session. */
  private endLostShards(): void {
    const m = this.mine;
    if (!m) return;
    // After every list: the facts as the memo keeps them (patched where shards changed), read for
    // the owned shards only, instead of judging each owned shard's owner again after every list
    // (up to 2,048 at N = 4096, M = 2).
    const shards = this.facts.of(this.view, this.clock.monotonic());
    this.ends.endPlanned(planLost({ me: this.sessionFacts(m), shards, owned: this.phases.ownedShards() }), m);
  }

  /**
   * Writes back, at once, the record of each held shard that the last list shows gone, so its
   * token is in the store before another member's absence wait for it ends (write-backs.ts).
   */
  private restoreVanished(): void {
    const m = this.mine;
    if (m) this.writeBacks.restore(m);
  }

  /** Frees each kept shard whose time has come (not while leaving: its records expire with the session). */
  private freeKept(): Promise<void> {
    return this.ends.freeKept(this.stopping);
  }

  private eligible(): boolean {
    return this.eligibility.campaigning();
  }

  private listDue(): boolean {
    if (this.listTriedMono === null) return true;
    const since = this.clock.monotonic() - this.listTriedMono;
    return since >= this.timings.retryPeriodMs || (this.hinted && since >= HINT_LIST_MS);
  }

  /**
   * A write of this member's failed. A conflict (another wrote the record) or a refusal is news
   * about the group: the next list comes at a hint's pace (HINT_LIST_MS). A store that did not
   * answer tells nothing: the write is tried again at the member's own pace (a retryPeriod), else
   * a store that refuses at once (a lock the write did not wait on, lock-waits.ts) would be asked
   * again some twenty times a second, every kept shard's release each time.
   */
  private writeFailed(err: unknown): void {
    if (!(err instanceof BackendUnavailableError)) this.hinted = true;
  }

  /** A store's hint that the group changed: the next turn lists (at most every HINT_LIST_MS). */
  private hint(): void {
    this.hinted = true;
    this.wakeUp();
  }

  private wakeUp(): void {
    if (this.wake instanceof AbortController) this.wake.abort();
    else this.wake = 'pending';
  }

  private async waitNext(): Promise<void> {
    if (this.wake === 'pending') {
      this.wake = null;
      // A hint waits for the list's own pace; anything else goes at once.
      if (!this.hinted || this.listDue()) return;
    }
    const now = this.clock.monotonic();
    let due = (this.listTriedMono ?? now) + this.timings.retryPeriodMs;
    const heartbeatSent = this.mine?.heartbeatSentMono ?? null;
    if (heartbeatSent !== null) due = Math.min(due, heartbeatSent + this.timings.retryPeriodMs);
    if (this.hinted && this.listTriedMono !== null) due = Math.min(due, this.listTriedMono + HINT_LIST_MS);
    for (const [, k] of this.phases.keptEntries()) if (k.untilMono > now) due = Math.min(due, k.untilMono);
    // When a judgment of time in the facts can flip (a session judged live could have expired,
    // an absence waited out), the turn plans at once, not at the next list or heartbeat: at M = 2
    // nothing else wakes a member near another's expiry. Not for the view's freshness (a
    // settled plan's until, most often, in an idle group): a view going stale only ever takes
    // writes away, so a plan then would be an O(N) one that finds nothing new.
    if (this.mine && this.opts.wakeAtFlips !== false) {
      const flip = this.view.nextFlipMono(Infinity);
      if (flip > now) due = Math.min(due, flip);
    }
    const wake = new AbortController();
    this.wake = wake;
    await sleep(this.clock, Math.max(0, due - now), wake.signal);
    this.wake = null;
  }
}
