/**
 * The plain facts a turn is planned from (turn-plan.ts), read off the member's view at one
 * moment: each judgement of time (a session's liveness, an absence's wait) is the view's, on its
 * clock, now. Kept apart from the plan so the plan stays a function of values.
 */
import { sessionKey, type GroupView, type SessionId } from './group-view.js';
import type { ShardFacts, SlotFacts } from './turn-plan.js';

/**
 * What the view says of every shard 0..N−1, now. Each owner session is judged once (its key and
 * liveness), not once per shard it names: at N = 4096 the per-shard judgment was a large part of
 * a turn. One moment for all, as a plan is made at one moment.
 */
export function shardFacts(view: GroupView): ShardFacts[] {
  const judged = new Map<number, Map<number, { key: string; live: boolean }>>();
  const judge = (o: SessionId) => {
    let bySession = judged.get(o.slot);
    if (!bySession) judged.set(o.slot, (bySession = new Map<number, { key: string; live: boolean }>()));
    let j = bySession.get(o.session);
    if (!j) bySession.set(o.session, (j = { key: sessionKey(o), live: view.live(o) }));
    return j;
  };
  const facts = new Array<ShardFacts>(view.shardCount);
  for (let s = 0; s < view.shardCount; s++) {
    const rec = view.shard(s)?.record;
    if (!rec) facts[s] = { present: false, owner: null, holder: '', ownerLive: false, absentLongEnough: view.absentLongEnough(s) };
    else {
      const j = rec.owner ? judge(rec.owner) : null;
      facts[s] = { present: true, owner: j?.key ?? null, holder: rec.holderIdentity, ownerLive: j?.live ?? false, absentLongEnough: false };
    }
  }
  return facts;
}

/**
 * shardFacts kept between the asks of one turn and of the turns after it while they stand, and
 * patched where only shard records moved. The facts are a function of the view's structure and of
 * time, and neither another member's heartbeat nor time short of the view's next flip moves them
 * (docs/design.md, "Quiet turns"; quiet-turn-facts.test.ts checks exactly that). A change of shard
 * records (another member's take or release: GroupView.changesSince) moves the facts of those
 * shards alone: the sessions it names or no longer names are the only ones whose standing it
 * can move, and a session's standing is only read through the shards naming it, each one changed
 * or already naming it (then its standing was already counted from that notice). A slot's change
 * (a member leaving, rejoining, revived) moves the facts of the shards naming its session before
 * and after, found by a pass over the kept facts that judges only those. In a group of 32, every
 * member planned after each other member's take, each time in O(N), and judged all N again when
 * a member left.
 */
export class ShardFactsMemo {
  /** `orphans`: how many of `facts` have no live owner, counted at the first ask and patched with the facts; null until asked. */
  private last: { epoch: number; untilMono: number; facts: readonly ShardFacts[]; orphans: number | null } | null = null;

  /** How many shards have no live owner now (free, absent, or named by a session that is not live): the facts' count, patched with them. */
  orphans(view: GroupView, nowMono: number): number {
    const facts = this.of(view, nowMono);
    const l = this.last!;
    if (l.orphans === null) {
      let n = 0;
      for (let s = 0; s < facts.length; s++) if (!facts[s]!.ownerLive) n++;
      l.orphans = n;
    }
    return l.orphans;
  }

  /** shardFacts(view) now: kept while the view's structure epoch and next flip stand, patched where only shards changed, else computed again. */
  of(view: GroupView, nowMono: number): readonly ShardFacts[] {
    const l = this.last;
    if (l && l.epoch === view.structureEpoch && nowMono < l.untilMono) return l.facts;
    // The next flip first, then the facts: a session ending while the facts are judged is then
    // live in them and its end still bounds them. The other way round (a hostile review's find),
    // the end passed before the flip was asked was in neither, and the facts kept a session live
    // until the structure moved. No freshness term: the facts of shards do not say whether the view is fresh.
    const untilMono = view.nextFlipMono(Infinity);
    const changed = l && nowMono < l.untilMono ? view.changesSince(l.epoch) : null;
    let facts: ShardFacts[];
    if (l && changed !== null && changed.shards.length < view.shardCount / 4) {
      // The facts of the shards unchanged still hold (no flip since they were judged), but for
      // those naming a session a slot's change moved: judged again, found by the key their facts
      // hold. A session named anew, or revived, may end sooner than the old flip: the earlier of
      // the two bounds them all.
      facts = l.facts.slice();
      let orphans = l.orphans;
      const judge = (s: number) => {
        const was = facts[s]!;
        const now = shardFact(view, s);
        facts[s] = now;
        if (orphans !== null) orphans += Number(!now.ownerLive) - Number(!was.ownerLive);
      };
      if (changed.sessions.length > 0) {
        const moved = new Set(changed.sessions);
        for (let s = 0; s < facts.length; s++) if (facts[s]!.owner !== null && moved.has(facts[s]!.owner!)) judge(s);
      }
      for (const s of changed.shards) judge(s);
      this.last = { epoch: view.structureEpoch, untilMono: Math.min(untilMono, l.untilMono), facts, orphans };
      return facts;
    }
    facts = shardFacts(view);
    this.last = { epoch: view.structureEpoch, untilMono, facts, orphans: null };
    return facts;
  }
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
