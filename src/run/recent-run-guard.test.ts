import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RecentRunGuard } from './recent-run-guard.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { BackendUnavailableError, ConflictError } from '../errors.js';
import { CandidateLoop } from '../election/candidate-loop.js';
import { FakeClock } from '../testing/fake-clock.js';
import type { CallOptions, LeaseRecord, LeaseStore } from '../backends/lease-store.js';
import { resolveElectionConfig } from '../config/election-options.js';

const NOW = Date.parse('2026-12-03T10:00:00.000Z');
const WITHIN = 240_000;

function rec(holder: string, acquiredAgoMs: number, token = 5): LeaseRecord {
  const at = new Date(NOW - acquiredAgoMs);
  return { holderIdentity: holder, leaseDurationSeconds: holder ? 15 : 1, acquireTime: at, renewTime: new Date(NOW), leaseTransitions: token };
}

function setup(withinMs: number | null = WITHIN) {
  const store = new MemoryLeaseStore();
  const seen: LeaseRecord[] = [];
  const guard = new RecentRunGuard(store, { withinMs, now: () => NOW, onRecentRun: (r) => seen.push(r) });
  return { store, guard, seen };
}

describe('RecentRunGuard (leasehold run --skip-if-ran-within)', () => {
  for (const [what, record, recent] of [
    ['held, began 10 s ago', rec('other', 10_000), true],
    ['released, began 3 min ago (a finished run)', rec('', 180_000), true],
    ['began just inside the window', rec('', WITHIN - 1), true],
    ['began exactly the window ago', rec('', WITHIN), false],
    ['released, began 10 min ago', rec('', 600_000), false],
    ['held, began 10 min ago (a run longer than the interval)', rec('other', 600_000), false],
    ['began 30 s in the future (a clock ahead of ours)', rec('other', -30_000), true],
    ['no acquireTime (a peer that does not write it)', { ...rec('', 0), acquireTime: null }, false],
  ] as const) {
    it(`a record ${what}: ${recent ? 'a recent run' : 'no recent run'}`, async () => {
      const s = setup();
      s.store.put('cron', record);
      const got = await s.guard.get('cron');
      assert.equal(s.seen.length, recent ? 1 : 0);
      const takeover = rec('me', 0, 6);
      const write = s.guard.update('cron', takeover, got!.version);
      if (recent) await assert.rejects(write, ConflictError);
      else await write;
      assert.equal(s.store.peek('cron')!.holderIdentity, recent ? record.holderIdentity : 'me');
    });
  }

  it('tells the runner before the elector sees the record, and only once', async () => {
    const s = setup();
    s.store.put('cron', rec('other', 1_000));
    const order: string[] = [];
    const guard = new RecentRunGuard(s.store, { withinMs: WITHIN, now: () => NOW, onRecentRun: () => order.push('guard') });
    await guard.get('cron').then(() => order.push('elector'));
    await guard.get('cron');
    assert.deepEqual(order, ['guard', 'elector']);
  });

  it('its own takeover, read back or watched, is not another run; then disarm() lets it renew and release', async () => {
    const s = setup();
    s.store.eventsCarryRecords = true;
    const events: unknown[] = [];
    s.guard.watch('cron', (e) => events.push(e));
    s.store.put('cron', rec('', 600_000));
    const mine = rec('me', 0, 6);
    await s.guard.update('cron', mine, (await s.guard.get('cron'))!.version);
    await s.guard.get('cron');
    assert.equal(s.seen.length, 0, 'its own record is not a recent run');
    s.guard.disarm();
    const v = await s.guard.update('cron', { ...mine, renewTime: new Date(NOW + 2_000) }, s.store.peekVersioned('cron')!.version);
    await s.guard.update('cron', rec('', 0, 6), v);
    assert.equal(s.store.peek('cron')!.holderIdentity, '');
    assert.equal(s.seen.length, 0);
  });

  it("a watch event carrying another's recent term is a recent run", () => {
    const s = setup();
    s.store.eventsCarryRecords = true;
    let delivered = 0;
    s.guard.watch('cron', () => delivered++);
    s.store.put('cron', rec('winner', 50));
    assert.equal(s.seen.length, 1);
    assert.equal(delivered, 1, 'the elector still gets the event');
  });

  it('stopTaking (--try ran out) refuses takeovers but not a release; settled() waits for a takeover in flight', async () => {
    const s = setup(null);
    s.store.put('cron', rec('', 600_000));
    const v = (await s.guard.get('cron'))!.version;
    let answered = false;
    const inFlight = s.guard.update('cron', rec('me', 0, 6), v).then(() => (answered = true));
    s.guard.stopTaking();
    await assert.rejects(s.guard.create('other', rec('me', 0, 1)), ConflictError);
    await s.guard.settled();
    assert.equal(answered, true, 'settled() resolved only after the write in flight was answered');
    await inFlight;
    await s.guard.update('cron', rec('', 0, 6), s.store.peekVersioned('cron')!.version);
  });

  it('with --try alone (no window) no record is a recent run, not even one from a clock ahead', async () => {
    const s = setup(null);
    s.store.put('cron', rec('other', -30_000));
    await s.guard.get('cron');
    assert.equal(s.seen.length, 0);
  });

  it('the elector behind it reads a released record whose run began within the window: it does not take the lease', async () => {
    // The race the guard closes: a loser's read lands after the winner's run already finished
    // and released. The elector takes a released lease at once; the guard must refuse that write.
    const s = setup();
    const clock = new FakeClock(new Date(NOW));
    s.store.put('cron', rec('', 2_000));
    const before = s.store.peekVersioned('cron')!.version;
    const elector = new CandidateLoop({
      ...resolveElectionConfig({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, lease: 'cron', identity: 'me' }),
      store: s.guard,
      clock,
      random: () => 0,
    });
    assert.equal(await elector.tryAcquireOrRenew(), false);
    assert.equal(elector.isLeader(), false);
    assert.equal(s.store.peekVersioned('cron')!.version, before, 'nothing was written');
    assert.equal(s.seen.length, 1);
  });

  it('a takeover that landed unanswered, released when the runner gives up, does not make the tick look run', async () => {
    // The sequence: the runner's takeover is applied but its answer is lost (a timeout); --try
    // runs out (or a signal comes) before a read shows it the term it holds, so it never leads
    // and never runs the command; stopping, the elector reads the record, finds its own term
    // and releases it, and the release keeps acquireTime. Every other runner of this tick then
    // reads "a run began within the window" and skips: nobody runs the job this tick.
    const clock = new FakeClock(new Date(NOW));
    const memory = new MemoryLeaseStore();
    memory.put('cron', rec('', 600_000)); // the last tick's run, released
    let dropped = 0;
    // Applies a takeover, then loses its answer, once.
    const losing: LeaseStore = {
      backend: 'memory',
      location: 'memory',
      get: (n, o) => memory.get(n, o),
      create: (n, r, o) => memory.create(n, r, o),
      update: async (n: string, r: LeaseRecord, v: string, o?: CallOptions) => {
        const version = await memory.update(n, r, v, o);
        if (r.holderIdentity !== '' && dropped++ === 0) throw new BackendUnavailableError('no answer within 5000 ms');
        return version;
      },
      close: async () => {},
    };
    const guard = new RecentRunGuard(losing, { withinMs: WITHIN, now: () => clock.now().getTime(), onRecentRun: () => assert.fail('its own term') });
    const elector = new CandidateLoop({
      ...resolveElectionConfig({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, lease: 'cron', identity: 'me' }),
      store: guard,
      lease: 'cron',
      identity: 'me',
      clock,
      random: () => 0,
      releaseKeepsAcquireTime: true,
    });
    assert.equal(await elector.tryAcquireOrRenew(), false, 'the answer was lost');
    assert.equal(memory.peek('cron')!.holderIdentity, 'me', 'but the takeover landed');
    assert.equal(elector.isLeader(), false);
    // What LeaderRunner does when --try runs out: no more takeovers, wait for those in flight, stop.
    guard.stopTaking();
    await guard.settled();
    await elector.stop();
    const after = memory.peek('cron')!;
    assert.equal(after.holderIdentity, '', 'the term nobody was told of is released');
    assert.equal(after.acquireTime, null, 'no run began in it');
    // Another runner of this tick, started now: it must run the job, not skip it.
    const next = setup();
    next.store.put('cron', after);
    await next.guard.get('cron');
    assert.deepEqual(next.seen, [], 'the next runner sees no run of this tick');
  });

  it('a release after this candidate led keeps acquireTime: its run began then', async () => {
    const s = setup();
    s.store.put('cron', rec('', 600_000));
    const mine = rec('me', 0, 6);
    const v = await s.guard.update('cron', mine, (await s.guard.get('cron'))!.version);
    s.guard.disarm(); // onStartedLeading: the command starts
    await s.guard.update('cron', { ...rec('', 0, 6), acquireTime: mine.acquireTime }, v);
    assert.equal(s.store.peek('cron')!.acquireTime?.getTime(), mine.acquireTime!.getTime());
  });
});
