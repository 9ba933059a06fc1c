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

export class ShardPhases {
  private readonly byShard = new Map<number, Phase>();
  /** How many shards are owned: asked once per shard gained or lost, where a count over the map made a pass of N shards O(N²). */
  private ownedTotal = 0;
  /** Moves on whenever a shard changes phase (or leaves them): a settled plan rests on none having moved. */
  private movesCount = 0;

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
  ownedShards(): number[] {
    return this.shardsIn('owned');
  }

  ownedEntries(): [number, Owned][] {
    return this.entriesIn('owned');
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

  endingShards(): Set<number> {
    return new Set(this.shardsIn('ending'));
  }

  /** Ending shard `s` is kept until `untilMono`. */
  keep(s: number, k: Kept): void {
    this.move(s, { phase: 'kept', ...k });
  }

  /** The kept shards, in the order kept. */
  keptEntries(): [number, Kept][] {
    return this.entriesIn('kept');
  }

  keptShards(): Set<number> {
    return new Set(this.shardsIn('kept'));
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

  /** Whether any shard is owned or going through its gate (a leaving member waits for none). */
  anyOwnedOrEnding(): boolean {
    for (const p of this.byShard.values()) if (p.phase !== 'kept') return true;
    return false;
  }

  /** Every shard held, with the session holding it (owned ones by `current`): owned, then ending, then kept. */
  held(current: SessionId | null): HeldShard[] {
    const session = (p: Phase): SessionId | null => (p.phase === 'owned' ? current : p.session);
    const held: HeldShard[] = [];
    for (const phase of ['owned', 'ending', 'kept'] as const) {
      for (const [shard, p] of this.byShard) {
        const s = p.phase === phase ? session(p) : null;
        if (s) held.push({ shard, token: p.token, session: s });
      }
    }
    return held;
  }

  private move(s: number, p: Phase): void {
    this.remove(s);
    this.movesCount++;
    this.byShard.set(s, p);
    if (p.phase === 'owned') this.ownedTotal++;
  }

  private remove(s: number): void {
    if (this.byShard.has(s)) this.movesCount++;
    if (this.byShard.get(s)?.phase === 'owned') this.ownedTotal--;
    this.byShard.delete(s);
  }

  private shardsIn(phase: Phase['phase']): number[] {
    return this.entriesIn(phase).map(([s]) => s);
  }

  private entriesIn<P extends Phase['phase']>(phase: P): [number, Extract<Phase, { phase: P }>][] {
    const out: [number, Extract<Phase, { phase: P }>][] = [];
    for (const [s, p] of this.byShard) if (p.phase === phase) out.push([s, p as Extract<Phase, { phase: P }>]);
    return out;
  }
}
