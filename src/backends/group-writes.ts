/**
 * What the stores' batches of group writes share (GroupStore.writeGroupRecords): the checks
 * every store makes before it writes anything, and the writes one by one, a bounded number in
 * flight, for a store that has no transaction to put them in (Kubernetes) or no batch call.
 */
import { ConflictError, InvalidRecordError } from '../errors.js';
import { throwIfAborted } from '../abort.js';
import type { CallOptions } from './lease-store.js';
import { recordKey, type GroupStore, type GroupWrite, type GroupWriteOutcome, type HighWaterRaise } from './group-store.js';
import { checkRaise } from './high-water-raise.js';
import { checkGroupName, checkGroupRecord } from './group-record-check.js';

/**
 * Refuses the whole batch, before anything is written, when a record breaks a bound or two
 * writes name one record (their order inside one transaction would decide which one is kept).
 */
export function checkGroupWrites(group: string, writes: readonly GroupWrite[], maxToken?: number): void {
  checkGroupName(group);
  const keys = new Set<string>();
  for (const w of writes) {
    checkGroupRecord(group, w.record, maxToken);
    const key = recordKey(w.record);
    if (keys.has(key))
      throw new InvalidRecordError(`group ${group}: the batch was not written: it writes record ${key} twice (one write per record in a batch)`);
    keys.add(key);
  }
}

/**
 * Refuses a raise and its takes (GroupStore.raiseAndTake) before anything is written, as every
 * store that has the call must: the raise of one token per take as raiseHighWater checks it, the
 * takes as a batch's writes, and each of them a shard's. Returns the raise with its count.
 */
export function checkRaiseAndTakes(group: string, raise: Omit<HighWaterRaise, 'count'>, takes: readonly GroupWrite[]): HighWaterRaise {
  const full = { ...raise, count: takes.length };
  checkRaise(group, full, Number.MAX_SAFE_INTEGER);
  checkGroupWrites(group, takes);
  const notShard = takes.find((w) => w.record.kind !== 'shard');
  if (notShard) throw new InvalidRecordError(`group ${group}: the takes were not written: record ${recordKey(notShard.record)} is not a shard's`);
  return full;
}

/**
 * The writes one by one, at most `inFlight` at once, each a create or a compare-and-swap: a
 * ConflictError is that write's outcome. Any other failure stops the batch (no write is started
 * after it, those in flight are waited for) and rejects with it: which of the others were
 * written is then unknown, as for a single write whose answer was lost.
 */
export async function writeEachGroupRecord(
  store: Pick<GroupStore, 'createGroupRecord' | 'updateGroupRecord'>,
  group: string,
  writes: readonly GroupWrite[],
  inFlight: number,
  opts?: CallOptions,
): Promise<GroupWriteOutcome[]> {
  throwIfAborted(opts);
  const outcomes: GroupWriteOutcome[] = new Array<GroupWriteOutcome>(writes.length);
  let next = 0;
  let failure: { err: unknown } | null = null;
  const worker = async (): Promise<void> => {
    while (failure === null && next < writes.length) {
      const i = next++;
      const w = writes[i]!;
      try {
        const version =
          w.expectedVersion === null
            ? await store.createGroupRecord(group, w.record, opts)
            : await store.updateGroupRecord(group, w.record, w.expectedVersion, opts);
        outcomes[i] = { written: true, version };
      } catch (err) {
        if (err instanceof ConflictError) outcomes[i] = { written: false, conflict: err.message };
        else failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, inFlight), writes.length) }, worker));
  if (failure !== null) throw (failure as { err: unknown }).err;
  return outcomes;
}
