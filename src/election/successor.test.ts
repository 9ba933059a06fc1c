/**
 * The successor claim (successor.ts): one standby names itself, takes a free lease at once, and
 * the others stand back. Real electors on one in-memory store whose events carry records (as a
 * Kubernetes watch), on the fake clock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop, type CandidateOptions } from './candidate-loop.js';
import { DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR } from './elector-config.js';
import { FakeClock } from '../testing/fake-clock.js';
import { ManualHealth } from '../health/manual-health.js';
import { BackendUnavailableError } from '../errors.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import type { CallOptions, LeaseRecord, LeaseStore, SuccessorClaimSupport, VersionedRecord, WatchEvent } from '../backends/lease-store.js';
import { resolveElectionConfig, type ElectionConfig } from '../config/election-options.js';

const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
/** Defaults: safety re-read max(60 × retryPeriod, leaseDuration) = 120 s; a claim lives 2.5 of them. */
const REFRESH_MS = 120_000;
const LIFETIME_MS = 300_000;
const T0 = new Date('2026-12-03T09:00:00.000Z');
const RELEASED: LeaseRecord = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: T0, renewTime: T0, leaseTransitions: 3 };
const GRACE_MS = RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS;

/** One candidate's view of the shared store: counts its own writes, and keeps claims only if told. */
class CandidateStore implements LeaseStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  updates: LeaseRecord[] = [];
  calls: string[] = [];
  /** Runs after a write has landed and before its answer comes back (a race with the watch). */
  beforeAnswer: (() => void) | null = null;
  /** The next update lands, and its answer is lost (a timeout after the server applied it). */
  loseAnswer = false;
  /** What the candidate asked the store's watch through pollQuicklyWhile (the named successor polls quickly). */
  quickWhile: (() => boolean) | undefined;
  constructor(
    private readonly inner: MemoryLeaseStore,
    private readonly keepsClaims = true,
    /** Its watch delivers nothing: the candidate learns only by reading. */
    private readonly deaf = false,
  ) {}
  get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    this.calls.push('get');
    return this.inner.get(name, opts);
  }
  create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    return this.inner.create(name, record, opts);
  }
  async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    this.calls.push('update');
    this.updates.push(structuredClone(record));
    const version = await this.inner.update(name, record, expectedVersion, opts);
    const hook = this.beforeAnswer;
    this.beforeAnswer = null;
    hook?.();
    if (this.loseAnswer) {
      this.loseAnswer = false;
      throw new BackendUnavailableError('memory update: no answer within the request timeout');
    }
    return version;
  }
  watch(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    if (this.deaf) return () => {};
    return this.inner.watch(name, onEvent, onHealth);
  }
  readonly successorClaims: SuccessorClaimSupport = {
    kept: () => this.keepsClaims,
    pollQuicklyWhile: (_name, named) => {
      this.quickWhile = named;
      return () => (this.quickWhile = undefined);
    },
  };
  async close(): Promise<void> {}
}

function world(eventsCarryRecords = true) {
  const clock = new FakeClock();
  const shared = new MemoryLeaseStore();
  shared.eventsCarryRecords = eventsCarryRecords;
  const electors: CandidateLoop[] = [];
  const stores = new Map<string, CandidateStore>();
  const add = (
    identity: string,
    draw: number,
    over: Partial<Omit<CandidateOptions, keyof ElectionConfig>> & { keepsClaims?: boolean; deaf?: boolean } = {},
  ) => {
    const store = new CandidateStore(shared, over.keepsClaims ?? true, over.deaf ?? false);
    stores.set(identity, store);
    const e = new CandidateLoop({ ...resolveElectionConfig({ ...timings, lease: LEASE, identity }), store, clock, random: () => draw, ...over });
    electors.push(e);
    e.start();
    shared.setWatchHealth(true);
    return e;
  };
  return {
    clock,
    shared,
    add,
    store: (id: string) => stores.get(id)!,
    record: () => shared.peek(LEASE)!,
    claimant: () => shared.peek(LEASE)?.successor?.identity ?? null,
    leaders: () => electors.filter((e) => e.isLeader()).map((e) => e.identity),
    /** Updates a candidate sent that changed the lease itself, not only the claim. */
    leaseWrites: (id: string) => stores.get(id)!.updates.filter((r) => r.holderIdentity !== '' && r.holderIdentity === id),
    stopAll: () => Promise.all(electors.map((e) => e.stop())),
  };
}

