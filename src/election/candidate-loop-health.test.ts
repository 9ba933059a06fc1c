/**
 * The app's health in the election (CandidateOptions.eligibility): a candidate whose app is not
 * eligible never takes the lease nor claims it, withdraws its claim, and a leader steps down
 * and releases. Real electors on the in-memory store, on the fake clock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop, type CandidateOptions } from './candidate-loop.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { ManualHealth } from '../health/manual-health.js';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from '../backends/lease-store.js';
import { resolveElectionConfig, type ElectionConfig } from '../config/election-options.js';

const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const T0 = new Date('2026-12-03T09:00:00.000Z');
const RELEASED: LeaseRecord = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: T0, renewTime: T0, leaseTransitions: 3 };

/** One candidate's link to the shared store: records the writes it sent; `onGet` runs as a read is answered. */
class Link implements LeaseStore {
  readonly backend = 'memory';
  readonly location = 'memory';
  writes: LeaseRecord[] = [];
  onGet: (() => void) | null = null;
  constructor(private readonly inner: MemoryLeaseStore) {}
  async get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    const got = await this.inner.get(name, opts);
    const hook = this.onGet;
    this.onGet = null;
    hook?.();
    return got;
  }
  create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    this.writes.push(structuredClone(record));
    return this.inner.create(name, record, opts);
  }
  update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    this.writes.push(structuredClone(record));
    return this.inner.update(name, record, expectedVersion, opts);
  }
  watch(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    return this.inner.watch(name, onEvent, onHealth);
  }
  readonly successorClaims = { kept: () => true };
  async close(): Promise<void> {}
}

function world() {
  const clock = new FakeClock(T0);
  const shared = new MemoryLeaseStore();
  shared.eventsCarryRecords = true;
  const electors: CandidateLoop[] = [];
  const add = (identity: string, health: ManualHealth | null, over: Partial<Omit<CandidateOptions, keyof ElectionConfig>> = {}) => {
    const link = new Link(shared);
    const events: string[] = [];
    const elector = new CandidateLoop({
      ...resolveElectionConfig({ ...timings, lease: LEASE, identity }),
      store: link,
      clock,
      random: () => 0.5,
      ...(health ? { eligibility: health } : {}),
      listener: {
        onStartedLeading: (t) => events.push(`started:${t.token}`),
        // What the store held when the step-down was announced: it must still be ours (not yet released).
        onStoppedLeading: (r) => events.push(`stopped:${r} (holder ${shared.peek(LEASE)?.holderIdentity})`),
      },
      ...over,
    });
    electors.push(elector);
    elector.start();
    shared.setWatchHealth(true);
    return { elector, link, events };
  };
  return { clock, shared, add, holder: () => shared.peek(LEASE)?.holderIdentity, stopAll: () => Promise.all(electors.map((e) => e.stop())) };
}

/** Health that counts one signal (thresholds 1) with no hold-down, unless told otherwise. */
const manual = (clock: FakeClock, holdDownMs = 0) => new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs }, clock);

