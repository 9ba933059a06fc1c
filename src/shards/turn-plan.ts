/**
 * A shard member's turn as a decision (docs/design.md, "Shard groups"): from plain facts (what
 * the view says of each shard and live slot, this member's session and whether it is still
 * valid, whether the view is fresh enough to write a takeover from, what this member owns, is
 * ending and keeps), which shards it ends, which records naming it it frees, and which shards
 * it tries to take. No store, no clock, no logger: the member (shard-member.ts) gathers the
 * facts (turn-facts.ts), asks, and does the writes; so each rule is a row of a table
 * (turn-plan.test.ts), as the sharder of timebertt decides in pure functions and writes apart.
 */
import { assignShards, type AssignedMember } from './assignment.js';
import type { MemberState } from '../backends/group-store.js';

/** What the view says of one shard, judged at one moment. */
export interface ShardFacts {
  /** The shard's record exists (a shard never created, or deleted, has none). */
  present: boolean;
  /** The session its record names (sessionKey), null when free or absent. */
  owner: string | null;
  /** The identity its record names ('' when free). */
  holder: string;
  /** The named session may still be acting, as far as this member can tell (GroupView.live). */
  ownerLive: boolean;
  /** Absent for a lease duration of unbroken lists: it may be created (GroupView.absentLongEnough). */
  absentLongEnough: boolean;
}

/** A held slot whose session is live (GroupView.liveSlots). */
export interface SlotFacts {
  slot: number;
  /** Its session's key (sessionKey). */
  key: string;
  identity: string;
  state: MemberState;
  /** Written since this member's first list (GroupView.witnessed): else it may be a member long dead. */
  witnessed: boolean;
}

/** This member's session as the plan needs it. */
export interface SessionFacts {
  slot: number;
  key: string;
  state: MemberState;
}

/** A takeover is written only from a fresh view and by a valid session: both judged at the moment asked. */
export interface TakeFreshness {
  /** The view's last list was sent within a request timeout. */
  fresh: boolean;
  /** This member's session is still valid (its validity counts from the older of its last heartbeat and list). */
  sessionValid: boolean;
}

export interface TurnFacts extends TakeFreshness {
  me: SessionFacts;
  /** The member is stopping (leaving the group). */
  stopping: boolean;
  /** Indexed by shard, 0..N−1. */
  shards: readonly ShardFacts[];
  /** The live held slots (this member's included when live). */
  slots: readonly SlotFacts[];
  /** The shards this member owns, in the order it gained them (the order they end in). */
  owned: readonly number[];
  /** Shards going through the end-of-term gate, and shards kept until they could have expired. */
  ending: ReadonlySet<number>;
  kept: ReadonlySet<number>;
}

/** Who should own what this turn: the members counted and each shard's target (a session key, or null). */
export interface Target {
  members: AssignedMember[];
  owners: (string | null)[];
}

export type EndReason = 'deleted' | 'taken' | 'leaving' | 'not eligible' | 'moves';

/** An owned shard to end through the gate; `release` false: its record is not ours to free. */
export interface EndStep {
  shard: number;
  reason: EndReason;
  release: boolean;
  /** For 'taken': the identity the record names now ('' when free). */
  holder: string;
}

export interface TurnPlan {
  end: EndStep[];
  /** Shards whose records name this session but which it does not own: written free. */
  free: number[];
  /** Shards to try to take, in order; each is judged again by takeAllowed right before its write. */
  take: number[];
}

/**
 * The assignment's inputs from the view, then the assignment: the active live slots, counting
 * only slots this member has seen written (and its own). A slot its first list found unchanged
 * may be a member that crashed long before (its holder stays until the slot is taken); counted,
 * it would be assigned the shards the others released for this member (fix d20956e). A live
 * member is witnessed within a retry period; until then its shards are orphans here, which
 * takeAllowed leaves alone while it lives.
 */
export function targetOf(group: string, facts: Pick<TurnFacts, 'me' | 'slots' | 'shards'>): Target {
  return targetFor(group, facts, countedMembers(facts));
}

/** The members the assignment counts (targetOf): the active live slots this member has seen written, and its own. */
export function countedMembers(facts: Pick<TurnFacts, 'me' | 'slots'>): AssignedMember[] {
  return facts.slots.filter((v) => v.state === 'active' && (v.slot === facts.me.slot || v.witnessed)).map((v) => ({ key: v.key, identity: v.identity }));
}

/** The target for `members` (countedMembers): a function of them, in their order, and of each shard's owner. */
export function targetFor(group: string, facts: Pick<TurnFacts, 'shards'>, members: AssignedMember[]): Target {
  return { members, owners: assignShards(group, facts.shards.length, members, countedOwners(facts, members)) };
}

/** Each shard's owner as the assignment counts it: its session key when that is one of `members`, else null. */
export function countedOwners(facts: Pick<TurnFacts, 'shards'>, members: readonly AssignedMember[]): (string | null)[] {
  const keys = new Set(members.map((x) => x.key));
  return facts.shards.map((f) => (f.owner !== null && keys.has(f.owner) ? f.owner : null));
}

/**
 * The owned shards whose records the view shows gone or naming another session. One taken by
 * another session ends without a release (not ours to free); one gone ends with one: its owner
 * writes the record back with its token (vanished-shards.ts), drains, then frees it, so the next
 * owner takes it past that token. The member asks this right after each list and before
 * the list renews its session (fix 9ccbe86): the list proves the other records, not these.
 */
