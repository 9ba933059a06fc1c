import { ConflictError } from '../errors.js';
import type { GroupRecord, GroupStore } from '../backends/group-store.js';

/** Told of each write of `group` the store refused: the record, and the version it expected (null: a create). */
export type RefusalListener = (record: GroupRecord, expectedVersion: string | null) => void;

/**
 * The store, with every write of `group` it refuses as a lost compare-and-swap (a ConflictError,
 * or a batch's conflict outcome) told to `onRefused` before the caller hears of it. Everything
 * else is the store's own, called on the store itself. The member's copy of the group uses the
 * refusals as evidence that it may be stale (group-cache.ts).
 */
export function notingRefusals(store: GroupStore, group: string, onRefused: RefusalListener): GroupStore {
  const noteConflict = (record: GroupRecord, expected: string | null) => (err: unknown) => {
    if (err instanceof ConflictError) onRefused(record, expected);
    throw err;
  };
  const overrides: Partial<GroupStore> = {
    createGroupRecord: (g, record, opts) => {
      const sent = store.createGroupRecord(g, record, opts);
      return g === group ? sent.catch(noteConflict(record, null)) : sent;
    },
    updateGroupRecord: (g, record, expected, opts) => {
      const sent = store.updateGroupRecord(g, record, expected, opts);
      return g === group ? sent.catch(noteConflict(record, expected)) : sent;
    },
  };
  if (store.writeGroupRecords) {
    const batch = store.writeGroupRecords.bind(store);
    overrides.writeGroupRecords = async (g, writes, opts) => {
      const outcomes = await batch(g, writes, opts);
      if (g === group) outcomes.forEach((o, i) => !o.written && writes[i] && onRefused(writes[i].record, writes[i].expectedVersion));
      return outcomes;
    };
  }
  if (store.raiseAndTake) {
    const take = store.raiseAndTake.bind(store);
    overrides.raiseAndTake = async (g, raise, takes, opts) => {
      const answer = await take(g, raise, takes, opts);
      if (g === group) answer.outcomes.forEach((o, i) => !o.written && takes[i] && onRefused(takes[i].record, takes[i].expectedVersion));
      return answer;
    };
  }
  return new Proxy(store, {
    get(target, prop) {
      if (Object.hasOwn(overrides, prop)) return overrides[prop as keyof GroupStore];
      const value: unknown = Reflect.get(target, prop, target);
      // Bound to the store: its methods keep their own `this` (and its private state).
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
