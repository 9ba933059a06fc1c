/**
 * The contention window: when the lease becomes free, standbys try at their own turn in the
 * window, so a crashed leader is replaced right after the expiry and a release is not a herd.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop, type CandidateOptions } from './candidate-loop.js';
import { contentionDelayMs, DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR } from './elector-config.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { prng } from '../../test/support/prng.js';
import { BackendUnavailableError } from '../errors.js';
import type { LeaseRecord } from '../backends/lease-store.js';
import { resolveElectionConfig, type ElectionConfig } from '../config/election-options.js';

const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const T = new Date('2026-12-03T08:59:00.000Z');
const held: LeaseRecord = { holderIdentity: 'crashed', leaseDurationSeconds: 15, acquireTime: T, renewTime: T, leaseTransitions: 4 };
const released: LeaseRecord = { ...held, holderIdentity: '', leaseDurationSeconds: 1 };

/** Standbys on one store whose events carry records, as a Kubernetes watch does. */
function standbys(
  n: number,
  opts: {
    seed?: number;
    random?: () => number;
    watch?: boolean;
    elector?: Partial<Omit<CandidateOptions, keyof ElectionConfig>> & { contentionWindowMs?: number };
  } = {},
) {
  const clock = new FakeClock();
  const store = new MemoryLeaseStore();
  store.eventsCarryRecords = true;
  store.put(LEASE, held);
  const rand = opts.random ?? prng(opts.seed ?? 1);
  const { contentionWindowMs, ...elector } = opts.elector ?? {};
  const electors = Array.from(
    { length: n },
    // The window alone: the successor claim (successor.test.ts) would name one of them first.
    (_, i) =>
      new CandidateLoop({
        ...resolveElectionConfig({ ...timings, lease: LEASE, identity: `standby-${i}`, contentionWindowMs }),
        store,
        clock,
        random: rand,
        successorClaims: false,
        ...elector,
      }),
  );
  return {
    clock,
    store,
    electors,
    async start() {
      for (const e of electors) e.start();
      if (opts.watch !== false) store.setWatchHealth(true);
      await clock.advance(0); // each reads once
      store.clearCalls();
    },
    leaders: () => electors.filter((e) => e.isLeader()),
    stop: () => Promise.all(electors.map((e) => e.stop())),
  };
}

describe('contentionDelayMs: the delay distribution', () => {
  it('spans [0, window], grows with the draw, and is 0 for a zero window', () => {
    assert.equal(contentionDelayMs(0, 40), 0);
    assert.ok(Math.abs(contentionDelayMs(1, 40) - 40) < 1e-9);
    let last = -1;
    for (let u = 0; u <= 1; u += 0.01) {
      const d = contentionDelayMs(u, 40);
      assert.ok(d > last, `increasing at u=${u}`);
      last = d;
    }
    assert.equal(contentionDelayMs(0.7, 0), 0);
  });

  it('keeps the first tries few with 100 standbys, and the first try early with 1 or 2', () => {
    const rand = prng(7);
    const rounds = 2_000;
    let within5 = 0;
    const firstOf2: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const d = Array.from({ length: 100 }, () => contentionDelayMs(rand(), DEFAULT_CONTENTION_WINDOW_MS)).sort((a, b) => a - b);
      within5 += d.filter((x) => x <= d[0]! + 5).length;
      firstOf2.push(Math.min(contentionDelayMs(rand(), DEFAULT_CONTENTION_WINDOW_MS), contentionDelayMs(rand(), DEFAULT_CONTENTION_WINDOW_MS)));
    }
    // Tries that start within 5 ms of the first cannot yet see its write (a Kubernetes write and
    // its watch event take a few ms here). A uniform window of the same width puts about 16 there.
    assert.ok(within5 / rounds <= 3.5, `mean tries within 5 ms of the first, 100 standbys: ${within5 / rounds}`);
    firstOf2.sort((a, b) => a - b);
    assert.ok(firstOf2[Math.floor(rounds * 0.95)]! <= DEFAULT_CONTENTION_WINDOW_MS, 'p95 of the first of 2 is inside the window');
  });
});

