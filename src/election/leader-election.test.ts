/**
 * The library's wrapper around the elector, on the fake clock and the in-memory store: the
 * app's callbacks cannot disturb the election, a term's validUntil belongs to that term, stop()
 * releases only once the work has drained (within its bound), and bad options are refused
 * before anything is opened.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeaderElection, type LeaderCallbacks, type LeaderElectionOptions, type Leadership } from './leader-election.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { BackendUnavailableError, InvalidConfigError } from '../errors.js';
import type { CallOptions, LeaseRecord } from '../backends/lease-store.js';
import type { Logger } from '../log.js';

const LEASE = 'billing';
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, contentionWindowMs: 0 };

function released(): LeaseRecord {
  const t = new Date('2026-12-02T08:59:00.000Z');
  return { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: t, renewTime: t, leaseTransitions: 0 };
}

function setup(callbacks: Partial<LeaderCallbacks> = {}, over: Partial<LeaderElectionOptions> = {}) {
  const clock = new FakeClock();
  const store = new MemoryLeaseStore();
  store.put(LEASE, released());
  store.clearCalls();
  const logged: string[] = [];
  const log: Logger = {
    debug() {},
    info() {},
    warn: (msg) => logged.push(`warn ${msg}`),
    error: (msg, f) => logged.push(f?.callback === undefined ? `error ${msg}` : `error ${msg} ${String(f.callback)}: ${String(f.error)}`),
  };
  const terms: Leadership[] = [];
  const start = () =>
    LeaderElection.start(
      {
        ...timings,
        store,
        lease: LEASE,
        identity: 'me',
        log,
        callbacks: { onStartedLeading: (l) => void terms.push(l), ...callbacks },
        ...over,
      },
      { clock },
    );
  return { clock, store, logged, terms, start };
}

describe('LeaderElection: an app callback that throws or rejects never disturbs the election', () => {
  const cases: { name: keyof LeaderCallbacks; mode: 'throw' | 'reject' }[] = (['onStartedLeading', 'onNewLeader', 'onStoppedLeading'] as const).flatMap(
    (name) => (['throw', 'reject'] as const).map((mode) => ({ name, mode })),
  );
  for (const { name, mode } of cases) {
    it(`${name} ${mode === 'throw' ? 'throws' : 'rejects'}: leads, renews and releases with the same calls; the error is logged`, async () => {
      const fail = () => {
        if (mode === 'throw') throw new Error(`${name} broke`);
        return Promise.reject(new Error(`${name} broke`));
      };
      const s = setup({ [name]: fail });
      const election = await s.start();
      await s.clock.advance(0);
      const led = election.isLeader();
      await s.clock.advance(2_000); // one renewal
      await election.stop();
      await s.clock.advance(0);
      assert.equal(led, true);
      // Acquire (get, update); the watch event of its own write wakes the loop, which renews
      // at once (update); the renewal 2 s later (update); the release (update).
      assert.deepEqual(s.store.calls, ['get', 'update', 'update', 'update', 'update']);
      assert.equal(s.store.peek(LEASE)?.holderIdentity, '', 'released');
      assert.equal(s.store.peek(LEASE)?.leaseTransitions, 1, 'one term');
      const errors = s.logged.filter((l) => l.startsWith('error'));
      assert.ok(errors.length > 0, 'reported');
      for (const line of errors) assert.equal(line, `error callback failed ${name}: ${name} broke`);
    });
  }
});

describe('LeaderElection: an app logger that throws or rejects never disturbs the election', () => {
  const cases = (['debug', 'info', 'warn', 'error'] as const).flatMap((level) => (['throw', 'reject'] as const).map((mode) => ({ level, mode })));
  for (const { level, mode } of cases) {
    it(`log.${level} ${mode === 'throw' ? 'throws' : 'rejects'}: onStartedLeading runs, it renews, stops and releases as with any logger`, async () => {
      const quiet = () => {};
      const log: Logger = { debug: quiet, info: quiet, warn: quiet, error: quiet };
      log[level] = () => {
        if (mode === 'throw') throw new Error(`${level} broke`);
        return Promise.reject(new Error(`${level} broke`)) as unknown as void;
      };
      // onNewLeader throws too, so that its report goes through log.error.
      const s = setup(
        {
          onNewLeader: () => {
            throw new Error('onNewLeader broke');
          },
        },
        { log },
      );
      const election = await s.start();
      await s.clock.advance(0);
      assert.equal(election.isLeader(), true);
      assert.equal(s.terms.length, 1, 'onStartedLeading was called');
      await s.clock.advance(2_000); // one renewal
      await election.stop();
      await s.clock.advance(0);
      assert.equal(s.terms[0]!.signal.aborted, true);
      assert.deepEqual(s.store.calls, ['get', 'update', 'update', 'update', 'update']);
      assert.equal(s.store.peek(LEASE)?.holderIdentity, '', 'released: another may lead at once');
    });
  }

  it('log.error throws when the work outlives drainTimeoutMs: stop() still resolves', async () => {
    const quiet = () => {};
    const log: Logger = {
      debug: quiet,
      info: quiet,
      warn: quiet,
      error: () => {
        throw new Error('error broke');
      },
    };
    const s = setup({ onStartedLeading: () => new Promise<void>(() => {}) }, { drainTimeoutMs: 1_000, log });
    const election = await s.start();
    await s.clock.advance(0);
    const stopped = election.stop();
    await s.clock.advance(1_000);
    await stopped;
    assert.equal(s.store.peek(LEASE)?.holderIdentity, 'me', 'left to expire');
  });
});

describe('Leadership.validUntil()', () => {
  it('moves with its own term’s renewals, and never after that term ended (not with a later term)', async () => {
    const s = setup();
    const election = await s.start();
    await s.clock.advance(0);
    const [first] = s.terms;
    const acquired = first!.validUntil().getTime();
    await s.clock.advance(2_000);
    assert.equal(first!.validUntil().getTime(), acquired + 2_000, 'a renewal moves it');

    // Another takes the lease under us: the next renewal conflicts, the read finds it held.
    const rec = s.store.peek(LEASE)!;
    s.store.put(LEASE, { ...rec, holderIdentity: 'other', leaseDurationSeconds: 15, leaseTransitions: 2 });
    await s.clock.advance(2_000);
    assert.equal(first!.signal.aborted, true);
    const ended = first!.validUntil().getTime();
    assert.ok(ended <= s.clock.now().getTime(), 'an ended term counts no longer than until it ended');

    await s.clock.advance(20_000); // other's lease expires; we lead again and renew
    assert.equal(election.isLeader(), true);
    assert.equal(s.terms.length, 2);
    assert.ok(s.terms[1]!.validUntil().getTime() > ended);
    assert.equal(first!.validUntil().getTime(), ended, 'term 1 keeps its own end');
    await election.stop();
  });
});

describe('stop(): the release waits for the work to drain, within drainTimeoutMs', () => {
  const holderAfter = (s: ReturnType<typeof setup>) => s.store.peek(LEASE)?.holderIdentity;

  it('the signal aborts at once; the lease is released only when the work has finished', async () => {
    let finish!: () => void;
    const s = setup({
      onStartedLeading: (l) => {
        s.terms.push(l);
        return new Promise<void>((resolve) => (finish = resolve));
      },
    });
    const election = await s.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    const stopped = election.stop();
    await s.clock.advance(2_999);
    assert.equal(s.terms[0]!.signal.aborted, true);
    assert.deepEqual(s.store.calls, [], 'nothing released while the work runs');
    assert.equal(holderAfter(s), 'me');
    finish();
    await stopped;
    assert.deepEqual(s.store.calls, ['update']);
    assert.equal(holderAfter(s), '', 'released once it finished');
  });

  it('work that does not finish within drainTimeoutMs: the lease is left to expire, not released, and that is logged', async () => {
    const s = setup({ onStartedLeading: () => new Promise<void>(() => {}) }, { drainTimeoutMs: 3_000 });
    const election = await s.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    const stopped = election.stop();
    await s.clock.advance(2_999);
    assert.deepEqual(s.store.calls, []);
    await s.clock.advance(1);
    await stopped;
    assert.deepEqual(s.store.calls, []);
    assert.equal(holderAfter(s), 'me');
    assert.deepEqual(s.logged, ['warn stopped leading', 'error the work did not finish within drainTimeoutMs: the lease is left to expire, not released']);
  });

  it('by default the drain is bounded as the sidecar’s: renewDeadlineMs/2 − retryPeriodMs', async () => {
    const s = setup({ onStartedLeading: () => new Promise<void>(() => {}) });
    const election = await s.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    let done = false;
    const stopped = election.stop().then(() => (done = true));
    await s.clock.advance(2_999);
    assert.equal(done, false);
    await s.clock.advance(1);
    await stopped;
    assert.deepEqual(s.store.calls, [], 'not released: left to expire');
    assert.deepEqual(s.logged, ['warn stopped leading', 'error the work did not finish within drainTimeoutMs: the lease is left to expire, not released']);
  });

  it("drainTimeoutMs 0 releases at once, as client-go's ReleaseOnCancel", async () => {
    const s = setup({ onStartedLeading: () => new Promise<void>(() => {}) }, { drainTimeoutMs: 0 });
    const election = await s.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    await election.stop();
    assert.deepEqual(s.store.calls, ['update']);
    assert.equal(holderAfter(s), '');
  });

  it("onStoppedLeading's promise holds the release until it settles", async () => {
    let finish!: () => void;
    const s = setup({ onStoppedLeading: () => new Promise<void>((resolve) => (finish = resolve)) });
    const election = await s.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    const stopped = election.stop();
    await s.clock.advance(2_999);
    assert.deepEqual(s.store.calls, [], 'nothing released while onStoppedLeading runs');
    assert.equal(holderAfter(s), 'me');
    finish();
    await stopped;
    assert.deepEqual(s.store.calls, ['update']);
    assert.equal(holderAfter(s), '', 'released once it settled');
  });

  it('an onStoppedLeading promise that rejects is logged and the release goes on', async () => {
    const s = setup({ onStoppedLeading: () => Promise.reject(new Error('flush failed')) });
    const election = await s.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    await election.stop();
    assert.deepEqual(s.store.calls, ['update']);
    assert.equal(holderAfter(s), '');
    assert.deepEqual(s.logged, ['warn stopped leading', 'error callback failed onStoppedLeading: flush failed']);
  });

  it('an onStoppedLeading promise that never settles is bounded by drainTimeoutMs: the lease is left to expire', async () => {
    const s = setup({ onStoppedLeading: () => new Promise<void>(() => {}) }, { drainTimeoutMs: 3_000 });
    const election = await s.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    const stopped = election.stop();
    await s.clock.advance(2_999);
    assert.deepEqual(s.store.calls, []);
    await s.clock.advance(1);
    await stopped;
    assert.deepEqual(s.store.calls, []);
    assert.equal(holderAfter(s), 'me');
    assert.deepEqual(s.logged, ['warn stopped leading', 'error the work did not finish within drainTimeoutMs: the lease is left to expire, not released']);
  });

  it('releaseOnCancel: false never releases', async () => {
    const s = setup({}, { releaseOnCancel: false });
    const election = await s.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    await election.stop();
    assert.deepEqual(s.store.calls, []);
    assert.equal(holderAfter(s), 'me');
  });
});

/** A store whose updates fail while `stalled`, as a database whose writes time out. */
class StallingStore extends MemoryLeaseStore {
  stalled = false;
  override update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    if (this.stalled) return Promise.reject(new BackendUnavailableError('writes stalled'));
    return super.update(name, record, expectedVersion, opts);
  }
}