describe('the elector and the app health', () => {
  it('a candidate whose app has not said it is healthy never takes a free lease, however long', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const health = manual(w.clock);
    const a = w.add('a', health);
    await w.clock.advance(120_000);
    assert.deepEqual(a.link.writes, [], 'not one write');
    assert.equal(w.holder(), '');
    assert.equal(a.elector.snapshot().holder, '', 'it still reads: its view is current');
    assert.deepEqual(a.elector.snapshot().standingAside, { reason: 'app health unknown: no verdict yet', since: T0 });
    health.healthy();
    await w.clock.advance(100);
    assert.equal(w.holder(), 'a', 'eligible: it takes the lease at once');
    assert.equal(a.elector.snapshot().standingAside, null);
    await w.stopAll();
  });

  it('a candidate never creates an absent lease while its app is unhealthy', async () => {
    const w = world();
    const health = manual(w.clock);
    health.unhealthy('status 503');
    const a = w.add('a', health);
    await w.clock.advance(60_000);
    assert.deepEqual(a.link.writes, []);
    assert.equal(w.shared.peek(LEASE), undefined);
    await w.stopAll();
  });

  it('a leader whose app fails steps down first, then releases, and a healthy standby takes over', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const health = manual(w.clock);
    health.healthy();
    const a = w.add('a', health);
    await w.clock.advance(1_000);
    assert.equal(w.holder(), 'a');
    const b = w.add('b', null);
    await w.clock.advance(5_000);
    const token = w.shared.peek(LEASE)!.leaseTransitions;
    health.unhealthy('GET http://127.0.0.1:8080/healthz: connection refused');
    await w.clock.advance(0);
    assert.equal(a.elector.isLeader(), false);
    assert.deepEqual(a.events, [`started:${token}`, 'stopped:app unhealthy: GET http://127.0.0.1:8080/healthz: connection refused (holder a)']);
    assert.equal(a.link.writes.at(-1)!.holderIdentity, '', 'then released');
    assert.equal(a.link.writes.at(-1)!.leaseTransitions, token, 'the release keeps the token');
    await w.clock.advance(200);
    assert.equal(w.holder(), 'b', 'the standby took over within a handoff, not a lease duration');
    assert.equal(b.elector.isLeader(), true);
    // a stays a standby: its loop runs, and it says why it stands aside.
    assert.equal(a.elector.snapshot().running, true);
    assert.match(a.elector.snapshot().standingAside!.reason, /^app unhealthy: /);
    await w.stopAll();
  });

  it('with releaseOnCancel false, a failing leader steps down and leaves the lease to expire', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const health = manual(w.clock);
    health.healthy();
    const a = w.add('a', health, { releaseOnCancel: false });
    await w.clock.advance(1_000);
    assert.equal(w.holder(), 'a');
    const writes = a.link.writes.length;
    health.unhealthy('down');
    await w.clock.advance(30_000);
    assert.equal(a.elector.isLeader(), false);
    assert.equal(a.link.writes.length, writes, 'no release, and no renewal after the step-down');
    await w.stopAll();
  });

  it('a failing leader whose releaseGate says no (not-leader not on disk) leaves the lease to expire', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const health = manual(w.clock);
    health.healthy();
    let gateAsked = 0;
    const a = w.add('a', health, {
      releaseGate: () => {
        gateAsked++;
        return false;
      },
    });
    await w.clock.advance(1_000);
    assert.equal(w.holder(), 'a');
    const writes = a.link.writes.length;
    health.unhealthy('down');
    await w.clock.advance(0);
    assert.equal(a.elector.isLeader(), false);
    assert.equal(gateAsked, 1, 'the release asked the gate');
    assert.equal(a.link.writes.length, writes, 'no release after the gate said no');
    assert.equal(w.holder(), 'a', 'the lease is left to expire');
    await w.stopAll();
  });

  it('stop(): the step-down, then drain, then the release gate, then the release', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const order: string[] = [];
    let drained!: (release: boolean) => void;
    const a = w.add('a', null, {
      drain: () => {
        order.push(`drain (holder ${w.holder()})`);
        return new Promise<boolean>((resolve) => (drained = resolve));
      },
      releaseGate: () => {
        order.push('gate');
        return true;
      },
    });
    await w.clock.advance(1_000);
    assert.equal(w.holder(), 'a');
    const writes = a.link.writes.length;
    const stopped = a.elector.stop();
    await w.clock.advance(3_000);
    assert.equal(a.elector.isLeader(), false, 'stepped down at once');
    assert.deepEqual(order, ['drain (holder a)'], 'the gate waits for the drain');
    assert.equal(a.link.writes.length, writes, 'nothing released while the work drains');
    drained(true);
    await stopped;
    assert.deepEqual(order, ['drain (holder a)', 'gate']);
    assert.equal(w.holder(), '', 'released after the drain');
  });

  it('stop(): a drain that says no (or rejects) leaves the lease to expire', async () => {
    for (const drain of [async () => false, () => Promise.reject(new Error('boom'))]) {
      const w = world();
      w.shared.put(LEASE, RELEASED);
      const a = w.add('a', null, { drain: drain });
      await w.clock.advance(1_000);
      const writes = a.link.writes.length;
      await a.elector.stop();
      assert.equal(a.link.writes.length, writes, 'no release');
      assert.equal(w.holder(), 'a');
    }
  });

  it('a standby whose app fails withdraws its successor claim and claims nothing until healthy', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    w.add('L', null);
    await w.clock.advance(1_000);
    assert.equal(w.holder(), 'L');
    const health = manual(w.clock);
    health.healthy();
    const s = w.add('s', health);
    await w.clock.advance(2_000);
    assert.equal(w.shared.peek(LEASE)!.successor?.identity, 's', 'the healthy standby claimed');
    health.unhealthy('down');
    await w.clock.advance(0);
    assert.equal(w.shared.peek(LEASE)!.successor, undefined, 'the claim is withdrawn');
    const writes = s.link.writes.length;
    await w.clock.advance(600_000);
    assert.equal(s.link.writes.length, writes, 'no claim while unhealthy, through many volunteer windows');
    assert.equal(w.holder(), 'L');
    await w.stopAll();
  });

  it('a takeover whose read was in flight when the app failed is not sent', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const health = manual(w.clock);
    const a = w.add('a', health);
    await w.clock.advance(3_000);
    // The app turns healthy; the attempt that follows reads, and the app fails before the answer.
    a.link.onGet = () => health.unhealthy('down');
    health.healthy();
    await w.clock.advance(10_000);
    assert.deepEqual(a.link.writes, []);
    assert.equal(w.holder(), '');
    await w.stopAll();
  });

  it('after a step-down, the hold-down keeps it from taking the lease back while its app flaps', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const health = manual(w.clock, 30_000);
    health.healthy();
    const a = w.add('a', health);
    await w.clock.advance(1_000);
    assert.equal(w.holder(), 'a');
    // The app flaps every second for a minute; nobody else is there to take the lease.
    for (let t = 0; t < 60_000; t += 1_000) {
      if ((t / 1_000) % 2 === 0) health.unhealthy('down');
      else health.healthy();
      await w.clock.advance(1_000);
    }
    assert.equal(a.events.filter((e) => e.startsWith('stopped')).length, 1, 'exactly one step-down');
    assert.equal(a.events.filter((e) => e.startsWith('started')).length, 1, 'and no term in between');
    health.healthy();
    await w.clock.advance(30_000);
    assert.equal(w.holder(), 'a', 'healthy for the hold-down: it leads again');
    await w.stopAll();
  });

  it('logs one warn line when it starts standing aside and one info line when it campaigns again', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const health = new ManualHealth({ failureThreshold: 2, successThreshold: 1, holdDownMs: 5_000 }, w.clock);
    const lines: string[] = [];
    const log = {
      debug: () => {},
      info: (m: string) => void lines.push(`info ${m}`),
      warn: (m: string, f?: Record<string, unknown>) => void lines.push(`warn ${m}: ${String(f?.reason)}`),
      error: () => {},
    };
    w.add('a', health, { log });
    const ours = () => lines.filter((l) => /standing aside|eligible/.test(l));
    health.healthy();
    await w.clock.advance(100);
    assert.deepEqual(ours(), ['info the app is eligible: campaigning']);
    health.unhealthy('status 503');
    health.unhealthy('status 503');
    await w.clock.advance(100);
    // Unhealthy, then healthy but held down, then held down again by a failure: one line.
    health.healthy();
    health.unhealthy('status 503');
    health.healthy();
    await w.clock.advance(5_100);
    assert.deepEqual(ours(), [
      'info the app is eligible: campaigning',
      'warn standing aside: app unhealthy: status 503',
      'info the app is eligible: campaigning',
    ]);
    await w.stopAll();
  });
});

