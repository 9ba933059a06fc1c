import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop } from './candidate-loop.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { BackendUnavailableError } from '../errors.js';
import type { CallOptions, LeaseRecord, VersionedRecord } from '../backends/lease-store.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';
import { resolveElectionConfig } from '../config/election-options.js';
import { createLogger } from '../log.js';

/**
 * The lost-term rule (docs/design.md, "The end-of-term gate"): a term lost, not given up, is
 * released after its gate as a term given up is, by a compare-and-swap from the record this
 * candidate wrote; a store that does not answer is asked again every retryPeriod until the term
 * could have expired, so the others need not wait out the rest of a lease whose holder is gone.
 */
const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** A store that answers nothing while `down`, and remembers every record written to it, with when. */
class OutageStore extends MemoryLeaseStore {
  down = false;
  /** Reads answered, writes refused: a SQLite file whose write lock another process holds (WAL). */
  writesLocked = false;
  readonly written: { atMono: number; record: LeaseRecord }[] = [];
  /** Every update asked for, answered or not: whether it may wait on another's lock, and whether it is a release. */
  readonly asked: { release: boolean; waitForLock: boolean }[] = [];
  constructor(private readonly clock: FakeClock) {
    super();
  }
  override async get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    this.refuseWhileDown();
    return super.get(name, opts);
  }
  override async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    this.asked.push({ release: record.holderIdentity === '', waitForLock: opts?.waitForLock ?? true });
    this.refuseWhileDown();
    if (this.writesLocked) throw new BackendUnavailableError('another process holds the write lock');
    const version = await super.update(name, record, expectedVersion, opts);
    this.written.push({ atMono: this.clock.monotonic(), record });
    return version;
  }
  private refuseWhileDown(): void {
    if (this.down) throw new BackendUnavailableError('the store is unreachable');
  }
}

/** The app's health, switched by the test: off, the leader gives its term up. */
class HealthSwitch implements Eligibility {
  private on = true;
  private readonly listeners = new Set<() => void>();
  set(on: boolean): void {
    this.on = on;
    for (const l of [...this.listeners]) l();
  }
  eligible(): boolean {
    return this.on;
  }
  standAside(): StandAside | null {
    return this.on ? null : { reason: 'app unhealthy', since: new Date(0) };
  }
  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }
}

function setup(opts: { releaseOnCancel?: boolean } = {}) {
  const clock = new FakeClock();
  const store = new OutageStore(clock);
  const eligibility = new HealthSwitch();
  const logged: string[] = [];
  const elector = new CandidateLoop({
    ...resolveElectionConfig({ ...timings, lease: LEASE, identity: 'me' }),
    store,
    clock,
    random: () => 0,
    successorClaims: false,
    eligibility,
    releaseOnCancel: opts.releaseOnCancel,
    log: createLogger({ level: 'info', write: (line) => logged.push((JSON.parse(line) as { msg: string }).msg) }),
  });
  store.put(LEASE, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: null, leaseTransitions: 0 });
  return { clock, store, elector, eligibility, logged };
}

/** Leads with token 1; returns when its last renewal before the outage started (monotonic). */
async function leadThenLoseTheStore(s: ReturnType<typeof setup>): Promise<number> {
  s.elector.start();
  await s.clock.advance(0);
  assert.equal(s.elector.isLeader(), true);
  const renewedAtMono = s.clock.monotonic();
  s.store.down = true;
  await s.clock.advance(timings.renewDeadlineMs);
  assert.equal(s.elector.isLeader(), false, 'stepped down at renewDeadline');
  return renewedAtMono;
}

const releases = (s: ReturnType<typeof setup>) => s.store.written.filter((w) => w.record.holderIdentity === '');

