/**
 * The plain facts a turn is planned from (turn-plan.ts), read off the member's view at one
 * moment: each judgement of time (a session's liveness, an absence's wait) is the view's, on its
 * clock, now. Kept apart from the plan so the plan stays a function of values.
 */
import { sessionKey, type GroupView } from './group-view.js';
import type { ShardFacts, SlotFacts } from './turn-plan.js';

/** What the view says of every shard 0..N−1, now. */
export function shardFacts(view: GroupView): ShardFacts[] {
  return Array.from({ length: view.shardCount }, (_, s) => shardFact(view, s));
}

/** What the view says of shard `s`, now. */
export function shardFact(view: GroupView, s: number): ShardFacts {
  const rec = view.shard(s)?.record;
  if (!rec) return { present: false, owner: null, holder: '', ownerLive: false, absentLongEnough: view.absentLongEnough(s) };
  const o = rec.owner;
  return { present: true, owner: o ? sessionKey(o) : null, holder: rec.holderIdentity, ownerLive: o ? view.live(o) : false, absentLongEnough: false };
}

/** The live held slots, with whether this member has seen each written. */
export function slotFacts(view: GroupView): SlotFacts[] {
  return view.liveSlots().map((v) => ({
    slot: v.record.index,
    key: sessionKey({ slot: v.record.index, session: v.record.session }),
    identity: v.record.holderIdentity,
    state: v.record.state,
    witnessed: view.witnessed(v.record.index),
  }));
}
