/**
 * WriteBatches on its own: what goes in one call, the bound on a call's rows, the turns between
 * calls, a withdrawn write, a lost row and a failed call.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BackendUnavailableError } from '../errors.js';
import type { GroupWrite, GroupWriteOutcome, ShardRecord } from '../backends/group-store.js';
import { MAX_BATCH_ROWS, WriteBatches } from './write-batches.js';

const shard = (index: number): ShardRecord => ({ kind: 'shard', index, holderIdentity: 'a', owner: { slot: 0, session: 1 }, token: 1, acquireTime: null });
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A store's batch call that records each call and answers every write written, but those named in `conflicts`. */
function recorder(conflicts = new Set<number>()) {
  const calls: GroupWrite[][] = [];
  const send = async (writes: GroupWrite[]): Promise<GroupWriteOutcome[]> => {
    calls.push(writes);
    await turn();
    return writes.map((w) =>
      conflicts.has(w.record.index) ? { written: false, conflict: `shard/${w.record.index} changed` } : { written: true, version: `v${w.record.index}` },
    );
  };
  return { calls, send };
}

describe('WriteBatches', () => {
  it('the writes asked for in one turn go in one call; each answers its own outcome, a lost row a ConflictError', async () => {
    const r = recorder(new Set([2]));
    const b = new WriteBatches(r.send);
    const results = await Promise.allSettled([0, 1, 2, 3].map((i) => b.write(shard(i), i === 0 ? null : 'old')));
    assert.equal(r.calls.length, 1);
    assert.deepEqual(
      r.calls[0]!.map((w) => [w.record.index, w.expectedVersion]),
      [
        [0, null],
        [1, 'old'],
        [2, 'old'],
        [3, 'old'],
      ],
    );
    assert.deepEqual(
      results.map((x) => (x.status === 'fulfilled' ? x.value : (x.reason as { code: string }).code)),
      ['v0', 'v1', 'LEASEHOLD_ERR_CONFLICT', 'v3'],
    );
  });

  it('more rows than a call carries: calls of at most MAX_BATCH_ROWS, and other work gets a turn between two calls', async () => {
    const r = recorder();
    let between = 0;
    const sizesWhenOtherRan: number[] = [];
    const send = async (writes: GroupWrite[]) => {
      sizesWhenOtherRan.push(between);
      return r.send(writes);
    };
    const b = new WriteBatches(send);
    const n = MAX_BATCH_ROWS * 2 + 10;
    const all = Promise.all(Array.from({ length: n }, (_, i) => b.write(shard(i), 'old')));
    // Another task of the event loop (a heartbeat's timer), scheduled again at every turn.
    let done = false;
    const other = (async () => {
      while (!done) {
        between++;
        await turn();
      }
    })();
    await all;
    done = true;
    await other;
    assert.deepEqual(
      r.calls.map((c) => c.length),
      [MAX_BATCH_ROWS, MAX_BATCH_ROWS, 10],
    );
    assert.ok(
      sizesWhenOtherRan[1]! > sizesWhenOtherRan[0]! && sizesWhenOtherRan[2]! > sizesWhenOtherRan[1]!,
      `no turn between calls: ${sizesWhenOtherRan.join()}`,
    );
  });

  it('one call at a time: writes asked for while a call is out go in the next, and a second write of one record waits for the call after', async () => {
    let release!: () => void;
    const calls: number[][] = [];
    let out = 0;
    let most = 0;
    const b = new WriteBatches(async (writes) => {
      calls.push(writes.map((w) => w.record.index));
      most = Math.max(most, ++out);
      if (calls.length === 1) await new Promise<void>((resolve) => (release = resolve));
      out--;
      return writes.map((w) => ({ written: true, version: `v${w.record.index}` }));
    });
    const first = b.write(shard(0), 'old');
    await turn();
    assert.deepEqual(calls, [[0]]);
    const later = [b.write(shard(1), 'old'), b.write(shard(2), 'old'), b.write(shard(1), 'v1')];
    await turn();
    assert.equal(calls.length, 1, 'a second call while the first is out');
    release();
    await Promise.all([first, ...later]);
    assert.deepEqual(calls, [[0], [1, 2], [1]]);
    assert.equal(most, 1);
  });

  it('a write whose judgment no longer holds when its call is sent is withdrawn: null, never sent', async () => {
    const r = recorder();
    const b = new WriteBatches(r.send);
    let wanted = true;
    const kept = b.write(shard(0), 'old', () => true);
    const withdrawn = b.write(shard(1), 'old', () => wanted);
    wanted = false;
    assert.deepEqual(await Promise.all([kept, withdrawn]), ['v0', null]);
    assert.deepEqual(
      r.calls.map((c) => c.map((w) => w.record.index)),
      [[0]],
    );
  });

  it('a call that fails rejects every write it carried with its error; the next call goes on', async () => {
    let fail = true;
    const b = new WriteBatches(async (writes) => {
      if (fail) throw new BackendUnavailableError('test: the store is down');
      return writes.map(() => ({ written: true, version: 'v' }));
    });
    const failed = await Promise.allSettled([b.write(shard(0), 'old'), b.write(shard(1), null)]);
    assert.deepEqual(
      failed.map((x) => x.status === 'rejected' && (x.reason as { code: string }).code),
      ['LEASEHOLD_ERR_BACKEND_UNAVAILABLE', 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE'],
    );
    fail = false;
    assert.equal(await b.write(shard(0), 'old'), 'v');
  });

  it('a store that answers fewer outcomes than writes: the unanswered one fails, never counts as lost or written', async () => {
    const b = new WriteBatches(async () => [{ written: true, version: 'v0' }]);
    const [a, c] = await Promise.allSettled([b.write(shard(0), 'old'), b.write(shard(1), 'old')]);
    assert.deepEqual(a, { status: 'fulfilled', value: 'v0' });
    assert.equal(c.status === 'rejected' && (c.reason as { code: string }).code, 'LEASEHOLD_ERR_BACKEND');
  });
});
