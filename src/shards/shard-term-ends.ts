/**
 * The end of a shard's term at one member: the end-of-term gate each shard a pass gives up goes
 * through ("not owned" first, then its work drains, then it is released: the rule a lease's term
 * follows, src/holder/end-of-term-rule.ts), the kept shards freed once they could have expired,
 * and the release itself, a compare-and-swap from the version naming the session that owned it.
 */
import { ConflictError, describeError } from '../errors.js';
import type { ShardRecord, VersionedGroupRecord } from '../backends/group-store.js';
import { couldHaveExpiredAtMono, drainedEachWithin, releaseWaitsForLock } from '../holder/end-of-term-rule.js';
import { inBatches } from '../util/in-batches.js';
import { sessionKey, type SessionId } from './group-view.js';
import type { MemberContext } from './member-context.js';
import type { Session } from './member-session.js';
import { ReleaseFailures } from './release-failures.js';
import type { Ending } from './shard-phases.js';
import type { EndStep } from './turn-plan.js';
import type { WriteBacks } from './write-backs.js';

/** How a shard's term ended: given up or lost (the session), both released; 'not ours': another took the record, no release. */
export type TermEnd = 'given up' | 'lost' | 'not ours';

/** The end-of-term gate's drain for one shard (ShardMemberOptions.drain). */
export type ShardDrain = (shard: number, token: number, bound: AbortSignal) => Promise<boolean | void>;

export class ShardTermEnds {
  /** Releases the store did not answer, said once a turn (not once per shard). */
  private readonly releaseFailures = new ReleaseFailures();

  constructor(
    private readonly ctx: MemberContext,
    private readonly writeBacks: WriteBacks,
    /** Default: none, no work to wait for. */
    private readonly drain: ShardDrain | undefined,
    /** How long the gate waits for `drain`; past it the shard is kept until it could have expired. */
    private readonly drainTimeoutMs: number,
  ) {}

  /** Says the releases the store did not answer since the last call, in one line. */
  tellFailures(): void {
    this.releaseFailures.tell(this.ctx.log);
  }

  /** Ends the planned shards through the gate, in the plan's order. */
  endPlanned(steps: readonly EndStep[], m: Session): void {
    for (const e of steps) {
      if (e.reason === 'deleted')
        // Nobody but a person (or a replaced store) deletes a shard's record: its owner says so,
        // writes it back (WriteBacks) and releases it through the gate.
        this.ctx.log.warn('the record of an owned shard was deleted from the store: giving the shard up', {
          shard: e.shard,
          token: this.ctx.phases.owned(e.shard)!.token,
        });
    }
    this.end(
      steps.map((e) => ({ s: e.shard, reason: endReasonText(e), end: e.release ? ('given up' as const) : ('not ours' as const) })),
      m,
    );
  }

  /**
   * The end-of-term gate for the shards a pass gives up, each: "not owned" first (the listener),
   * then its work drains, then it is released; past the drain's bound (one for the pass) it is
   * kept until it could have expired (the last heartbeat before this moment + the lease
   * duration), then released. `end`: given up or lost (the session), both released alike but for
   * whether the release's first try may wait on another's lock (releaseWaitsForLock); 'not
   * ours': another took the record, no release.
   */
  end(ends: readonly { s: number; reason: string; end: TermEnd }[], m: Session): void {
    const { phases, sessions, log, listener, clock } = this.ctx;
    const ended: { s: number; e: Ending; end: TermEnd }[] = [];
    for (const { s, reason, end } of ends) {
      const e = phases.end(s, { slot: m.slot, session: m.session }, sessions.basis(m).mono);
      if (!e) continue;
      log.debug('gives up shard', { shard: s, token: e.token, reason });
      listener.onShardLost?.(s, e.token, reason);
      ended.push({ s, e, end });
    }
    // One bound for the pass (docs/design.md, "One bound per pass"); each shard's verdict its own.
    const drain = this.drain;
    const verdicts = drainedEachWithin(
      clock,
      this.drainTimeoutMs,
      ended.map(({ s, e }) => drain && ((bound: AbortSignal) => drain(s, e.token, bound))),
    );
    // The loop is woken once the pass's gates are over, not at each one's end: a batch of
    // releases answers hundreds at once, and each wake-up ran a whole turn (O(N)) between two
    // batches. A shard kept wakes it at once (its time is a wait the loop must know of).
    let open = ended.length;
    for (const [i, { s, e, end }] of ended.entries()) {
      void this.finish(s, e, end, verdicts[i]!).finally(() => {
        if (--open === 0) this.ctx.wakeUp();
      });
    }
  }

