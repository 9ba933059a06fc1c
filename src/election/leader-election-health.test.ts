/**
 * LeaderElection's `health` option: the caller's signal (ManualHealth) on the fake clock, probe
 * options against a real local HTTP server on the real clock, and the options refused.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LeaderElection, type LeaderElectionOptions, type Leadership } from './leader-election.js';
import { ManualHealth } from '../health/manual-health.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { InvalidConfigError } from '../errors.js';
import type { LeaseRecord } from '../backends/lease-store.js';

const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, contentionWindowMs: 0 };
const T = new Date('2026-12-02T08:59:00.000Z');
const RELEASED: LeaseRecord = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: T, renewTime: T, leaseTransitions: 0 };

function base(store: MemoryLeaseStore, over: Partial<LeaderElectionOptions> = {}): LeaderElectionOptions {
  return { ...timings, store, lease: LEASE, identity: 'me', callbacks: { onStartedLeading() {} }, ...over };
}

describe('LeaderElection with the app health', () => {
  it('a health signal: no term before the app is healthy; a failure ends the term, drains the work, then releases', async () => {
    const clock = new FakeClock();
    const store = new MemoryLeaseStore();
    store.put(LEASE, RELEASED);
    const health = new ManualHealth({ failureThreshold: 1, holdDownMs: 0 }, clock);
    const terms: Leadership[] = [];
    const stopped: string[] = [];
    let finishWork!: () => void;
    const election = await LeaderElection.start(
      base(store, {
        health,
        callbacks: {
          onStartedLeading: (l) => {
            terms.push(l);
            return new Promise<void>((resolve) => (finishWork = resolve));
          },
          onStoppedLeading: (reason) => void stopped.push(reason),
        },
      }),
      { clock },
    );
    await clock.advance(30_000);
    assert.equal(terms.length, 0, 'the app has not said it is healthy');
    assert.match(election.standingAside!.reason, /^app health unknown/);
    health.healthy();
    await clock.advance(100);
    assert.equal(election.isLeader(), true);
    assert.equal(election.standingAside, null);
    health.unhealthy('queue unreachable');
    await clock.advance(1_000);
    assert.deepEqual(stopped, ['app unhealthy: queue unreachable']);
    assert.equal(terms[0]!.signal.aborted, true, "the term's signal aborted");
    assert.equal(store.peek(LEASE)!.holderIdentity, 'me', 'not released while the work runs');
    finishWork();
    await clock.advance(0);
    assert.equal(store.peek(LEASE)!.holderIdentity, '', 'released once the work drained');
    assert.equal(election.isLeader(), false);
    await election.stop();
  });

  it('a health signal: with releaseOnCancel false the lease is left to expire', async () => {
    const clock = new FakeClock();
    const store = new MemoryLeaseStore();
    store.put(LEASE, RELEASED);
    const health = new ManualHealth({ failureThreshold: 1, holdDownMs: 0 }, clock);
    health.healthy();
    const election = await LeaderElection.start(base(store, { health, releaseOnCancel: false }), { clock });
    await clock.advance(100);
    assert.equal(election.isLeader(), true);
    health.unhealthy('down');
    await clock.advance(12_000);
    assert.equal(election.isLeader(), false);
    assert.equal(store.peek(LEASE)!.holderIdentity, 'me');
    await election.stop();
  });

  it('probe options: an HTTP probe of a real local app; the election follows it', async (t) => {
    let up = false;
    const server: Server = createServer((_req, res) => res.writeHead(up ? 200 : 503).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`;
    const store = new MemoryLeaseStore();
    store.put(LEASE, RELEASED);
    const election = await LeaderElection.start(
      base(store, {
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 200,
        health: { probe: { http: url }, periodMs: 50, timeoutMs: 50, failureThreshold: 2, holdDownMs: 0 },
      }),
    );
    t.after(() => election.stop());
    const until = async (what: string, ok: () => boolean) => {
      for (let i = 0; i < 500 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.ok(ok(), what);
    };
    await until('the failing app makes it stand aside', () => /^app unhealthy: GET .*: status 503$/.test(election.standingAside?.reason ?? ''));
    assert.equal(election.isLeader(), false);
    assert.equal(store.peek(LEASE)!.holderIdentity, '');
    up = true;
    await until('it leads once the app is healthy', () => election.isLeader());
    up = false;
    await until('it steps down and releases when the app fails', () => !election.isLeader() && store.peek(LEASE)!.holderIdentity === '');
  });

  const bad: [string, unknown, string][] = [
    ['a number', 5, 'health'],
    ['an https URL', { probe: { http: 'https://127.0.0.1/healthz' } }, 'healthHttp'],
    ['a threshold of 0', { probe: { tcp: { port: 80 } }, failureThreshold: 0 }, 'healthFailureThreshold'],
    ['a timeout past the period', { probe: { exec: ['true'] }, periodMs: 100, timeoutMs: 200 }, 'healthTimeout'],
  ];
  for (const [name, health, field] of bad) {
    it(`refuses health ${name} before anything is opened`, async () => {
      const store = new MemoryLeaseStore();
      await assert.rejects(
        LeaderElection.start(base(store, { health: health as LeaderElectionOptions['health'] })),
        (err: unknown) => err instanceof InvalidConfigError && err.field === field,
      );
      assert.deepEqual(store.calls, []);
    });
  }
});