describe('a term lost to a store outage', () => {
  it('is released as soon as the store answers again, before it could have expired, keeping its token', async () => {
    const s = setup();
    const renewedAtMono = await leadThenLoseTheStore(s);
    await s.clock.advance(2_500);
    assert.deepEqual(releases(s), [], 'nothing lands while the store is down');
    s.store.down = false;
    await s.clock.advance(timings.retryPeriodMs);
    const [release] = releases(s);
    assert.ok(release, `released once the store is back: ${JSON.stringify(s.logged)}`);
    assert.equal(release.record.leaseTransitions, 1, 'the released record keeps the term token');
    assert.ok(release.atMono < renewedAtMono + timings.leaseDurationMs, `released ${release.atMono - renewedAtMono} ms after the last renewal`);
    await s.elector.stop();
  });

  it('asks the store never to wait on a lock for it, one write per round while the store does not answer', async () => {
    // On SQLite a wait on the lock is the busy timeout, spent synchronously: a sidecar retrying
    // its release for the rest of its lease would answer nothing else (its /metrics) meanwhile.
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    const renewedAtMono = s.clock.monotonic();
    s.store.writesLocked = true;
    await s.clock.advance(timings.renewDeadlineMs);
    assert.equal(s.elector.isLeader(), false, 'stepped down at renewDeadline');
    // Rounds at the step-down (10 s) and each retryPeriod after; the lease could expire at 15 s.
    await s.clock.advance(1.5 * timings.retryPeriodMs);
    const asked = s.store.asked.filter((a) => a.release);
    assert.ok(asked.length >= 2, `retried each retryPeriod: ${JSON.stringify(s.store.asked)}`);
    assert.ok(asked.length <= 3, `one write per round, not a burst: ${asked.length} in 1.5 retry periods`);
    assert.deepEqual(
      asked.filter((a) => a.waitForLock),
      [],
      'no release write of a lost term may wait on a lock',
    );
    s.store.writesLocked = false;
    await s.clock.advance(timings.retryPeriodMs);
    assert.equal(releases(s).length, 1);
    assert.ok(releases(s)[0]!.atMono < renewedAtMono + timings.leaseDurationMs);
    await s.elector.stop();
  });

  it('a term given up: its first release write may wait on a lock, as any write (a stop should land beside a neighbour writing)', async () => {
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    await s.elector.stop();
    const asked = s.store.asked.filter((a) => a.release);
    assert.deepEqual(asked, [{ release: true, waitForLock: true }]);
    assert.equal(releases(s).length, 1);
  });

  it('is left to expire when the store stays down until it could have expired: the retries stop there, said once', async () => {
    const s = setup();
    const renewedAtMono = await leadThenLoseTheStore(s);
    await s.clock.advance(timings.leaseDurationMs);
    assert.deepEqual(releases(s), []);
    assert.equal(s.logged.filter((m) => m.startsWith('the store did not answer the release')).length, 1, JSON.stringify(s.logged));
    // No release is sent after the term could have expired: from then on the others need none.
    s.store.down = false;
    await s.clock.advance(timings.retryPeriodMs);
    assert.ok(releases(s).every((w) => w.atMono < renewedAtMono + timings.leaseDurationMs));
    await s.elector.stop();
  });

  it('is not released with releaseOnCancel false, as a term given up is not', async () => {
    const s = setup({ releaseOnCancel: false });
    await leadThenLoseTheStore(s);
    s.store.down = false;
    await s.clock.advance(timings.retryPeriodMs);
    assert.deepEqual(releases(s), []);
    await s.elector.stop();
  });

  it('another holder took the record: nothing is written over it', async () => {
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    s.store.put(LEASE, { holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: s.clock.now(), renewTime: s.clock.now(), leaseTransitions: 2 });
    await s.clock.advance(timings.retryPeriodMs);
    assert.equal(s.elector.isLeader(), false);
    await s.clock.advance(timings.retryPeriodMs);
    assert.deepEqual(releases(s), []);
    assert.equal(s.store.peek(LEASE)!.holderIdentity, 'other');
    await s.elector.stop();
  });
});

describe('a term given up while the store does not answer its writes', () => {
  // A SQLite file whose write lock a neighbour holds: the first round's write may wait on it (the
  // busy timeout, spent synchronously), but only one write of the round: asked again at once the
  // lock would still be held, and five such waits in a row would stall a sidecar's /metrics.
  const waitingReleases = (s: ReturnType<typeof setup>) => s.store.asked.filter((a) => a.release && a.waitForLock).length;

  it('a step-down for the app: its first release round sends one write that may wait on the lock, then none until the next round', async () => {
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    s.store.writesLocked = true;
    s.eligibility.set(false);
    await s.clock.advance(timings.retryPeriodMs / 2);
    assert.equal(s.elector.isLeader(), false, 'stepped down');
    assert.deepEqual(
      s.store.asked.filter((a) => a.release),
      [{ release: true, waitForLock: true }],
      'the first round ends at its first unanswered write',
    );
    await s.clock.advance(timings.retryPeriodMs);
    assert.equal(waitingReleases(s), 1, `later rounds never wait: ${JSON.stringify(s.store.asked)}`);
    s.store.writesLocked = false;
    await s.clock.advance(timings.retryPeriodMs);
    assert.equal(releases(s).length, 1, 'released once the lock is gone');
    await s.elector.stop();
  });

  it('a step-down right after a renewal that waited unanswered: the release does not wait too, back to back', async () => {
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    s.store.writesLocked = true;
    const before = s.store.asked.length;
    // The next renewal waits on the lock and goes unanswered (on SQLite: the busy timeout); its
    // slow path's write, right after, does not wait again.
    await s.clock.advance(timings.retryPeriodMs);
    assert.deepEqual(
      s.store.asked.slice(before),
      [
        { release: false, waitForLock: true },
        { release: false, waitForLock: false },
      ],
      'one renewal attempt: one write that may wait',
    );
    s.eligibility.set(false);
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), false, 'stepped down');
    assert.deepEqual(
      s.store.asked.filter((a) => a.release),
      [{ release: true, waitForLock: false }],
      'within a retryPeriod of the unanswered renewal the release answers at once',
    );
    s.store.writesLocked = false;
    await s.clock.advance(timings.retryPeriodMs);
    assert.equal(releases(s).length, 1, 'released by a later round once the lock is gone');
    await s.elector.stop();
  });

  it('stop(): its one release round sends one write that may wait on the lock', async () => {
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    s.store.writesLocked = true;
    await s.elector.stop();
    assert.deepEqual(
      s.store.asked.filter((a) => a.release),
      [{ release: true, waitForLock: true }],
    );
  });

  it('stop() with the store down: the line says the stop ended the retries, not the lease', async () => {
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    s.store.down = true;
    await s.elector.stop();
    const said = s.logged.filter((m) => m.startsWith('the store did not answer the release'));
    assert.deepEqual(
      said,
      ['the store did not answer the release and the candidate is stopping, so it is not retried: the lease expires'],
      JSON.stringify(s.logged),
    );
  });
});