describe('the end-of-term gate: every end of a term waits for its work', () => {
  /** The first term's work runs until `finish()`; later terms' work stops at once. */
  function firstWork() {
    let finish!: () => void;
    const first = new Promise<void>((resolve) => (finish = resolve));
    let calls = 0;
    return { drain: () => (calls++ === 0 ? first : Promise.resolve()), finish: () => finish() };
  }

  it('a sitting leader whose record vanished recreates it only once its work has stopped', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const work = firstWork();
    const a = w.add('a', null, { drain: work.drain });
    await w.clock.advance(1_000);
    assert.deepEqual(a.events, ['started:4']);
    w.shared.delete(LEASE);
    await w.clock.advance(2 * timings.retryPeriodMs);
    assert.equal(a.elector.isLeader(), false, 'the term ended on finding the record gone');
    assert.equal(w.holder(), undefined, 'not recreated while the work runs');
    work.finish();
    await w.clock.advance(0);
    assert.equal(a.elector.isLeader(), true, 'recreated at once once the work stopped');
    assert.deepEqual(a.events, ['started:4', 'stopped:the lease record disappeared (holder undefined)', 'started:5']);
    await w.stopAll();
  });

  it('a step-down for the app waits for the work, then releases', async () => {
    const w = world();
    w.shared.put(LEASE, RELEASED);
    const health = manual(w.clock);
    health.healthy();
    const work = firstWork();
    const a = w.add('a', health, { drain: work.drain });
    await w.clock.advance(1_000);
    assert.equal(w.holder(), 'a');
    health.unhealthy('down');
    await w.clock.advance(5_000);
    assert.equal(a.elector.isLeader(), false);
    assert.equal(w.holder(), 'a', 'not released while the work runs');
    work.finish();
    await w.clock.advance(0);
    assert.equal(w.holder(), '', 'released once it stopped');
    await w.stopAll();
  });
});