  private async finish(s: number, e: Ending, end: TermEnd, drained: Promise<boolean>): Promise<void> {
    const { phases, clock } = this.ctx;
    try {
      const stopped = await drained;
      if (!stopped) {
        const untilMono = couldHaveExpiredAtMono(e.renewedAtMono, this.ctx.timings.leaseDurationMs);
        this.ctx.log.error('the work of a shard did not finish within drainTimeoutMs: the shard is kept until it could have expired', {
          shard: s,
          token: e.token,
          drainTimeoutMs: this.drainTimeoutMs,
          holdMs: Math.max(0, Math.round(untilMono - clock.monotonic())),
        });
        // Its release is tried once it could have expired: the first round (a record not ours is left alone then).
        phases.keep(s, { session: e.session, token: e.token, untilMono, release: { end: end === 'given up' ? end : 'lost', round: 0 } });
        this.ctx.wakeUp();
        return;
      }
      // A vanished record being written back is released once it is back (or not at all).
      await this.writeBacks.of(s);
      if (end === 'not ours' || (await this.free({ record: this.releasedRecord(s, e), version: e.version }, e.session, releaseWaitsForLock(end, 0)))) return;
      // The app said the work stopped, but the store did not answer the release (cut off, or
      // its session lost for that reason): kept, due at once, so the release is tried again at
      // the first turn whose list is fresh, instead of the shard waiting for the session to
      // expire in everyone's view (issue 43). The turn's line says so (releaseFailures).
      phases.keep(s, { session: e.session, token: e.token, untilMono: clock.monotonic(), release: { end, round: 1 } });
      this.ctx.wakeUp();
    } finally {
      phases.endingOver(s, e);
    }
  }

  /**
   * Frees each kept shard whose time has come: not while the member is `stopping` (leaving: its
   * records expire with the session), nor from a view that is not fresh.
   */
  async freeKept(stopping: boolean): Promise<void> {
    const { phases, view } = this.ctx;
    if (stopping || !view.freshWithin(this.ctx.requestTimeoutMs)) return;
    const now = this.ctx.clock.monotonic();
    const due = phases.keptEntries().filter(([, k]) => now >= k.untilMono);
    await inBatches(due, this.ctx.calls.parallelWrites, async ([s, k]) => {
      const v = view.shard(s);
      // A release the store did not answer stays kept: the next fresh turn tries it again.
      if (!v || (await this.free(v, k.session, releaseWaitsForLock(k.release.end, k.release.round)))) phases.keptOver(s);
    });
  }

  private releasedRecord(s: number, e: Ending): ShardRecord {
    const cur = this.ctx.view.shard(s)?.record;
    return { kind: 'shard', index: s, holderIdentity: this.ctx.identity, owner: e.session, token: e.token, acquireTime: cur?.acquireTime ?? null };
  }

  /**
   * Writes shard `v` free (owner none, token kept), only from the version that names `session`.
   * Returns whether that is settled: written, or not ours to free (it names another, or another
   * wrote it since: a conflict); false when the store did not answer, so it may still name us.
   * `waitForLock` false: the write must not wait on another's lock (releaseWaitsForLock).
   */
  async free(v: VersionedGroupRecord<ShardRecord>, session: SessionId, waitForLock: boolean): Promise<boolean> {
    if (!v.record.owner || sessionKey(v.record.owner) !== sessionKey(session)) return true;
    const rec: ShardRecord = { ...v.record, holderIdentity: '', owner: null };
    try {
      const version = (await this.ctx.calls.writeShard(rec, v.version, undefined, waitForLock))!;
      this.ctx.view.wrote({ record: rec, version });
      return true;
    } catch (err) {
      // A conflict: another wrote it since (it is not ours to free any more). Anything else: the
      // caller keeps it to try again (a stray of this session is found again by the next turn).
      this.ctx.writeFailed(err);
      if (err instanceof ConflictError) return true;
      this.releaseFailures.note(v.record.index, describeError(err));
      return false;
    }
  }
}

/** The reason onShardLost hears for a planned end. */
function endReasonText(e: EndStep): string {
  switch (e.reason) {
    case 'deleted':
      return `the record of shard ${e.shard} disappeared`;
    case 'taken':
      return `shard ${e.shard} was taken by ${e.holder || 'nobody'}`;
    case 'leaving':
      return 'the member is leaving the group';
    case 'not eligible':
      return 'the app is not eligible';
    case 'moves':
      return `shard ${e.shard} moves to another member`;
  }
}
