/**
 * What the parts of one shard member share (docs/design.md, "One member's mutable state"): the
 * member (shard-member.ts: its life, pacing, reads and plan) builds it once and hands it to each
 * part: the session's upkeep (session-upkeep.ts), the group's header (header-keeper.ts), the
 * takes (shard-takes.ts), the ends of shards' terms (shard-term-ends.ts) and the write-backs of
 * vanished records (write-backs.ts); the store calls (group-calls.ts) are one of its members.
 * Nothing here is replaced after construction. The objects it names are shared, not owned: the
 * view is told of every part's writes (`wrote`), the phases are moved by the takes, the ends
 * and the write-backs, the session by the upkeep and by the member's lists. Each runs on the
 * one event loop, between awaits, so the order of a turn is what keeps them consistent; the
 * member's turn (shard-member.ts) is that order.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { GroupStore } from '../backends/group-store.js';
import type { Timings } from '../config/election-options.js';
import type { GroupCalls } from './group-calls.js';
import type { GroupView } from './group-view.js';
import type { MemberSession } from './member-session.js';
import type { ShardPhases } from './shard-phases.js';

/** A shard this member owns: its token, and until when the ownership counts unless renewed. */
export interface ShardTerm {
  shard: number;
  token: number;
  validUntil: Date;
}

export interface ShardListener {
  /** This member owns `term.shard` now, with a new token: start its work. */
  onShardGained?(term: ShardTerm): void;
  /** This member no longer owns `shard` (called before anything else happens): stop its work. */
  onShardLost?(shard: number, token: number, reason: string): void;
  /** A heartbeat succeeded: every owned shard's validUntil moved on. */
  onRenewed?(validUntil: Date): void;
  /** Anything a status shows changed (members, the slot, standing aside). */
  onChange?(): void;
}

export interface MemberContext {
  readonly group: string;
  readonly identity: string;
  readonly shards: number;
  readonly timings: Readonly<Timings>;
  readonly clock: Clock;
  readonly log: Logger;
  /** Bound on one store call; also how fresh the view must be to act on it. */
  readonly requestTimeoutMs: number;
  /** The group as this member last read it, and its own writes (group-view.ts). */
  readonly view: GroupView;
  /**
   * The store, through the read by change's writer (a refused write may show the copy stale).
   * Called only inside `calls.call`, which bounds each call in time and paces it on others' locks.
   */
  readonly store: GroupStore;
  readonly calls: GroupCalls;
  /** Each held shard's phase (shard-phases.ts). */
  readonly phases: ShardPhases;
  /** This member's session (member-session.ts). */
  readonly sessions: MemberSession;
  readonly listener: ShardListener;
  /**
   * A write of this member's failed. A conflict (another wrote the record) or a refusal is news
   * about the group: the next list comes at a hint's pace. A store that did not answer tells
   * nothing (ShardMember.writeFailed).
   */
  writeFailed(err: unknown): void;
  /** Ends the member loop's current wait: the next turn comes at once. */
  wakeUp(): void;
}
