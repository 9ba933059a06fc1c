/**
 * No takeover from an old view, on a store whose versions restart when the record is re-created
 * (MemoryLeaseStore.versionsRestartOnCreate, as PostgreSQL's `version + 1` did): a version read
 * before a deletion becomes current again, so a write carrying it lands on another term's record
 * unless the elector re-reads first. Real electors on one in-memory store, on the fake clock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop } from './candidate-loop.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { abortReason } from '../abort.js';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from '../backends/lease-store.js';
import { resolveElectionConfig } from '../config/election-options.js';

const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const T0 = new Date('2026-12-03T09:00:00.000Z');

/** One candidate's link to the shared store, which can be cut: requests then never arrive nor answer, and its watch is down. */
class CuttableLink implements LeaseStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  cut = false;
  /** Cut the link as the next update is sent (that update is lost with it). */
  cutAtNextUpdate = false;
  private health = new Set<(healthy: boolean) => void>();
  constructor(private readonly inner: MemoryLeaseStore) {}

  setCut(cut: boolean): void {
    this.cut = cut;
    for (const h of this.health) h(!cut);
  }
  get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    return this.cut ? this.lost(opts) : this.inner.get(name, opts);
  }
  create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    return this.cut ? this.lost(opts) : this.inner.create(name, record, opts);
  }
  update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    if (this.cutAtNextUpdate) {
      this.cutAtNextUpdate = false;
      this.setCut(true);
    }
    return this.cut ? this.lost(opts) : this.inner.update(name, record, expectedVersion, opts);
  }
  watch(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    if (onHealth) this.health.add(onHealth);
    const stop = this.inner.watch(name, (e) => this.cut || onEvent(e));
    return () => {
      if (onHealth) this.health.delete(onHealth);
      stop();
    };
  }
  readonly successorClaims = { kept: () => true };
  async close(): Promise<void> {}
  /** A request on a cut link: no answer until the caller gives up on it. */
  private lost<T>(opts?: CallOptions): Promise<T> {
    return new Promise<T>((_, reject) => opts?.signal?.addEventListener('abort', () => reject(abortReason(opts.signal!)), { once: true }));
  }
}

function world() {
  const clock = new FakeClock();
  const shared = new MemoryLeaseStore();
  shared.versionsRestartOnCreate = true;
  // Hints without a record, as PostgreSQL's notifications: a hint makes a standby act on its view.
  shared.eventsCarryRecords = false;
  const electors = new Map<string, { elector: CandidateLoop; link: CuttableLink }>();
  const add = (identity: string, draw: number) => {
    const link = new CuttableLink(shared);
    const elector = new CandidateLoop({ ...resolveElectionConfig({ ...timings, lease: LEASE, identity }), store: link, clock, random: () => draw });
    electors.set(identity, { elector, link });
    elector.start();
    shared.setWatchHealth(true);
    return { elector, link };
  };
  /** Advances in small steps until `check` holds (at most `ms`). */
  const until = async (what: string, check: () => boolean, ms = 60_000) => {
    for (let waited = 0; !check(); waited += 50) {
      if (waited > ms) assert.fail(`no ${what} within ${ms} ms`);
      await clock.advance(50);
    }
  };
  /** Stops every candidate; requests still in flight end at their bound, on this clock. */
  const stopAll = async () => {
    const stopped = Promise.all([...electors.values()].map((e) => e.elector.stop()));
    await clock.advance(10_000);
    await stopped;
  };
  return { clock, shared, add, until, stopAll };
}

describe('no takeover from a view older than one request timeout (versions that restart)', () => {
  it('the named successor cut off at its takeover write re-reads when its link heals: the token never goes back', async () => {
    const w = world();
    w.shared.put(LEASE, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: T0, renewTime: T0, leaseTransitions: 1 });
    const a = w.add('a', 0);
    await w.clock.advance(0);
    assert.equal(a.elector.isLeader(), true);
    const b = w.add('b', 0.2);
    const c = w.add('c', 0.9);
    await w.until("b's claim", () => w.shared.peek(LEASE)?.successor?.identity === 'b');
    // a releases; b, the named successor, is cut off as it sends its takeover write.
    b.link.cutAtNextUpdate = true;
    const stopped = a.elector.stop();
    await w.clock.advance(0);
    await stopped;
    const released = w.shared.peekVersioned(LEASE)!;
    assert.equal(released.record.holderIdentity, '');
    // c takes it after the grace, and renews.
    await w.until('c to lead', () => c.elector.isLeader());
    const cToken = w.shared.peek(LEASE)!.leaseTransitions;
    assert.equal(b.link.cut, true, "b's takeover write was lost");
    // The record is deleted; c, the sitting leader, re-creates it with the next token, and its
    // renewals bring the new record to the version b read before the deletion.
    w.shared.delete(LEASE);
    await w.until('the re-created record', () => (w.shared.peek(LEASE)?.leaseTransitions ?? 0) > cToken);
    const recreated = w.shared.peek(LEASE)!.leaseTransitions;
    await w.until("the released record's version again", () => w.shared.peekVersioned(LEASE)?.version === released.version);
    // c freezes (its link goes), and b's link heals while the record is at that version.
    c.link.setCut(true);
    b.link.setCut(false);
    // b's write still on the cut link ends at its bound, and b tries again at its next turn;
    // c's record is still far from its expiry as b can judge it.
    await w.clock.advance(8_000);
    const now = w.shared.peek(LEASE)!;
    assert.equal(now.holderIdentity, 'c', `b wrote from its view of the release: ${JSON.stringify(now)}`);
    assert.equal(now.leaseTransitions, recreated, 'the token never goes back');
    assert.equal(b.elector.isLeader(), false);
    c.link.setCut(false);
    await w.stopAll();
  });
});
