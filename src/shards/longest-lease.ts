/**
 * The longest lease in the group header (docs/design.md, "The longest lease in the header"): the
 * header's `longestLeaseSeconds` is at least the lease any member this member saw announced in
 * its slot, so a member that never saw that slot (it listed the group only after the slot was
 * lost with a replaced file, or deleted) still waits an absent shard out for it. A member raises
 * it by compare-and-swap when it has seen a longer lease than the header holds, and never lowers
 * it. Pure: the member does the write (header-keeper.ts; the join, session-upkeep.ts).
 */
import type { GroupHeader } from '../backends/group-store.js';

/** The field for a header written (created or written back) by a member that saw `seenMs`: none when it saw no lease. */
export function longestLeaseField(seenMs: number): Pick<GroupHeader, 'longestLeaseSeconds'> {
  return seenMs > 0 ? { longestLeaseSeconds: seenMs / 1000 } : {};
}

/** The header with its longestLeaseSeconds raised to `seenMs`, or null when it holds as long already (nothing to write). */
export function raisedLongestLease(header: GroupHeader, seenMs: number): GroupHeader | null {
  if (seenMs <= 0 || (header.longestLeaseSeconds ?? 0) * 1000 >= seenMs) return null;
  return { ...header, longestLeaseSeconds: seenMs / 1000 };
}