describe('every end of a term waits for its work before the next term (the end-of-term gate)', () => {
  it('a term lost at its renew deadline: this process leads again only once that term’s work settled', async () => {
    // The reproduction: the store's writes stall, the leader misses its renew deadline,
    // its own record is still the last write, and the store answers again while the work of
    // token 1 still runs. Before the gate, token 2 began at the next turn, beside token 1's work.
    const clock = new FakeClock();
    const store = new StallingStore();
    store.put(LEASE, released());
    let finish!: () => void;
    const events: string[] = [];
    const election = await LeaderElection.start(
      {
        ...timings,
        store,
        lease: LEASE,
        identity: 'me',
        log: { debug() {}, info() {}, warn() {}, error() {} },
        callbacks: {
          onStartedLeading: (l) => {
            events.push(`started ${l.token} at ${clock.monotonic()}`);
            if (l.token === 1) return new Promise<void>((resolve) => (finish = resolve));
          },
          onStoppedLeading: () => void events.push(`stopped at ${clock.monotonic()}`),
        },
      },
      { clock },
    );
    await clock.advance(0);
    assert.equal(election.token, 1);
    store.stalled = true;
    for (let waited = 0; election.isLeader() && waited < 2 * timings.renewDeadlineMs; waited += 100) await clock.advance(100);
    assert.equal(election.isLeader(), false, 'stepped down at its renew deadline');
    store.stalled = false;
    await clock.advance(2 * timings.retryPeriodMs);
    assert.equal(election.isLeader(), false, `no new term while the work of token 1 runs: ${events.join('; ')}`);
    finish();
    const settledAt = clock.monotonic();
    for (let waited = 0; !election.isLeader() && waited < timings.leaseDurationMs; waited += 100) await clock.advance(100);
    assert.equal(election.isLeader(), true, events.join('; '));
    const started2 = events.find((e) => e.startsWith('started 2'));
    assert.ok(started2 && Number(started2.split(' at ')[1]) >= settledAt, events.join('; '));
    const stopped = election.stop();
    await clock.advance(0);
    await stopped;
  });
});

