import { countedMembers, targetFor, type Target, type TurnFacts } from './turn-plan.js';

/**
 * A member's last target and what it was computed from. A target is a function of the members
 * counted (in their order) and each shard's owner, so a turn after a change that moved neither
 * (another member's heartbeat: most turns of an idle group) does not assign the shards again.
 * At N = 4096 the assignment was most of a turn (docs/benchmarks.md), and a member of a group of
 * 32 turns on each of the other 31's heartbeats, about 16 a second.
 */
export class TargetMemo {
  private last: { ownersEpoch: number; members: string; target: Target } | null = null;

  /** targetOf(group, facts), computed again only when `ownersEpoch` (GroupView.ownersEpoch) or the members moved. */
  of(group: string, facts: Pick<TurnFacts, 'me' | 'slots' | 'shards'>, ownersEpoch: number): Target {
    const members = countedMembers(facts);
    const key = JSON.stringify(members.map((m) => [m.key, m.identity]));
    if (this.last && this.last.ownersEpoch === ownersEpoch && this.last.members === key) return this.last.target;
    const target = targetFor(group, facts, members);
    this.last = { ownersEpoch, members: key, target };
    return target;
  }
}
