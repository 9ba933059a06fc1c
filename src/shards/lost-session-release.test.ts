/**
 * The lost-session rule (docs/design.md, "The end-of-term gate"), the lease's: a member whose
 * session is lost to a store that stops answering releases each shard after its drain by a
 * compare-and-swap from the version it last wrote, and a release the store does not answer is
 * sent again every retryPeriod until the shard could have expired, so a short outage does not
 * leave the shards ownerless until then.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { BackendUnavailableError } from '../errors.js';
import { ShardMember } from './shard-member.js';
import type { GroupRecord, GroupStore } from '../backends/group-store.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const G = 'workers';

function setup() {
  const clock = new FakeClock();
  const mem = new MemoryGroupStore();
  let down = false;
  const released: { atMono: number; shard: number }[] = [];
  const refuseWhileDown = () => {
    if (down) throw new BackendUnavailableError('the store is unreachable');
  };
  const store: GroupStore = {
    backend: mem.backend,
    location: mem.location,
    listGroup: async (g, o) => (refuseWhileDown(), mem.listGroup(g, o)),
    createGroupRecord: async (g, r, o) => (refuseWhileDown(), mem.createGroupRecord(g, r, o)),
    updateGroupRecord: async (g, r: GroupRecord, v, o) => {
      refuseWhileDown();
      const version = await mem.updateGroupRecord(g, r, v, o);
      if (r.kind === 'shard' && r.owner === null) released.push({ atMono: clock.monotonic(), shard: r.index });
      return version;
    },
  };
  const member = new ShardMember({ ...T, store, group: G, shards: 2, identity: 'a', clock });
  return { clock, member, released, setDown: (d: boolean) => (down = d) };
}

/** Owns both shards (created after a lease duration of absence), then the store stops answering until the session is lost. */
async function ownThenLoseTheStore(s: ReturnType<typeof setup>): Promise<number> {
  await s.member.start();
  for (let i = 0; i < 20 && s.member.snapshot().owned.length < 2; i++) await s.clock.advance(T.retryPeriodMs);
  assert.equal(s.member.snapshot().owned.length, 2, 'owns both shards');
  await s.clock.advance(T.retryPeriodMs);
  const renewedAtMono = s.clock.monotonic();
  s.setDown(true);
  for (let i = 0; i < 10 && s.member.snapshot().session !== null; i++) await s.clock.advance(T.retryPeriodMs);
  assert.equal(s.member.snapshot().session, null, 'the session is lost');
  return renewedAtMono;
}

describe('a shard member whose session is lost to a store outage', () => {
  it('releases its shards as soon as the store answers again, before they could have expired', async () => {
    const s = setup();
    const renewedAtMono = await ownThenLoseTheStore(s);
    await s.clock.advance(T.retryPeriodMs);
    assert.equal(s.released.length, 0, 'nothing lands while the store is down');
    s.setDown(false);
    await s.clock.advance(T.retryPeriodMs);
    assert.deepEqual(s.released.map((r) => r.shard).sort(), [0, 1], 'both shards released once the store is back');
    for (const r of s.released) assert.ok(r.atMono < renewedAtMono + T.leaseDurationMs, `released ${r.atMono - renewedAtMono} ms after the last heartbeat`);
    await s.member.stop();
  });

  it('stops retrying once the shards could have expired', async () => {
    const s = setup();
    const renewedAtMono = await ownThenLoseTheStore(s);
    await s.clock.advance(T.leaseDurationMs);
    s.setDown(false);
    await s.clock.advance(T.retryPeriodMs);
    assert.ok(
      s.released.every((r) => r.atMono < renewedAtMono + T.leaseDurationMs),
      `no release sent after the shards could have expired: ${JSON.stringify(s.released)}`,
    );
    await s.member.stop();
  });
});
