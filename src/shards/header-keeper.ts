/**
 * The group's header as the running members keep it: a header that says another shard count
 * refuses this member; a deleted one is written back with this member's count and the highest
 * token it saw; a lower highWater or a shorter longest lease than this member saw is raised
 * (token-blocks.ts, longest-lease.ts). Founding a group, where nobody runs, is the join's
 * (session-upkeep.ts).
 */
import { ConflictError, InvalidConfigError, describeError } from '../errors.js';
import type { GroupHeader } from '../backends/group-store.js';
import { longestLeaseField, raisedLongestLease } from './longest-lease.js';
import type { MemberContext } from './member-context.js';
import { repairedHeader } from './token-blocks.js';

export class HeaderKeeper {
  constructor(private readonly ctx: MemberContext) {}

  /** A header that says another shard count: this member must not take part. */
  check(): void {
    const h = this.ctx.view.groupHeader?.record;
    if (h && h.shards !== this.ctx.shards) {
      throw new InvalidConfigError(
        `shard group ${this.ctx.group} has ${h.shards} shards, not ${this.ctx.shards}: every member of a group gives the same --shards (a group never has two counts)`,
      );
    }
  }

  /**
   * Keeps the group's header as the running members know it. Deleted (by hand: it looks like a
   * leader's Lease; or with a replaced SQLite file), it is written back with this member's count,
   * so a newcomer with another count is refused instead of founding a group of its own count
   * under the running members, and with the highest token or highWater this member saw. Present
   * with a highWater below that (written back by a member that saw less, or written before
   * highWater existed), it is raised to it: the next raise of a block starts past it. Its
   * longestLeaseSeconds likewise, to the longest lease this member saw announced
   * (longest-lease.ts): written back with it, raised when this member saw a longer one.
   */
  async keep(): Promise<void> {
    const h = this.ctx.view.groupHeader;
    const seen = this.ctx.view.highestSeen;
    const longestMs = this.ctx.view.longestLeaseSeen;
    if (!h) {
      const header: GroupHeader = {
        kind: 'group',
        index: 0,
        shards: this.ctx.shards,
        createdAt: this.ctx.clock.now(),
        highWater: seen,
        ...longestLeaseField(longestMs),
      };
      try {
        const version = await this.ctx.calls.call('create', (o) => this.ctx.store.createGroupRecord(this.ctx.group, header, o));
        this.ctx.view.wrote({ record: header, version });
        this.ctx.log.warn('the shard group header was deleted: wrote it back', {
          shards: this.ctx.shards,
          highWater: seen,
          why: 'a group never has two counts (a newcomer reads its count there), and no token is issued twice (the next block starts past highWater)',
        });
      } catch (err) {
        // Another member wrote it back first (a conflict): the next list reads it, and raises it if lower.
        this.ctx.writeFailed(err);
        if (!(err instanceof ConflictError)) this.ctx.log.warn('writing the group header back failed', { reason: describeError(err) });
      }
      return;
    }
    const raisedHigh = repairedHeader(h.record, seen);
    const raisedLease = raisedLongestLease(raisedHigh ?? h.record, longestMs);
    const repaired = raisedLease ?? raisedHigh;
    if (!repaired) return;
    try {
      const version = await this.ctx.calls.call('update', (o) => this.ctx.store.updateGroupRecord(this.ctx.group, repaired, h.version, o));
      this.ctx.view.wrote({ record: repaired, version });
      if (raisedLease)
        this.ctx.log.info("raised the group header's longest lease to the longest this member saw announced", {
          was: h.record.longestLeaseSeconds ?? null,
          longestLeaseSeconds: raisedLease.longestLeaseSeconds,
          why: 'a member that never saw that slot waits an absent shard out for it too',
        });
      if (!raisedHigh) return;
      if (h.record.highWater === undefined)
        this.ctx.log.info('the group header had no highWater (written before it existed): set it to the highest token seen', { highWater: repaired.highWater });
      else
        this.ctx.log.warn('the group header held a highWater below a token this member saw: raised it', {
          was: h.record.highWater,
          highWater: repaired.highWater,
          why: 'a header written back by a member that saw less would let a token be issued twice',
        });
    } catch (err) {
      // A conflict: another member raised or rewrote it since; the next list shows it.
      this.ctx.writeFailed(err);
      if (!(err instanceof ConflictError)) this.ctx.log.warn('raising the group header failed', { reason: describeError(err) });
    }
  }
}
