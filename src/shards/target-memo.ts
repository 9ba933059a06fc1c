import { assignShards, memberHashes, quotasOf } from './assignment.js';
import { countedMembers, countedOwners, type Target, type TurnFacts } from './turn-plan.js';

/** What the memo reads of the view (GroupView): its epochs, and the shards whose records changed since one. */
export interface TargetBasis {
  readonly ownersEpoch: number;
  readonly structureEpoch: number;
  changesSince(epoch: number): { readonly shards: readonly number[] } | null;
}

/** A target and what it was computed from, followed since by the changes that conform to it. */
interface Kept {
  /** The members counted, in their order (countedMembers), as a key. */
  members: string;
  ownersEpoch: number;
  structureEpoch: number;
  /** Each shard's owner as the assignment counts it (countedOwners), as it stands now. */
  owners: (string | null)[];
  /** How many shards each member holds in `owners`. */
  held: Map<string, number>;
  hashes: Map<string, number>;
  quotas: Map<string, number>;
  target: Target;
}

/**
 * A member's last target and what it was computed from. A target is a function of the members
 * counted (in their order) and each shard's owner, so a turn after a change that moved neither
 * (another member's heartbeat: most turns of an idle group) does not assign the shards again.
 * Nor does a change that conforms to it (docs/design.md, "A turn after another member's take"):
 * a shard taken by the member it targets, or given up by a member it does not target, leaves
 * every member's kept shards and the greedy pass over the rest as they were, as long as the
 * quotas stand; so such changes are followed in O(changes + M log M) instead of assigning N
 * shards again. After a leave of a member of 32, each of the 31 others assigned again in O(N)
 * after each other's take.
 */
export class TargetMemo {
  private last: Kept | null = null;

  /**
   * targetOf(group, facts), the facts being the view's now: computed again only when the members
   * moved or an owner moved in a way the target did not ask for.
   */
  of(group: string, facts: Pick<TurnFacts, 'me' | 'slots' | 'shards'>, view: TargetBasis): Target {
    const members = countedMembers(facts);
    const key = JSON.stringify(members.map((m) => [m.key, m.identity]));
    const k = this.last;
    if (k && k.members === key && (k.ownersEpoch === view.ownersEpoch || this.follow(k, facts, view))) {
      k.ownersEpoch = view.ownersEpoch;
      k.structureEpoch = view.structureEpoch;
      return k.target;
    }
    const owners = countedOwners(facts, members);
    const target = { members, owners: assignShards(group, owners.length, members, owners) };
    const held = new Map(members.map((m) => [m.key, 0]));
    for (const o of owners) if (o !== null) held.set(o, held.get(o)! + 1);
    const hashes = memberHashes(group, members);
    const quotas = quotasOf(owners.length, members, hashes, (m) => held.get(m)!);
    this.last = { members: key, ownersEpoch: view.ownersEpoch, structureEpoch: view.structureEpoch, owners, held, hashes, quotas, target };
    return target;
  }

  /**
   * Takes the owner changes since `k` was last brought up to date into it, when each conforms to
   * its target and the quotas stand: true, `k.target` is the target now. False when one does not,
   * or the view cannot list them (`k` is then left half followed: the caller computes again).
   */
  private follow(k: Kept, facts: Pick<TurnFacts, 'shards'>, view: TargetBasis): boolean {
    // Every owner change moves the structure epoch too (GroupView), so the shards listed since
    // the epoch `k` was brought up to date at hold every owner change since.
    // A slot's change moves no counted owner the members' key has not: only the shards matter.
    const changed = view.changesSince(k.structureEpoch)?.shards ?? null;
    if (changed === null || changed.length > k.owners.length / 4) return false;
    const target = k.target.owners;
    for (const s of changed) {
      const o = facts.shards[s]!.owner;
      const now = o !== null && k.held.has(o) ? o : null;
      const before = k.owners[s]!;
      if (now === before) continue;
      // Taken by the member it targets, or given up by one it does not: every member keeps what
      // it kept, and the greedy pass gives every other shard as before (the proof in design.md).
      if ((now !== null && now !== target[s]) || (before !== null && before === target[s])) return false;
      k.owners[s] = now;
      if (before !== null) k.held.set(before, k.held.get(before)! - 1);
      if (now !== null) k.held.set(now, k.held.get(now)! + 1);
    }
    // Who holds the most orders the remainder's extra shards: a take may move them.
    const quotas = quotasOf(k.owners.length, k.target.members, k.hashes, (m) => k.held.get(m)!);
    for (const [m, q] of quotas) if (k.quotas.get(m) !== q) return false;
    return true;
  }
}
