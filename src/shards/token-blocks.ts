/**
 * The group-wide high-water token (docs/design.md, "A group-wide high-water token"): the group
 * header's `highWater` is at least every shard token ever issued in the group. A member raises
 * it by compare-and-swap on the header before it issues tokens, a block of as many as the pass
 * takes, and every token it issues comes from that block. A token so issued is past every token
 * any record ever held, whoever saw that record, so a record deleted by hand (or lost with a
 * replaced SQLite file) cannot have its token issued again while the header lasts. Pure: the
 * member (shard-takes.ts) does the write.
 */
import type { GroupHeader } from '../backends/group-store.js';

/** Tokens reserved by one raise of the header: `next` up to `last`, each issued once. */
export class TokenBlock {
  private next: number;

  constructor(
    /** The header's highWater this block was raised from: every token issued before is at most this. */
    readonly from: number,
    /** The highWater the raise wrote: the block's last token. */
    readonly last: number,
  ) {
    this.next = from + 1;
  }

  /** The next token of the block, or null once it is used up. */
  take(): number | null {
    if (this.next > this.last) return null;
    return this.next++;
  }
}

/**
 * Where a raise starts: the header's highWater, or the highest token or highWater this member
 * ever saw in the group when that is higher (a header written before highWater existed, or
 * written back lower by a member that saw less).
 */
export function raiseBase(header: GroupHeader, highestSeen: number): number {
  return Math.max(header.highWater ?? 0, highestSeen);
}

/** The header raised by a block of `count` tokens from `base`: every other field as read. */
export function raisedHeader(header: GroupHeader, base: number, count: number): GroupHeader {
  return { ...header, highWater: base + count };
}

/**
 * The header as it should be written back or repaired: its highWater at least the highest this
 * member saw, or null when it already is (nothing to write).
 */
export function repairedHeader(header: GroupHeader, highestSeen: number): GroupHeader | null {
  if (header.highWater !== undefined && header.highWater >= highestSeen) return null;
  return { ...header, highWater: Math.max(header.highWater ?? 0, highestSeen) };
}
