/**
 * Where each shard a member holds stands, in one map (docs/design.md, "One member's mutable
 * state"): owned (its work may run), ending (given up, going through the end-of-term gate), or
 * kept (its work was not seen to stop in time: its record keeps naming the session that owned it
 * until it could have expired). A shard is in at most one phase, so no step can see it owned and
 * ending at once; a shard not in the map is not this member's.
 *
 * Each phase change moves the shard to the end of the map: within a phase, shards come in the
 * order they entered it (owned shards in the order gained, the order they end in).
 */
import type { SessionId } from './group-view.js';
import type { HeldShard } from './vanished-shards.js';

export interface Owned {
  token: number;
  /** The shard record's version as this member last wrote it. */
  version: string;
}

/** A shard whose ownership ended here and is going through the gate. */
export interface Ending extends Owned {
  session: SessionId;
  /** When the last heartbeat before the end started: the shard could expire a lease duration after. */
  renewedAtMono: number;
}

/**
 * A shard whose work was not seen to stop in time: freed once it could have expired (untilMono).
 * Also one whose work stopped but whose release the store did not answer: untilMono is then the
 * gate's end, so the first turn with a fresh list frees it.
 */
export interface Kept {
  session: SessionId;
  token: number;
  untilMono: number;
  /**
   * How the shard's term ended and the round its release is at (0: not tried yet, a drain that
   * did not finish; 1: tried, unanswered): whether the next try may wait on another's lock
   * (releaseWaitsForLock, the rule the lease's release follows too).
   */
  release: { end: 'given up' | 'lost'; round: number };
}

type Phase = ({ phase: 'owned' } & Owned) | ({ phase: 'ending' } & Ending) | ({ phase: 'kept' } & Kept);

/** What ShardPhases' lists give, kept between two moves. */
interface PhaseLists {
  owned: readonly number[];
  ending: ReadonlySet<number>;
  kept: ReadonlySet<number>;
  endingEntries: readonly (readonly [number, Ending])[];
  keptEntries: readonly (readonly [number, Kept])[];
  /** Built at the first ask (ownedByShard). */
  ownedByShard?: readonly { shard: number; token: number }[];
}

export class ShardPhases {
  private readonly byShard = new Map<number, Phase>();
  /** How many shards are owned: asked once per shard gained or lost, where a count over the map made a pass of N shards O(N²). */
  private ownedTotal = 0;
  /** Moves on whenever a shard changes phase (or leaves them): a settled plan rests on none having moved. */
  private movesCount = 0;
  /**
   * Each phase's shards as the lists below give them, built at most once per move: a turn asks
   * for them several times, and a member leaving with 1,365 shards going through their gates built
   * them again (a pass over the map each, interpreted under --jitless) at every turn, while its
   * releases waited for the same thread. Null: built at the next ask.
   */
  private lists: PhaseLists | null = null;

  /** Moves on whenever a shard changes phase or is no longer held (movesCount). */
  get moves(): number {
    return this.movesCount;
  }

  /** Shard `s` is owned now, with its new token. */
  own(s: number, o: Owned): void {
    this.move(s, { phase: 'owned', ...o });
  }

  owned(s: number): Owned | undefined {
    const p = this.byShard.get(s);
    return p?.phase === 'owned' ? p : undefined;
  }

  /** The owned shards, in the order gained. */
  ownedShards(): readonly number[] {
    return this.phaseLists().owned;
  }

  /**
   * The owned shards and their tokens by shard number, frozen and shared until the next move: a
   * snapshot is taken at every turn for shards.json, and a member owning 2,000 shards built and
   * sorted them all each time.
   */
  ownedByShard(): readonly { shard: number; token: number }[] {
    const l = this.phaseLists();
    l.ownedByShard ??= Object.freeze(l.owned.map((shard) => Object.freeze({ shard, token: this.byShard.get(shard)!.token })).sort((a, b) => a.shard - b.shard));
    return l.ownedByShard;
  }

  ownedCount(): number {
    return this.ownedTotal;
  }