/** A leader L and standbys; returns once L leads and `claimant` holds the claim. */
async function steady(w: ReturnType<typeof world>, standbys: [string, number][], leaderOpts: Partial<CandidateOptions> = {}) {
  w.shared.put(LEASE, RELEASED);
  const leader = w.add('L', 0, leaderOpts);
  await w.clock.advance(0);
  assert.deepEqual(w.leaders(), ['L']);
  const es = standbys.map(([id, draw]) => w.add(id, draw));
  await w.clock.advance(2_000);
  return { leader, standbys: es };
}

describe('the successor claim', () => {
  it('a standby finding no claim writes one naming itself, changing nothing else; only one of several does', async () => {
    const w = world();
    const { standbys } = await steady(w, [
      ['a', 0.2],
      ['b', 0.9],
    ]);
    assert.equal(w.claimant(), 'a', 'the earlier draw claims');
    assert.equal(w.store('b').updates.length, 0, 'b saw the claim and wrote nothing');
    const claimWrite = w.store('a').updates[0]!;
    assert.equal(w.store('a').updates.length, 1);
    assert.equal(claimWrite.holderIdentity, 'L');
    assert.equal(claimWrite.leaseTransitions, w.record().leaseTransitions, "L's term, untouched");
    assert.equal(standbys.length, 2);
    await w.stopAll();
  });

  it('volunteers whose moments come close together: the later one reads, sees the claim, and writes nothing', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    w.add('L', 0);
    await w.clock.advance(0);
    // Two standbys that learn only by reading (their views go stale between reads), drawing
    // moments 17 ms apart in the volunteer window.
    w.add('a', 0.2, { deaf: true });
    w.add('b', 0.21, { deaf: true });
    await w.clock.advance(1_000);
    assert.equal(w.claimant(), 'a');
    assert.deepEqual(w.store('b').updates, [], 'b sent no claim to lose');
    await w.stopAll();
  });

  it('the claimant takes a released lease at once; the other standby writes nothing', async () => {
    const w = world();
    const { leader } = await steady(w, [
      ['a', 0.2],
      ['b', 0.9],
    ]);
    const mark = w.store('a').calls.length;
    const stopped = leader.stop(); // releases
    await w.clock.advance(0);
    await stopped;
    assert.deepEqual(w.leaders(), ['a'], 'taken with no time passing');
    assert.deepEqual(w.store('a').calls.slice(mark), ['update'], 'one write, straight from the release it saw');
    assert.equal(w.record().successor, undefined, 'its own claim ended with its new term');
    await w.clock.advance(GRACE_MS + DEFAULT_CONTENTION_WINDOW_MS * RELEASE_WINDOW_FACTOR + 1);
    assert.equal(w.store('b').updates.filter((r) => r.holderIdentity === 'b').length, 0, 'b never tried: it saw a take the lease within the grace');
    await w.stopAll();
  });

  it('with events that carry no record (PostgreSQL, SQLite): the claimant reads and takes at once; the other waits its grace', async () => {
    const w = world(false);
    const { leader } = await steady(w, [
      ['a', 0.2],
      ['b', 0],
    ]);
    assert.equal(w.claimant(), 'b');
    const stopped = leader.stop();
    await w.clock.advance(0);
    await stopped;
    assert.deepEqual(w.leaders(), ['b']);
    await w.clock.advance(GRACE_MS + RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS + 1);
    assert.deepEqual(w.leaseWrites('a'), [], 'a read the release at once too, and waited for its turn');
    await w.stopAll();
  });

  it('a release that lands between a claim and its answer is not undone by the answer', async () => {
    const w = world();
    // A leader that is not an elector here: the test writes its release at the worst moment.
    w.shared.put(LEASE, { ...RELEASED, holderIdentity: 'L', leaseDurationSeconds: 15, leaseTransitions: 4 });
    const a = w.add('a', 0.2);
    // a's claim lands; before its answer comes back, L releases and a's watch shows it.
    w.store('a').beforeAnswer = () => void w.shared.put(LEASE, { ...w.record(), holderIdentity: '', leaseDurationSeconds: 1 });
    await w.clock.advance(1_000);
    assert.equal(w.record().holderIdentity, 'a', 'a took the release it saw, at once');
    assert.equal(a.isLeader(), true);
    await w.stopAll();
  });

  it('without claims (a store that keeps none) the same release waits for a turn in the window', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const leader = w.add('L', 0, { keepsClaims: false });
    await w.clock.advance(0);
    w.add('a', 0.2, { keepsClaims: false });
    await w.clock.advance(2_000);
    assert.equal(w.claimant(), null, 'nobody claims');
    const stopped = leader.stop();
    await w.clock.advance(0);
    await stopped;
    assert.deepEqual(w.leaders(), [], 'not at once');
    await w.clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS);
    assert.deepEqual(w.leaders(), ['a']);
    await w.stopAll();
  });

  it('a crashed leader: the claimant takes over at its observed expiry, the others after the grace see it and write nothing', async () => {
    const w = world();
    // L stops renewing without releasing: a crash, as far as the others can tell.
    const { leader } = await steady(
      w,
      [
        ['a', 0.9],
        ['b', 0.2],
        ['c', 0.5],
      ],
      { releaseOnCancel: false },
    );
    assert.equal(w.claimant(), 'b');
    const lastRenewal = w.record().renewTime!.getTime();
    await leader.stop();
    const expiry = lastRenewal + timings.leaseDurationMs;
    await w.clock.advance(expiry - w.clock.now().getTime() - 1);
    assert.deepEqual(w.leaders(), [], 'nobody before the expiry');
    await w.clock.advance(1);
    assert.deepEqual(w.leaders(), ['b'], 'the claimant, at the expiry');
    await w.clock.advance(GRACE_MS + DEFAULT_CONTENTION_WINDOW_MS + 1);
    assert.deepEqual(w.leaseWrites('a'), []);
    assert.deepEqual(w.leaseWrites('c'), []);
    await w.stopAll();
  });

  it('a claim is not a renewal: a crashed leader expires on time however the claim changes', async () => {
    const w = world();
    const { leader } = await steady(w, [['a', 0.2]], { releaseOnCancel: false });
    const lastRenewal = w.record().renewTime!.getTime();
    await leader.stop();
    // A neighbour rewrites the claim (to one nobody holds) twice after the crash.
    await w.clock.advance(5_000);
    w.shared.put(LEASE, { ...w.record(), successor: { identity: 'ghost', claimedAt: w.clock.now() } });
    await w.clock.advance(5_000);
    w.shared.put(LEASE, { ...w.record(), successor: { identity: 'ghost', claimedAt: w.clock.now() } });
    const expiry = lastRenewal + timings.leaseDurationMs;
    await w.clock.advance(expiry - w.clock.now().getTime() + GRACE_MS + DEFAULT_CONTENTION_WINDOW_MS);
    assert.deepEqual(w.leaders(), ['a'], 'taken within the grace and a turn after the expiry, not a lease after the last claim');
    await w.stopAll();
  });

  it("the leader's renewals and its release carry the claim to the claimant", async () => {
    const w = world();
    const { leader } = await steady(w, [['a', 0.2]]);
    await w.clock.advance(10_000); // five renewals
    assert.equal(w.claimant(), 'a');
    assert.equal(w.record().holderIdentity, 'L');
    const stopped = leader.stop();
    // The released record, before anyone takes it, still names a.
    await stopped;
    await w.clock.advance(0);
    assert.deepEqual(w.leaders(), ['a']);
    await w.stopAll();
  });

  it('a standby that stops withdraws its claim, and another then claims', async () => {
    const w = world();
    const { standbys } = await steady(w, [
      ['a', 0.2],
      ['b', 0.9],
    ]);
    assert.equal(w.claimant(), 'a');
    await standbys[0]!.stop();
    assert.equal(w.claimant(), null, 'withdrawn');
    await w.clock.advance(1_000);
    assert.equal(w.claimant(), 'b');
    await w.stopAll();
  });

  it('a claim that landed unanswered is withdrawn all the same when the standby stops', async () => {
    const w = world();
    // A holder that is not an elector here; a learns only by reading (no watch), so until its
    // next read its view is the record without its claim.
    w.shared.put(LEASE, { ...RELEASED, holderIdentity: 'L', leaseDurationSeconds: 15, leaseTransitions: 4 });
    const a = w.add('a', 0.2, { deaf: true });
    w.store('a').loseAnswer = true;
    await w.clock.advance(1_000);
    assert.equal(w.claimant(), 'a', 'the claim landed, its answer lost');
    await a.stop();
    assert.equal(w.claimant(), null, 'withdrawn: the others must not stand back for a stopped standby');
    await w.stopAll();
  });

  it('a claim that landed unanswered is withdrawn all the same when the app stops being eligible', async () => {
    const w = world();
    w.shared.put(LEASE, { ...RELEASED, holderIdentity: 'L', leaseDurationSeconds: 15, leaseTransitions: 4 });
    const health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: 0 }, w.clock);
    health.healthy();
    w.add('a', 0.2, { deaf: true, eligibility: health });
    w.store('a').loseAnswer = true;
    await w.clock.advance(1_000);
    assert.equal(w.claimant(), 'a', 'the claim landed, its answer lost');
    health.unhealthy('the app failed its probe');
    await w.clock.advance(0);
    assert.equal(w.claimant(), null, 'withdrawn while the app is not eligible');
    await w.stopAll();
  });

  it('the claimant refreshes its claim every safety period; a claim not seen to change for its lifetime is replaced', async () => {
    const w = world();
    await steady(w, [['a', 0.2]]);
    const first = w.record().successor!.claimedAt.getTime();
    await w.clock.advance(REFRESH_MS);
    assert.ok(w.record().successor!.claimedAt.getTime() > first, 'refreshed');
    // A claimant that died without withdrawing: its claim stays as it was.
    w.shared.put(LEASE, { ...w.record(), successor: { identity: 'ghost', claimedAt: w.clock.now() } });
    await w.clock.advance(LIFETIME_MS - 1);
    assert.equal(w.claimant(), 'ghost', 'alive until its lifetime has passed');
    await w.clock.advance(1_001);
    assert.equal(w.claimant(), 'a', 'replaced');
    await w.stopAll();
  });

  it('a store that keeps no claims gets no claim writes', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    w.add('L', 0, { keepsClaims: false });
    await w.clock.advance(0);
    w.add('a', 0, { keepsClaims: false });
    await w.clock.advance(600_000);
    assert.deepEqual(w.store('a').updates, []);
    await w.stopAll();
  });

  it('asks a polling store to poll quickly only while this standby holds the claim', async () => {
    const w = world();
    const { standbys } = await steady(w, [
      ['a', 0.2],
      ['b', 0.9],
    ]);
    assert.equal(w.store('a').quickWhile?.(), true);
    assert.equal(w.store('b').quickWhile?.(), false);
    assert.equal(w.store('L').quickWhile?.(), false, 'the leader polls nothing');
    await standbys[0]!.stop();
    assert.equal(w.store('a').quickWhile, undefined, 'stop() ends the asking');
    await w.stopAll();
  });
});