describe('standbys at a free lease', () => {
  it('a crashed leader: a watching standby tries at expiry + its delay, not before, with one write', async () => {
    const s = standbys(1, { random: () => 0.5 });
    await s.start();
    const turn = contentionDelayMs(0.5, DEFAULT_CONTENTION_WINDOW_MS);
    await s.clock.advance(15_000 + Math.floor(turn));
    assert.deepEqual(s.store.calls, [], 'nothing sent before its turn');
    await s.clock.advance(1);
    assert.deepEqual(s.store.calls, ['get', 'update'], 'one read at its turn, then one write');
    assert.equal(s.leaders().length, 1);
    await s.stop();
  });

  it('the new leader logs how long after the lease freed it took over (sinceFreeMs)', async () => {
    const lines: { msg: string; fields?: Record<string, unknown> }[] = [];
    const keep = (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, fields });
    const s = standbys(1, { random: () => 1, elector: { log: { debug: keep, info: keep, warn: keep, error: keep } } });
    await s.start();
    await s.clock.advance(15_000 + DEFAULT_CONTENTION_WINDOW_MS);
    assert.deepEqual(lines.find((l) => l.msg === 'became leader')?.fields?.sinceFreeMs, DEFAULT_CONTENTION_WINDOW_MS);
    await s.stop();
  });

  it('the worst draw still tries within the window after expiry (it used to wait up to retryPeriod / 2 more)', async () => {
    const s = standbys(1, { random: () => 1 });
    await s.start();
    await s.clock.advance(15_000 + DEFAULT_CONTENTION_WINDOW_MS);
    assert.equal(s.leaders().length, 1, 'leads at the end of the window after the expiry');
    await s.stop();
  });

  it('a polling standby (no healthy watch) also wakes at expiry + its delay, not at its next poll', async () => {
    const s = standbys(1, { random: () => 0.5, watch: false });
    await s.start();
    // Polls every 2 s × (1 + 0.5 × 1.2) = 3.2 s: at 12.8 s the next poll would be 16 s.
    const turn = contentionDelayMs(0.5, DEFAULT_CONTENTION_WINDOW_MS);
    await s.clock.advance(15_000 + Math.floor(turn));
    assert.equal(s.leaders().length, 0);
    await s.clock.advance(1);
    assert.equal(s.leaders().length, 1, 'took it at its turn after the expiry');
    assert.deepEqual(s.store.calls.slice(-2), ['get', 'update'], 'read, then the new term');
    await s.stop();
  });

  it('a release seen by 20 watching standbys: one write, not 20', async () => {
    const s = standbys(20, { seed: 42 });
    await s.start();
    s.store.put(LEASE, released); // the leader released (SIGTERM)
    await s.clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS); // a release's window is wider
    assert.equal(s.leaders().length, 1);
    assert.deepEqual(s.store.calls, ['get', 'update'], 'the later turns saw the new holder and stood back');
    await s.stop();
  });

  it('a release is taken within the release window (5 × the window), the worst draw at its end', async () => {
    const s = standbys(1, { random: () => 1 });
    await s.start();
    s.store.put(LEASE, released);
    await s.clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS - 1);
    assert.equal(s.leaders().length, 0);
    await s.clock.advance(1);
    assert.equal(s.leaders().length, 1);
    await s.stop();
  });

  it('the release window stays within a lease duration, however wide the window asked', async () => {
    const s = standbys(1, { random: () => 1, elector: { contentionWindowMs: 15_000 } });
    await s.start();
    s.store.put(LEASE, released);
    await s.clock.advance(15_000);
    assert.equal(s.leaders().length, 1, 'took the release at 15 s, not 5 × 15 s');
    await s.stop();
  });

  it('a crash seen by 20 watching standbys: one write at expiry', async () => {
    const s = standbys(20, { seed: 9 });
    await s.start();
    await s.clock.advance(15_000 + DEFAULT_CONTENTION_WINDOW_MS);
    assert.equal(s.leaders().length, 1);
    assert.deepEqual(s.store.calls, ['get', 'update']);
    await s.stop();
  });

  it('a store down at the turn: back to the usual retry rhythm, not a try every window', async () => {
    const s = standbys(1, { random: () => 0, watch: false });
    await s.start();
    for (let i = 0; i < 50; i++) s.store.failNext('*', new BackendUnavailableError('down'));
    await s.clock.advance(15_000);
    const atTurn = s.store.calls.length;
    assert.ok(atTurn >= 1, 'tried at its turn');
    await s.clock.advance(1_999);
    assert.equal(s.store.calls.length, atTurn, 'no further try before retryPeriod');
    await s.stop();
  });
});
