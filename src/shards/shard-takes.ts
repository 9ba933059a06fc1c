/**
 * A member's takes of the shards its plan names for it (turn-plan.ts decides which): each judged
 * again right before its write, with a token from a block reserved by raising the group header's
 * highWater (token-blocks.ts), so no token is issued twice; and the one line said when shards it
 * is to take wait to be created.
 */
import { ConflictError, NotFoundError, describeError } from '../errors.js';
import type { RaisedAndTaken, ShardRecord } from '../backends/group-store.js';
import { sessionKey } from './group-view.js';
import type { MemberContext } from './member-context.js';
import type { Session } from './member-session.js';
import type { Owned } from './shard-phases.js';
import { TokenBlock, raiseBase, raisedHeader } from './token-blocks.js';
import { MAX_BATCH_ROWS } from './write-batches.js';
import { shardFact } from './turn-facts.js';
import { takeAllowed, type TakeFreshness } from './turn-plan.js';

/** Raises of the header's highWater tried in one pass, a list between two: another member's raise won each time before. */
const RAISE_ATTEMPTS = 3;

export class ShardTakes {
  /** The absent shards the log last said this member waits to create. */
  private absentSaid = new Set<number>();

  constructor(
    private readonly ctx: MemberContext,
    /** Reads the group again (ShardMember.list): after a raise of the header that lost its race. */
    private readonly relist: () => Promise<void>,
  ) {}

  /** How fresh the view and the session are now, for takeAllowed. */
  freshness(m: Session): TakeFreshness {
    return { fresh: this.ctx.view.freshWithin(this.ctx.requestTimeoutMs), sessionValid: this.ctx.sessions.valid(m) };
  }

  /** Whether session `m` may take shard `s` now, as the view shows it. */
  allowed(s: number, m: Session): boolean {
    return takeAllowed(shardFact(this.ctx.view, s), sessionKey(m), this.freshness(m));
  }

  /**
   * One info line when shards this member is to take start waiting to be created (absent, not
   * yet a lease duration): else a new group owns nothing for 15 s with nothing said, as a lease
   * absent is told. Said again only for shards absent anew (a record deleted later).
   */
  tellAbsent(takes: readonly number[]): void {
    const { view } = this.ctx;
    const waiting = takes.filter((s) => !view.shard(s) && !view.absentLongEnough(s));
    const fresh = waiting.filter((s) => !this.absentSaid.has(s));
    this.absentSaid = new Set(waiting);
    if (fresh.length === 0) return;
    const waitMs = Math.max(...fresh.map((s) => view.absentWaitLeftMs(s)));
    this.ctx.log.info('shards absent: creating them after a lease duration unless they appear', {
      absent: fresh.length,
      waitMs,
      createsAt: new Date(this.ctx.clock.now().getTime() + waitMs).toISOString(),
      why: 'a shard record never seen looks the same as one just deleted, whose owner may still be working on it',
    });
  }

  /**
   * Reserves `count` tokens by raising the header's highWater by compare-and-swap (token-blocks.ts).
   * A conflict (another member raised it first) reads the group again and retries from the new
   * value. Null, and no take this pass, when there is no header (it is written back first), the
   * raise kept losing, or the store failed.
   */
  async reserveTokens(count: number): Promise<TokenBlock | null> {
    const { view, store, calls, group } = this.ctx;
    if (!view.groupHeader) return null;
    if (store.raiseHighWater) return this.raiseInStore(count);
    for (let attempt = 0; attempt < RAISE_ATTEMPTS; attempt++) {
      const h = view.groupHeader;
      if (!h) return null;
      const base = raiseBase(h.record, view.highestSeen);
      const raised = raisedHeader(h.record, base, count);
      try {
        const version = await calls.call('update', (o) => store.updateGroupRecord(group, raised, h.version, o));
        view.wrote({ record: raised, version });
        return new TokenBlock(base, base + count);
      } catch (err) {
        this.ctx.writeFailed(err);
        if (!(err instanceof ConflictError)) {
          this.ctx.log.warn('raising the group high-water token failed: no shard is taken until it is raised', { reason: describeError(err) });
          return null;
        }
        await this.relist();
      }
    }
    return null;
  }

  /**
   * Reserves `count` tokens by the store's own raise (GroupStore.raiseHighWater: SQLite,
   * PostgreSQL): one transaction from the larger of the stored highWater and the highest this
   * member saw, with no race to lose, so the members taking at once after a leave do not queue on
   * the header one compare-and-swap at a time. Null, and no take this pass, when the store has no
   * header (it is written back first), says another shard count (the next list refuses the
   * group), or failed.
   */
  private async raiseInStore(count: number): Promise<TokenBlock | null> {
    const { view, store, calls, group } = this.ctx;
    const raise = { atLeast: view.highestSeen, count, shards: this.ctx.shards };
    try {
      const { from, header } = await calls.call('raise', (o) => store.raiseHighWater!(group, raise, o));
      view.wrote(header);
      return new TokenBlock(from, from + count);
    } catch (err) {
      this.ctx.writeFailed(err);
      if (!(err instanceof NotFoundError) && !(err instanceof ConflictError))
        this.ctx.log.warn('raising the group high-water token failed: no shard is taken until it is raised', { reason: describeError(err) });
      return null;
    }
  }

