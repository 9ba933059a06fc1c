/**
 * Shard records that vanished under the member that held them (docs/design.md, "A vanished
 * shard record is written back by its holder"): a SQLite file replaced under the group, a record
 * deleted by hand. The holder's token may be the only copy left: another member that never
 * listed it would create the shard, once its absence wait ends, with the token it can compute,
 * the same or a lower one. So the holder writes the record back at once, as it was: its token,
 * naming the session that held it. Such a record says "owned" (by a session others judge over
 * only a lease duration after they notice it), never "free"; the holder frees it once the
 * shard's work has stopped, through the same end-of-term gate as any give-up, and the next owner
 * takes it past that token. Only the live session's shards are written back (the member's
 * caller filters): a session that ended may have had its shards taken since, unseen.
 */
import type { ShardRecord } from '../backends/group-store.js';
import type { GroupView, SessionId } from './group-view.js';

/** A shard this member holds: owned, going through the end-of-term gate, or kept until it could have expired. */
export interface HeldShard {
  shard: number;
  token: number;
  /** The session that holds it (this member's current one, or the one whose term is ending). */
  session: SessionId;
}

/** The records to write back: one for each held shard the view lists no record for. */
export function vanishedRecords(view: GroupView, held: Iterable<HeldShard>, identity: string, now: Date): ShardRecord[] {
  const records: ShardRecord[] = [];
  for (const h of held) {
    if (view.shard(h.shard)) continue;
    records.push({
      kind: 'shard',
      index: h.shard,
      holderIdentity: identity,
      owner: { slot: h.session.slot, session: h.session.session },
      token: h.token,
      acquireTime: now,
    });
  }
  return records;
}
