/**
 * The arithmetic of a header raise as the stores do it inside their transaction
 * (GroupStore.raiseHighWater): one rule, so SQLite's, PostgreSQL's and the in-memory store's
 * raises refuse and answer alike. The members' own compare-and-swap raise (token-blocks.ts) starts
 * from the same place: the larger of the stored highWater and the highest the member saw.
 */
import { ConflictError, InvalidRecordError } from '../errors.js';
import type { GroupHeader, HighWaterRaise } from './group-store.js';

/** Refuses a raise no member asks for: a count below 1, or numbers that are not whole. */
export function checkRaise(group: string, raise: HighWaterRaise, maxToken: number): void {
  const whole = (n: unknown, min: number) => typeof n === 'number' && Number.isSafeInteger(n) && n >= min && n <= maxToken;
  if (!whole(raise.atLeast, 0) || !whole(raise.count, 1) || !whole(raise.shards, 1))
    throw new InvalidRecordError(
      `group ${group}: a raise of the header's highWater needs whole numbers, atLeast from 0 and count from 1 to ${maxToken}, and a shard count; got ${JSON.stringify(raise)}`,
    );
}

/** The header `stored` raised by `raise`, and where the raise started; refused as GroupStore.raiseHighWater says, nothing written. */
export function raiseStored(group: string, stored: GroupHeader, raise: HighWaterRaise, maxToken: number): { from: number; raised: GroupHeader } {
  if (stored.shards !== raise.shards)
    throw new ConflictError(`group ${group} has ${stored.shards} shards, not ${raise.shards}: its header's highWater was not raised`);
  const from = Math.max(stored.highWater ?? 0, raise.atLeast);
  if (from + raise.count > maxToken)
    throw new InvalidRecordError(
      `group ${group}: raising the header's highWater from ${from} by ${raise.count} would pass ${maxToken}, the largest token this store holds; nothing was written`,
    );
  return { from, raised: { ...stored, highWater: from + raise.count } };
}