  /**
   * Takes `due` for session `m` by the store's raise and takes in one call (GroupStore.raiseAndTake:
   * SQLite, PostgreSQL), at most MAX_BATCH_ROWS a call: each shard judged again right before its call, as
   * take() judges it, its token the call's block in the order sent. False, nothing done, where the
   * store has no such call: the caller reserves tokens, then takes. A call refused whole (no
   * header, another shard count) or unanswered takes nothing this pass, as a failed raise.
   */
  async takeWithRaise(due: readonly number[], m: Session): Promise<boolean> {
    const { view, store, calls, group, clock, sessions } = this.ctx;
    if (!store.raiseAndTake) return false;
    // No header to raise (one deleted, written back first): no take this pass, as reserveTokens.
    if (!view.groupHeader) return true;
    for (let i = 0; i < due.length; i += MAX_BATCH_ROWS) {
      // The heartbeat's turn, and the event loop's, between two calls (as WriteBatches gives it).
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      const now = due.slice(i, i + MAX_BATCH_ROWS).filter((s) => this.allowed(s, m));
      if (now.length === 0) continue;
      const acquireTime = clock.now();
      // The token is the store's to fill in (from + 1 + the take's place): 0 here is never written.
      const takes = now.map((s): { record: ShardRecord; expectedVersion: string | null } => ({
        record: {
          kind: 'shard',
          index: s,
          holderIdentity: this.ctx.identity,
          owner: { slot: m.slot, session: m.session },
          token: 0,
          acquireTime,
        },
        expectedVersion: view.shard(s)?.version ?? null,
      }));
      let answer: RaisedAndTaken;
      try {
        answer = await calls.call('take', (o) => store.raiseAndTake!(group, { atLeast: view.highestSeen, shards: this.ctx.shards }, takes, o));
      } catch (err) {
        this.ctx.writeFailed(err);
        if (!(err instanceof NotFoundError) && !(err instanceof ConflictError))
          this.ctx.log.warn('taking shards failed: they are tried again at the next turn', { count: takes.length, reason: describeError(err) });
        return true;
      }
      view.wrote(answer.header);
      answer.outcomes.forEach((o, j) => {
        if (!o.written) return this.ctx.writeFailed(new ConflictError(o.conflict));
        const rec = { ...takes[j]!.record, token: answer.from + 1 + j };
        view.wrote({ record: rec, version: o.version });
        // As take(): a take answered after the session ended is not announced.
        if (sessions.current === m && sessions.valid(m)) this.gained(rec.index, m, { token: rec.token, version: o.version });
      });
    }
    return true;
  }

  /**
   * Takes shard `s` for session `m` if it is free, its owner's session is over, or it has been
   * absent a lease duration, with the next token of `block`: past every token the group ever issued.
   */
  async take(s: number, m: Session, block: TokenBlock): Promise<void> {
    const { view, clock, sessions } = this.ctx;
    // Judged again for each take, not only when the turn was planned: a pause between two
    // batches would otherwise judge another session over with a list from before the pause.
    if (!this.allowed(s, m)) return;
    const token = block.take();
    // A block is raised past every token this member saw, so past this record's; if a list
    // since showed a higher one (a header written back lower), the take waits for the next raise.
    if (token === null || token < view.nextToken(s)) return;
    const v = view.shard(s);
    const at = { mono: clock.monotonic(), wall: clock.now() };
    const rec: ShardRecord = {
      kind: 'shard',
      index: s,
      holderIdentity: this.ctx.identity,
      owner: { slot: m.slot, session: m.session },
      token,
      acquireTime: at.wall,
    };
    try {
      const version = await this.ctx.calls.writeShard(rec, v?.version ?? null, () => this.allowed(s, m));
      if (version === null) return;
      view.wrote({ record: rec, version });
      // A take answered after the session ended is not announced: its record names a session
      // that is over, and others take the shard once it could have expired.
      if (sessions.current !== m || !sessions.valid(m)) return;
      this.gained(s, m, { token: rec.token, version });
    } catch (err) {
      this.ctx.writeFailed(err);
      if (!(err instanceof ConflictError)) this.ctx.log.warn('taking a shard failed', { shard: s, reason: describeError(err) });
    }
  }

  private gained(s: number, m: Session, o: Owned): void {
    this.ctx.phases.own(s, o);
    this.ctx.log.debug('owns shard', { shard: s, token: o.token });
    this.ctx.listener.onShardGained?.({ shard: s, token: o.token, validUntil: this.ctx.sessions.validUntil(m) });
  }
}