describe('bad options: InvalidConfigError naming the rule, before anything is opened', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-options-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'leases.db');
  const base = { store: { backend: 'sqlite' as const, db }, lease: LEASE, identity: 'me', callbacks: { onStartedLeading() {} } };
  const cases: { name: string; over: Record<string, unknown>; message: RegExp }[] = [
    { name: 'no identity', over: { identity: undefined }, message: /^identity is required: a string unique among the candidates .*got undefined$/ },
    { name: 'an identity that is not a string', over: { identity: 7 }, message: /^identity is required: .*got a number \(7\)$/ },
    { name: 'no lease', over: { lease: undefined }, message: /^lease is required: a string naming the lease .*got undefined$/ },
    {
      name: 'a sub-millisecond retryPeriod (the CLI refuses 0.5ms too)',
      over: { retryPeriodMs: 0.5 },
      message: /^retryPeriodMs must be a whole number of milliseconds/,
    },
    { name: 'a fractional leaseDuration', over: { leaseDurationMs: 15_000.5 }, message: /^leaseDurationMs must be a whole number of milliseconds/ },
    { name: 'a timing given as a string', over: { leaseDurationMs: '15000' }, message: /^leaseDurationMs must be a number of milliseconds, got "15000"$/ },
    { name: 'a fractional contention window', over: { contentionWindowMs: 0.5 }, message: /^contentionWindowMs must be a whole number of milliseconds/ },
    {
      name: 'kubernetes with a leaseDuration in part seconds (the CLI rule)',
      over: { store: { backend: 'kubernetes' }, leaseDurationMs: 15_500 },
      message: /^leaseDurationMs 15500 is invalid: the kubernetes backend stores leaseDurationSeconds as an integer/,
    },
    { name: 'no store', over: { store: undefined }, message: /^store is required/ },
    { name: 'a negative drainTimeoutMs', over: { drainTimeoutMs: -1 }, message: /^drainTimeoutMs must be a whole number of milliseconds/ },
    { name: 'drainTimeoutMs given as a string: quoted as given', over: { drainTimeoutMs: '10' }, message: /^drainTimeoutMs must be .*, got "10"$/ },
    // The sidecar's bound on --drain-timeout (renewDeadline/2 − retryPeriod): a longer drain
    // waits while the lease expires, and the next leader starts beside the work.
    {
      name: 'a drainTimeoutMs past the sidecar’s bound (renewDeadlineMs/2 − retryPeriodMs)',
      over: { drainTimeoutMs: 3_001 },
      message:
        /^drainTimeoutMs must be at most renewDeadlineMs\/2 − retryPeriodMs \(3000\): the release must still be sent before the renew deadline; .*got 3001$/,
    },
    {
      name: 'a drainTimeoutMs of 2^31 − 1 (stop() never returned)',
      over: { drainTimeoutMs: 2 ** 31 - 1 },
      message: /^drainTimeoutMs must be at most .*\(3000\)/,
    },
    {
      name: 'any drain where timings leave none',
      over: { renewDeadlineMs: 4_000, retryPeriodMs: 2_000, drainTimeoutMs: 1 },
      message:
        /^drainTimeoutMs 1 is too long: no drain fits renewDeadlineMs\/2 − retryPeriodMs \(2000 − 2000\); raise renewDeadlineMs, lower retryPeriodMs, or give 0$/,
    },
    { name: 'releaseOnCancel not a boolean', over: { releaseOnCancel: 'no' }, message: /^releaseOnCancel must be true or false when given, got "no"$/ },
    {
      name: 'an unknown option (a typo for leaseDurationMs)',
      over: { leaseDuration: 1 },
      message: /^unknown option "leaseDuration": LeaderElection.start knows store, lease, identity, leaseDurationMs, .*, log$/,
    },
    {
      name: "releaseOnExit, the sidecar's old name for the release option",
      over: { releaseOnExit: false },
      message: /^option "releaseOnExit" is now called "releaseOnCancel"/,
    },
    { name: "releaseOnStop, the elector's old name", over: { releaseOnStop: false }, message: /^option "releaseOnStop" is now called "releaseOnCancel"/ },
    { name: 'a signal that is not an AbortSignal', over: { signal: 5 }, message: /^signal must be an AbortSignal when given .*got 5$/ },
    { name: 'a log without methods', over: { log: {} }, message: /^log must be an object with debug, info, warn and error methods/ },
    {
      name: 'a log missing one method',
      over: { log: { debug() {}, info() {}, warn() {} } },
      message: /^log must be an object with debug, info, warn and error methods/,
    },
    {
      name: 'timings named as the options are spelled',
      over: { leaseDurationMs: 100, renewDeadlineMs: 200, retryPeriodMs: 10 },
      message: /^leaseDurationMs must be greater than renewDeadlineMs \(got leaseDurationMs 100, renewDeadlineMs 200\)$/,
    },
    { name: 'retryPeriodMs 0', over: { retryPeriodMs: 0 }, message: /^retryPeriodMs must be greater than zero \(got 0\)$/ },
    {
      name: 'a contention window longer than the lease',
      over: { contentionWindowMs: 20_000 },
      message: /^contentionWindowMs must be between 0 and leaseDurationMs \(15000\): .*, got 20000$/,
    },
    { name: 'a contention window given as a string', over: { contentionWindowMs: '5' }, message: /^contentionWindowMs must be between .*, got "5"$/ },
    {
      name: 'onNewLeader not a function',
      over: { callbacks: { onStartedLeading() {}, onNewLeader: 'x' } },
      message: /^callbacks.onNewLeader must be a function/,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      await assert.rejects(LeaderElection.start({ ...base, ...c.over }), (err: Error) => {
        assert.ok(err instanceof InvalidConfigError, `${err.name}: ${err.message}`);
        assert.match(err.message, c.message);
        return true;
      });
      assert.equal(existsSync(db), false, 'no database file created');
    });
  }
});