export function planLost(facts: Pick<TurnFacts, 'me' | 'shards' | 'owned'>): EndStep[] {
  const lost: EndStep[] = [];
  for (const s of facts.owned) {
    const f = facts.shards[s];
    if (!f?.present) lost.push({ shard: s, reason: 'deleted', release: true, holder: '' });
    else if (f.owner !== facts.me.key) lost.push({ shard: s, reason: 'taken', release: false, holder: f.holder });
  }
  return lost;
}

/** Which owned shards end this turn: the lost ones first, then everything while leaving, else what the target gives another member. */
export function planEnds(facts: TurnFacts, target: Target): EndStep[] {
  const end = planLost(facts);
  const gone = new Set(end.map((e) => e.shard));
  for (const s of facts.owned) {
    if (gone.has(s)) continue;
    if (facts.me.state === 'leaving' || facts.stopping) end.push({ shard: s, reason: facts.stopping ? 'leaving' : 'not eligible', release: true, holder: '' });
    else if (target.owners[s] !== null && target.owners[s] !== facts.me.key) end.push({ shard: s, reason: 'moves', release: true, holder: '' });
  }
  return end;
}

/**
 * Which records naming this session it frees, and which shards it tries to take; null when it
 * writes neither this turn (its view not fresh, or its session no longer valid). Shards owned,
 * ending or kept are left to their own steps.
 */
export function planWrites(facts: TurnFacts, target: Target): Omit<TurnPlan, 'end'> | null {
  if (!facts.fresh || !facts.sessionValid) return null;
  const me = facts.me.key;
  const active = facts.me.state === 'active';
  const owned = new Set(facts.owned);
  const { shards, ending, kept } = facts;
  const targets = target.owners;
  const free: number[] = [];
  const take: number[] = [];
  for (let s = 0; s < shards.length; s++) {
    // A shard neither named by this session nor targeted to it is neither freed nor taken: told
    // first, so the pass over N asks no set for most shards (members run interpreted).
    const mineHere = shards[s]!.owner === me;
    const targeted = targets[s] === me;
    if (!mineHere && !targeted) continue;
    if (owned.has(s) || ending.has(s) || kept.has(s)) continue;
    if (mineHere && (!targeted || !active)) free.push(s);
    else if (targeted && active && !facts.stopping) take.push(s);
  }
  return { free, take };
}

/**
 * The whole turn from one set of facts. The member asks in two halves (planEnds, then
 * planWrites after it frees its kept shards, whose records the takes then see free); from
 * facts that do not change in between, the halves give this.
 */
export function planTurn(facts: TurnFacts, target: Target): TurnPlan {
  const end = planEnds(facts, target);
  const ended = new Set(end.map((e) => e.shard));
  const writes = planWrites({ ...facts, owned: facts.owned.filter((s) => !ended.has(s)), ending: new Set([...facts.ending, ...ended]) }, target);
  return { end, free: writes?.free ?? [], take: writes?.take ?? [] };
}

/**
 * Whether a change of the records of `changed` can concern a plan that found nothing to do, the
 * target and every other shard's facts as they were: a shard this member holds (owned, ending or
 * kept: the plan's ends ask of those), or one whose record now names this session (its writes
 * free such a record). Its writes ask of no other shard but those the target gives it, and in a
 * plan that found nothing to do each of those is held here (else it was a take), or the member
 * takes none (leaving or stopping). So such a plan finds nothing again after changes that concern
 * it in none of them (the property turn-plan.test.ts checks on random groups): after a leave in a
 * group of 32, each member's turns after the others' takes.
 */
export function changesConcernPlan(changed: readonly number[], facts: Pick<TurnFacts, 'me' | 'shards'>, holds: (s: number) => boolean): boolean {
  const me = facts.me.key;
  for (const s of changed) if (holds(s) || facts.shards[s]!.owner === me) return true;
  return false;
}

/**
 * Whether shard `f` may be written as this session's now: judged at the write, not only when
 * the turn was planned, since a pause between two batches of takes (a stopped process, a long
 * GC) would otherwise judge another session over with a list from before the pause and the
 * clock after it (fix dcd83b4). Free or named by a session that is over: yes; absent: once
 * absent a lease duration of unbroken lists (fix c148df0 is how GroupView counts that); a
 * record naming this session (a take whose answer was lost) is taken anew, past its token.
 */
export function takeAllowed(f: ShardFacts, me: string, freshness: TakeFreshness): boolean {
  if (!freshness.fresh || !freshness.sessionValid) return false;
  if (!f.present) return f.absentLongEnough;
  return !(f.owner !== null && f.owner !== me && f.ownerLive);
}

/**
 * Whether a take of shard `f` rests on time passing: its record names another session judged
 * over (its slot seen unchanged for a lease duration, or out of its slot that long), or it has
 * been absent a lease duration. Such a judgment is only as good as the view's record of what
 * changed: from a watch's copy, which may have missed a heartbeat or a creation, the member
 * re-reads the store before it takes (docs/design.md, "Shard reads by change"). A take of a free
 * shard does not: its compare-and-swap is the whole judgment.
 */
export function takeRestsOnTime(f: ShardFacts, me: string): boolean {
  if (!f.present) return f.absentLongEnough;
  return f.owner !== null && f.owner !== me && !f.ownerLive;
}
