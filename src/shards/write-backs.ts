/**
 * The write-backs of a member's vanished shard records (vanished-shards.ts): a held shard whose
 * record the last list shows gone is written back at once with its token, so the token is in the
 * store before another member's absence wait for it ends. The shard's release waits for its
 * write-back (ShardTermEnds).
 */
import { ConflictError, describeError } from '../errors.js';
import type { ShardRecord } from '../backends/group-store.js';
import { sessionKey } from './group-view.js';
import type { MemberContext } from './member-context.js';
import type { Session } from './member-session.js';
import { vanishedRecords } from './vanished-shards.js';

export class WriteBacks {
  /** Held shards whose vanished records are being written back: their release waits for it. */
  private readonly restoring = new Map<number, Promise<void>>();

  constructor(private readonly ctx: MemberContext) {}

  /** How many write-backs are in flight. */
  get size(): number {
    return this.restoring.size;
  }

  /** Shard `s`'s write-back in flight, if any: settles when it is over, never rejects. */
  of(s: number): Promise<void> | undefined {
    return this.restoring.get(s);
  }

  /**
   * Writes back the records of the shards session `m` holds that the view does not list. Only
   * what the live session holds: a session that ended (lost) may have had its shards taken since,
   * unseen, and its copy written back would erase the newer owner's record and, naming a session
   * that is over, be taken at once while that owner's work still runs (shard seed 15). Its
   * shards' tokens are in the header's highWater all the same.
   */
  restore(m: Session): void {
    const { view, phases } = this.ctx;
    // Only the shards whose records the view does not list are looked at further.
    const gone = phases.held(m, (s) => view.shard(s) === null).filter((h) => h.session.slot === m.slot && h.session.session === m.session);
    for (const rec of vanishedRecords(view, gone, this.ctx.identity, this.ctx.clock.now())) {
      if (this.restoring.has(rec.index)) continue;
      const done = this.writeBack(rec).finally(() => this.restoring.delete(rec.index));
      this.restoring.set(rec.index, done);
    }
  }

  private async writeBack(rec: ShardRecord): Promise<void> {
    const { view, phases, log } = this.ctx;
    try {
      const version = await this.ctx.calls.call('create', (o) => this.ctx.store.createGroupRecord(this.ctx.group, rec, o));
      view.wrote({ record: rec, version });
      const e = phases.ending(rec.index);
      if (e && e.token === rec.token && sessionKey(e.session) === sessionKey(rec.owner!)) e.version = version;
      log.warn('the record of a shard this member held disappeared from the store: wrote it back with its token', {
        shard: rec.index,
        token: rec.token,
        why: 'a member that never saw the token would create the shard again with it or a lower one',
      });
    } catch (err) {
      // A conflict: the record is there again (another member created it); the next list shows it.
      this.ctx.writeFailed(err);
      if (!(err instanceof ConflictError)) log.warn('writing back a vanished shard record failed', { shard: rec.index, reason: describeError(err) });
    }
  }
}
