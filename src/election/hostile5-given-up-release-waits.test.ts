/**
 * Hostile review (branch hostile5), the unit-tier twin of
 * test/sqlite/hostile5-given-up-release-stall.test.ts: a term given up (the app not eligible, or
 * stop()) while the store refuses writes as a SQLite file whose write lock a neighbour holds.
 * releaseWaitsForLock lets the first round wait on the lock "as any write does" (docs/design.md,
 * "The end-of-term gate"), but EndOfTerm.send sends up to five writes in that round, each allowed
 * to wait: on SQLite five busy timeouts in a row, the event loop stalled (a sidecar's /metrics
 * and /healthz). At most one write of a round may wait; these fail today.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop } from './candidate-loop.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { BackendUnavailableError } from '../errors.js';
import type { CallOptions, LeaseRecord } from '../backends/lease-store.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';
import { resolveElectionConfig } from '../config/election-options.js';
import { createLogger } from '../log.js';

const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** Reads answered, writes refused while `writesLocked`; every release write asked for is noted. */
class LockedStore extends MemoryLeaseStore {
  writesLocked = false;
  readonly releases: { waitForLock: boolean }[] = [];
  override async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    if (record.holderIdentity === '') this.releases.push({ waitForLock: opts?.waitForLock ?? true });
    if (this.writesLocked) throw new BackendUnavailableError('another process holds the write lock');
    return super.update(name, record, expectedVersion, opts);
  }
}

class Switch implements Eligibility {
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

function setup() {
  const clock = new FakeClock();
  const store = new LockedStore();
  const eligibility = new Switch();
  const elector = new CandidateLoop({
    ...resolveElectionConfig({ ...timings, lease: LEASE, identity: 'me' }),
    store,
    clock,
    random: () => 0,
    successorClaims: false,
    eligibility,
    log: createLogger({ level: 'error', write: () => {} }),
  });
  store.put(LEASE, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: null, leaseTransitions: 0 });
  return { clock, store, elector, eligibility };
}

describe('hostile5: a term given up while writes are locked', () => {
  it('a step-down for the app: the first release round sends at most one write that may wait on the lock', async () => {
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    s.store.writesLocked = true;
    s.eligibility.set(false);
    // Less than a retry period: the first round only.
    await s.clock.advance(timings.retryPeriodMs / 2);
    assert.equal(s.elector.isLeader(), false, 'stepped down');
    const waiting = s.store.releases.filter((r) => r.waitForLock).length;
    assert.ok(waiting <= 1, `${waiting} release writes of one round may each wait out the busy timeout: ${JSON.stringify(s.store.releases)}`);
    s.store.writesLocked = false;
    await s.clock.advance(timings.retryPeriodMs);
    await s.elector.stop();
  });

  it('stop(): its one release round sends at most one write that may wait on the lock', async () => {
    const s = setup();
    s.elector.start();
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true);
    s.store.writesLocked = true;
    await s.elector.stop();
    const waiting = s.store.releases.filter((r) => r.waitForLock).length;
    assert.ok(waiting <= 1, `${waiting} release writes at stop() may each wait out the busy timeout: ${JSON.stringify(s.store.releases)}`);
  });
});