  /** Owned shard `s` starts through the gate; returns its ending, whose version a write-back may move on. */
  end(s: number, session: SessionId, renewedAtMono: number): Ending | undefined {
    const o = this.owned(s);
    if (!o) return undefined;
    const e: Ending = { token: o.token, version: o.version, session, renewedAtMono };
    this.move(s, { phase: 'ending', ...e });
    // The map's object, so that a change to it (a write-back's version) is the map's.
    return this.byShard.get(s) as Ending;
  }

  ending(s: number): Ending | undefined {
    const p = this.byShard.get(s);
    return p?.phase === 'ending' ? p : undefined;
  }

  endingShards(): ReadonlySet<number> {
    return this.phaseLists().ending;
  }

  /** Ending shard `s` is kept until `untilMono`. */
  keep(s: number, k: Kept): void {
    this.move(s, { phase: 'kept', ...k });
  }

  /** The kept shards, in the order kept. */
  keptEntries(): readonly (readonly [number, Kept])[] {
    return this.phaseLists().keptEntries;
  }

  keptShards(): ReadonlySet<number> {
    return this.phaseLists().kept;
  }

  /** The gate of `e` is over: shard `s` is not held any more (unless it was kept meanwhile). */
  endingOver(s: number, e: Ending): void {
    if (this.byShard.get(s) === e) this.remove(s);
  }

  /** Kept shard `s` was freed (or its record is gone): not held any more. */
  keptOver(s: number): void {
    if (this.byShard.get(s)?.phase === 'kept') this.remove(s);
  }

  /** Whether every shard held is owned: none going through its gate, none kept. */
  onlyOwned(): boolean {
    return this.byShard.size === this.ownedTotal;
  }

  /** Whether shard `s` is held here in any phase: owned, ending or kept. */
  holds(s: number): boolean {
    return this.byShard.has(s);
  }

  /** Whether any shard is owned or going through its gate (a leaving member waits for none). */
  anyOwnedOrEnding(): boolean {
    for (const p of this.byShard.values()) if (p.phase !== 'kept') return true;
    return false;
  }

  /**
   * Every shard held that `only` accepts, with the session holding it (owned ones by `current`):
   * owned, then ending, then kept. `only` is asked before a shard's entry is built: the member
   * asks after every list for the few whose records are gone, of all it holds.
   */
  held(current: SessionId | null, only: (s: number) => boolean = () => true): HeldShard[] {
    const l = this.phaseLists();
    const held: HeldShard[] = [];
    if (current) for (const s of l.owned) if (only(s)) held.push({ shard: s, token: this.byShard.get(s)!.token, session: current });
    for (const [shard, e] of l.endingEntries) if (only(shard)) held.push({ shard, token: e.token, session: e.session });
    for (const [shard, k] of l.keptEntries) if (only(shard)) held.push({ shard, token: k.token, session: k.session });
    return held;
  }

  private move(s: number, p: Phase): void {
    this.remove(s);
    this.movesCount++;
    this.lists = null;
    this.byShard.set(s, p);
    if (p.phase === 'owned') this.ownedTotal++;
  }

  private remove(s: number): void {
    if (this.byShard.has(s)) {
      this.movesCount++;
      this.lists = null;
    }
    if (this.byShard.get(s)?.phase === 'owned') this.ownedTotal--;
    this.byShard.delete(s);
  }

  /** The phases' lists as the map stands, in one pass; shared until the next move (frozen where that is possible). */
  private phaseLists(): PhaseLists {
    if (this.lists) return this.lists;
    const owned: number[] = [];
    const ending = new Set<number>();
    const kept = new Set<number>();
    const endingEntries: (readonly [number, Ending])[] = [];
    const keptEntries: (readonly [number, Kept])[] = [];
    for (const [s, p] of this.byShard) {
      if (p.phase === 'owned') owned.push(s);
      else if (p.phase === 'ending') {
        ending.add(s);
        endingEntries.push(Object.freeze([s, p] as const));
      } else {
        kept.add(s);
        keptEntries.push(Object.freeze([s, p] as const));
      }
    }
    this.lists = { owned: Object.freeze(owned), ending, kept, endingEntries: Object.freeze(endingEntries), keptEntries: Object.freeze(keptEntries) };
    return this.lists;
  }
}
