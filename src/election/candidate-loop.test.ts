import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop, type CandidateListener } from './candidate-loop.js';
import { DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR } from './elector-config.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore, type StoreOp } from '../testing/memory-store.js';
import { BackendUnavailableError, StoreReopenedError } from '../errors.js';
import { liveness } from '../sidecar/kubelet-probes.js';
import type { LeaseRecord } from '../backends/lease-store.js';
import { resolveElectionConfig } from '../config/election-options.js';

const LEASE = 'billing';
const ME = 'me';
const T0 = new Date('2026-12-02T09:00:00.000Z');
const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

function record(over: Partial<LeaseRecord> = {}): LeaseRecord {
  const t = new Date('2026-12-02T08:59:00.000Z');
  return { holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: t, renewTime: t, leaseTransitions: 4, ...over };
}

/** The lease as a candidate finds it after a release: anyone may take it at once. */
function released(over: Partial<LeaseRecord> = {}): LeaseRecord {
  return record({ holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 0, ...over });
}

/** Makes the elector the leader with token 1 (from a released record), then forgets the calls. */
async function lead(s: { store: MemoryLeaseStore; elector: CandidateLoop }): Promise<void> {
  if (!s.store.peek(LEASE)) s.store.put(LEASE, released());
  assert.equal(await s.elector.tryAcquireOrRenew(), true, 'became leader');
  s.store.clearCalls();
}

/** Keeps looking, as the loop would (every retryPeriod), while `ms` pass: an absence is then seen continuously. */
async function keepLooking(s: { elector: CandidateLoop; clock: FakeClock }, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 2_000) {
    await s.elector.tryAcquireOrRenew();
    await s.clock.advance(Math.min(2_000, ms - t));
  }
}

function setup(opts: { listener?: CandidateListener; random?: () => number; identity?: string; requestTimeoutMs?: number } = {}) {
  const clock = new FakeClock();
  const store = new MemoryLeaseStore();
  const events: string[] = [];
  const elector = new CandidateLoop({
    ...resolveElectionConfig({ ...timings, lease: LEASE, identity: opts.identity ?? ME }),
    store,
    clock,
    random: opts.random ?? (() => 0),
    requestTimeoutMs: opts.requestTimeoutMs,
    // These cases pin the lease traffic alone; successor.test.ts covers the claim's writes.
    successorClaims: false,
    listener: opts.listener ?? {
      onStartedLeading: (t) => events.push(`started:${t.token}`),
      onStoppedLeading: (r) => events.push(`stopped:${r}`),
      onNewLeader: (h) => events.push(`holder:${h}`),
      onSlowPath: () => events.push('slowpath'),
    },
  });
  return { clock, store, elector, events };
}

describe('tryAcquireOrRenew: one attempt, exact backend calls', () => {
  interface Case {
    name: string;
    /** Arrange: seed the store and optionally run earlier attempts. */
    arrange: (s: ReturnType<typeof setup>) => Promise<void> | void;
    wantLeader: boolean;
    wantCalls: StoreOp[];
    wantToken?: number;
    wantHolder?: string;
  }
  const cases: Case[] = [
    {
      name: 'absent for a lease duration but with a gap in the view (a pause, hung reads): the wait starts over',
      arrange: async ({ store, elector, clock }) => {
        await elector.tryAcquireOrRenew();
        await clock.advance(15_000); // not looking meanwhile: the record may have come and gone
        store.clearCalls();
      },
      wantLeader: false,
      wantCalls: ['get'],
    },
    {
      name: "absent lease, first seen: write nothing (a deleted record's holder may still act)",
      arrange: () => {},
      wantLeader: false,
      wantCalls: ['get'],
    },
    {
      name: 'absent lease for a whole lease duration: create it with token 1',
      arrange: async (s) => {
        await keepLooking(s, 15_000);
        s.store.clearCalls();
      },
      wantLeader: true,
      wantCalls: ['get', 'create'],
      wantToken: 1,
      wantHolder: ME,
    },
    {
      name: 'held by another, just observed: do not write',
      arrange: ({ store }) => void store.put(LEASE, record()),
      wantLeader: false,
      wantCalls: ['get'],
      wantHolder: 'other',
    },
    {
      name: 'held by another, unchanged for leaseDurationSeconds: take over, token + 1',
      arrange: async ({ store, elector, clock }) => {
        store.put(LEASE, record());
        await elector.tryAcquireOrRenew();
        await clock.advance(15_000);
        store.clearCalls();
      },
      wantLeader: true,
      wantCalls: ['get', 'update'],
      wantToken: 5,
      wantHolder: ME,
    },
    {
      name: 'held by another, unchanged for just under leaseDurationSeconds: wait',
      arrange: async ({ store, elector, clock }) => {
        store.put(LEASE, record());
        await elector.tryAcquireOrRenew();
        await clock.advance(14_999);
        store.clearCalls();
      },
      wantLeader: false,
      wantCalls: ['get'],
      wantHolder: 'other',
    },
    {
      name: "the record's leaseDurationSeconds rules, not ours: 30s lease not expired at 20s",
      arrange: async ({ store, elector, clock }) => {
        store.put(LEASE, record({ leaseDurationSeconds: 30 }));
        await elector.tryAcquireOrRenew();
        await clock.advance(20_000);
        store.clearCalls();
      },
      wantLeader: false,
      wantCalls: ['get'],
    },
    {
      name: 'the holder kept renewing (record changed): expiry restarts from the change',
      arrange: async ({ store, elector, clock }) => {
        store.put(LEASE, record());
        await elector.tryAcquireOrRenew();
        await clock.advance(10_000);
        store.put(LEASE, record({ renewTime: clock.now() }));
        await elector.tryAcquireOrRenew();
        await clock.advance(10_000);
        store.clearCalls();
      },
      wantLeader: false,
      wantCalls: ['get'],
    },
    {
      name: 'a wall-clock jump of an hour does not expire a lease (monotonic judgement)',
      arrange: async ({ store, elector, clock }) => {
        store.put(LEASE, record());
        await elector.tryAcquireOrRenew();
        clock.jumpWall(3_600_000);
        store.clearCalls();
      },
      wantLeader: false,
      wantCalls: ['get'],
    },
    {
      name: 'a stale renewTime in a record seen for the first time is not trusted as expired',
      arrange: ({ store }) => void store.put(LEASE, record({ renewTime: new Date('2020-01-01T00:00:00Z') })),
      wantLeader: false,
      wantCalls: ['get'],
    },
    {
      name: 'released lease (holder empty): take it at once, token + 1',
      arrange: ({ store }) => void store.put(LEASE, record({ holderIdentity: '', leaseDurationSeconds: 1 })),
      wantLeader: true,
      wantCalls: ['get', 'update'],
      wantToken: 5,
    },
    {
      name: 'our identity on a record we did not write (a duplicate identity, or an earlier run): wait as for another',
      arrange: ({ store }) => void store.put(LEASE, record({ holderIdentity: ME })),
      wantLeader: false,
      wantCalls: ['get'],
      wantHolder: ME,
    },
    {
      name: 'our identity on a record we did not write, unchanged for a lease duration: a new term, token + 1',
      arrange: async ({ store, elector, clock }) => {
        store.put(LEASE, record({ holderIdentity: ME }));
        await elector.tryAcquireOrRenew();
        await clock.advance(15_000);
        store.clearCalls();
      },
      wantLeader: true,
      wantCalls: ['get', 'update'],
      wantToken: 5,
    },
    {
      name: 'sitting leader renews from its cache: one update, token unchanged',
      arrange: lead,
      wantLeader: true,
      wantCalls: ['update'],
      wantToken: 1,
    },
    {
      name: 'leader whose cached version is stale (a metadata-only rewrite) falls back to get + update, keeps its token',
      arrange: async (s) => {
        await lead(s);
        s.store.put(LEASE, s.store.peek(LEASE)!); // a metadata-only rewrite (someone labels the Lease)
        s.store.clearCalls();
      },
      wantLeader: true,
      wantCalls: ['update', 'get', 'update'],
      wantToken: 1,
    },
    {
      name: 'leader finds the lease taken by another: steps down, writes nothing',
      arrange: async (s) => {
        const { store } = s;
        await lead(s);
        store.put(LEASE, record({ holderIdentity: 'thief', leaseTransitions: 2 }));
        store.clearCalls();
      },
      wantLeader: false,
      wantCalls: ['update', 'get'],
      wantHolder: 'thief',
    },
    {
      name: 'lease deleted under the leader: recreated with the next token, never reusing 1',
      arrange: async ({ elector, store }) => {
        store.put(LEASE, record({ holderIdentity: '', leaseTransitions: 7 }));
        await elector.tryAcquireOrRenew();
        store.delete(LEASE);
        store.clearCalls();
      },
      wantLeader: true,
      wantCalls: ['update', 'get', 'create'],
      wantToken: 9,
    },
    {
      name: 'Lease deleted while another held it: a standby does not recreate it before a lease duration',
      arrange: async ({ store, elector }) => {
        store.put(LEASE, record());
        await elector.tryAcquireOrRenew();
        store.delete(LEASE);
        store.clearCalls();
      },
      wantLeader: false,
      wantCalls: ['get'],
    },
    {
      name: 'Lease deleted while another held it and not recreated for a lease duration: recreate with token + 1',
      arrange: async ({ store, elector, clock }) => {
        store.put(LEASE, record());
        await elector.tryAcquireOrRenew();
        store.delete(LEASE);
        await keepLooking({ elector, clock }, 15_000);
        store.clearCalls();
      },
      wantLeader: true,
      wantCalls: ['get', 'create'],
      wantToken: 5,
    },
    {
      name: 'backend error on get: not leader, nothing written',
      arrange: ({ store }) => store.failNext('get', new BackendUnavailableError('down')),
      wantLeader: false,
      wantCalls: ['get'],
    },
    {
      name: 'lost the create race (conflict): not leader',
      arrange: async ({ store, elector, clock }) => {
        await keepLooking({ elector, clock }, 15_000);
        store.clearCalls();
        const realCreate = store.create.bind(store);
        store.create = async (name, rec) => {
          store.put(name, record({ holderIdentity: 'faster' }));
          return realCreate(name, rec);
        };
      },
      wantLeader: false,
      wantCalls: ['get', 'create', 'get'],
      wantHolder: 'faster',
    },
    {
      name: "lost the create race, then the Lease was deleted: recreated with the winner's token + 1",
      arrange: async ({ store, elector, clock }) => {
        const realCreate = store.create.bind(store);
        store.create = async (name, rec) => {
          store.create = realCreate;
          store.put(name, record({ holderIdentity: 'faster', leaseTransitions: 1 }));
          return realCreate(name, rec);
        };
        await keepLooking({ elector, clock }, 15_000);
        await elector.tryAcquireOrRenew();
        store.delete(LEASE);
        assert.equal(await elector.tryAcquireOrRenew(), false, 'the winner may still act: wait');
        await keepLooking({ elector, clock }, 15_000);
        store.clearCalls();
      },
      wantLeader: true,
      wantCalls: ['get', 'create'],
      wantToken: 2,
    },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const s = setup();
      await c.arrange(s);
      const got = await s.elector.tryAcquireOrRenew();
      assert.equal(got, c.wantLeader);
      assert.equal(s.elector.isLeader(), c.wantLeader);
      assert.deepEqual(s.store.calls, c.wantCalls);
      const stored = s.store.peek(LEASE);
      if (c.wantToken !== undefined) {
        assert.equal(stored?.leaseTransitions, c.wantToken);
        assert.equal(s.elector.snapshot().fencingToken, c.wantToken);
      }
      if (c.wantHolder !== undefined) assert.equal(stored?.holderIdentity, c.wantHolder);
      if (c.wantLeader) {
        assert.equal(stored?.holderIdentity, ME);
        assert.equal(stored?.leaseDurationSeconds, 15);
      }
    });
  }
});

describe('the campaign loop', () => {
  it('a lease never seen: the log says when it will be created and why, and it is created then', async () => {
    const clock = new FakeClock();
    const store = new MemoryLeaseStore();
    const infos: { msg: string; fields: Record<string, unknown> }[] = [];
    const elector = new CandidateLoop({
      ...resolveElectionConfig({ ...timings, lease: LEASE, identity: ME }),
      store,
      clock,
      random: () => 0,
      log: { debug() {}, info: (msg, fields = {}) => void infos.push({ msg, fields }), warn() {}, error() {} },
    });
    elector.start();
    await clock.advance(0);
    const absent = infos.find((l) => l.msg.startsWith('lease absent'));
    assert.ok(absent, 'one line says the lease is absent');
    assert.equal(absent.fields.waitMs, 15_000);
    assert.equal(absent.fields.createsAt, new Date(clock.now().getTime() + 15_000).toISOString());
    assert.match(String(absent.fields.why), /deleted/);
    await clock.advance(14_000);
    assert.equal(elector.isLeader(), false);
    await clock.advance(2_000 * 2.2);
    assert.equal(elector.isLeader(), true, 'created at its first attempt after createsAt');
    await elector.stop();
  });

  it('a store that reopened a replaced file starts the absence wait over: a term may have lived and died with the old file', async () => {
    const s = setup({ random: () => 0 });
    s.elector.start();
    await s.clock.advance(13_000); // absent since 0: it would create at its first read after 15 s
    s.store.failNext('get', new StoreReopenedError('the database file was replaced or deleted: reopened it'));
    await s.clock.advance(4_000);
    assert.equal(s.elector.isLeader(), false, 'not created 15 s after the first absence: the wait restarted at the reopen');
    assert.equal(s.store.peek(LEASE), undefined);
    await s.clock.advance(15_000);
    assert.equal(s.elector.isLeader(), true, 'created a lease duration after the absence seen on the new file');
    await s.elector.stop();
  });

  it('a standby retries every retryPeriod × (1 + rand × 1.2)', async () => {
    const s = setup({ random: () => 1 });
    s.store.put(LEASE, record());
    s.elector.start();
    await s.clock.advance(0);
    assert.deepEqual(s.store.calls, ['get']);
    await s.clock.advance(4_399);
    assert.equal(s.store.calls.length, 1, 'no retry before 2.2 × retryPeriod');
    await s.clock.advance(1);
    assert.equal(s.store.calls.length, 2);
    await s.elector.stop();
  });

  it('a polling standby judges the expiry from the record, not the version: metadata churn between its reads changes nothing', async () => {
    const s = setup({ random: () => 0 });
    s.store.put(LEASE, record());
    s.elector.start();
    await s.clock.advance(0);
    // Between each of the standby's reads, a neighbour rewrites the object with its record unchanged.
    let churning = true;
    const again = () => {
      if (!churning) return;
      s.store.put(LEASE, s.store.peek(LEASE)!);
      s.clock.setTimer(again, 300);
    };
    s.clock.setTimer(again, 300);
    await s.clock.advance(14_999);
    assert.equal(s.elector.isLeader(), false, 'the holder may still be renewing');
    await s.clock.advance(2_001 + 2_000 * 1.2);
    assert.equal(s.elector.isLeader(), true, 'taken at its first read after the 15 s expiry');
    assert.equal(s.store.peek(LEASE)?.leaseTransitions, 5);
    churning = false;
    await s.elector.stop();
  });

  it('a standby that watches the store acts on a release at its turn, not at its next retry', async () => {
    const s = setup({ random: () => 1 });
    s.store.put(LEASE, record());
    s.elector.start();
    await s.clock.advance(1_000);
    assert.equal(s.elector.isLeader(), false);
    s.store.put(LEASE, record({ holderIdentity: '', leaseDurationSeconds: 1 })); // the holder releases
    await s.clock.advance(0);
    // The event carries no record (as PostgreSQL's and SQLite's): its read finds the release,
    // and it still waits for its turn in the release window (the last, with this draw).
    assert.equal(s.elector.isLeader(), false, 'not before its turn');
    await s.clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS);
    assert.equal(s.elector.isLeader(), true, 'acquired at its turn, without waiting out the 4.4 s retry');
    assert.equal(s.store.peek(LEASE)?.leaseTransitions, 5);
    await s.elector.stop();
  });

  it('a leader renews every retryPeriod, keeping its token', async () => {
    const s = setup();
    s.store.put(LEASE, released());
    s.elector.start();
    await s.clock.advance(0);
    s.store.clearCalls();
    await s.clock.advance(6_000);
    assert.deepEqual(s.store.calls, ['update', 'update', 'update']);
    assert.equal(s.store.peek(LEASE)?.leaseTransitions, 1);
    assert.equal(s.store.peek(LEASE)?.renewTime?.getTime(), s.clock.now().getTime());
    await s.elector.stop();
  });

  it('steps down at renewDeadline when renewals fail, before the lease could expire for others', async () => {
    const s = setup();
    s.store.put(LEASE, released());
    s.elector.start();
    await s.clock.advance(0);
    const acquiredAt = s.clock.monotonic();
    for (let i = 0; i < 20; i++) s.store.failNext('*', new BackendUnavailableError('api down'));
    await s.clock.advance(9_999);
    assert.equal(s.elector.isLeader(), true, 'still inside renewDeadline');
    await s.clock.advance(1);
    assert.equal(s.elector.isLeader(), false);
    assert.equal(s.clock.monotonic() - acquiredAt, 10_000);
    assert.ok(s.clock.monotonic() - acquiredAt < timings.leaseDurationMs);
    assert.match(s.events.at(-1) ?? '', /^stopped:no successful renewal within renewDeadline/);
    await s.elector.stop();
  });

  it('steps down at renewDeadline even when a renewal request hangs forever', async () => {
    const s = setup();
    s.store.put(LEASE, released());
    s.elector.start();
    await s.clock.advance(0);
    s.store.hangNext('update');
    s.store.hangNext('get');
    s.store.hangNext('get');
    s.store.hangNext('get');
    await s.clock.advance(10_000);
    assert.equal(s.elector.isLeader(), false);
    assert.deepEqual(s.events.filter((e) => e.startsWith('stopped')).length, 1);
    // stop() waits for the hung requests, which the per-request timeout (renewDeadline / 2) ends:
    // the attempt's read, then the lost term's release, which reads first (its view is old).
    const stopped = s.elector.stop();
    await s.clock.advance(10_000);
    await stopped;
  });

  it('a record-less watch hint makes a standby waiting on its watch read at once: a release is taken then, not at expiry', async () => {
    const s = setup();
    s.store.put(LEASE, { holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: T0, renewTime: T0, leaseTransitions: 4 });
    s.elector.start();
    s.store.setWatchHealth(true);
    await s.clock.advance(0);
    await s.clock.advance(1_000); // read once; now it waits on the watch until the expiry
    s.store.clearCalls();
    s.store.put(LEASE, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: T0, renewTime: T0, leaseTransitions: 4 }); // a hint: {}
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true, 'took the released lease on the hint');
    assert.equal(s.elector.snapshot().fencingToken, 5);
    assert.deepEqual(s.store.calls.slice(0, 2), ['get', 'update'], 'one read, then the new term');
    await s.elector.stop();
  });

  it("a new term never passes the store's largest token: refused, not sent (a Lease's int32, 2^53 − 1 elsewhere)", async () => {
    const s = setup();
    Object.defineProperty(s.store, 'maxToken', { value: 2_147_483_647 });
    s.store.put(LEASE, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: T0, renewTime: T0, leaseTransitions: 2_147_483_647 });
    s.store.clearCalls();
    assert.equal(await s.elector.tryAcquireOrRenew(), false);
    assert.deepEqual(s.store.calls, ['get'], 'no write was sent');
    assert.equal(s.store.peek(LEASE)?.leaseTransitions, 2_147_483_647);
    const t = setup();
    Object.defineProperty(t.store, 'maxToken', { value: 2_147_483_647 });
    t.store.put(LEASE, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: T0, renewTime: T0, leaseTransitions: 2_147_483_646 });
    assert.equal(await t.elector.tryAcquireOrRenew(), true, 'up to the maximum itself');
    assert.equal(t.elector.snapshot().fencingToken, 2_147_483_647);
  });

  it('a follower hears of a new term by the same holder (a new token), not only of a new holder', async () => {
    const s = setup();
    s.store.put(LEASE, { holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: T0, renewTime: T0, leaseTransitions: 4 });
    await s.elector.tryAcquireOrRenew();
    s.store.put(LEASE, { holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: T0, renewTime: new Date(T0.getTime() + 2_000), leaseTransitions: 4 });
    await s.elector.tryAcquireOrRenew(); // a renewal: same term, nothing new
    s.store.put(LEASE, { holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: T0, renewTime: new Date(T0.getTime() + 4_000), leaseTransitions: 5 });
    await s.elector.tryAcquireOrRenew();
    assert.deepEqual(s.events, ['holder:other', 'holder:other']);
    assert.equal(s.elector.snapshot().observedToken, 5);
  });

  it('a request still hanging at its bound is cancelled through its signal, not abandoned', async () => {
    const s = setup();
    s.store.put(LEASE, released());
    s.elector.start();
    await s.clock.advance(0);
    s.store.hangNext('update');
    await s.clock.advance(2_000 * 2.2); // the first renewal is sent and hangs
    assert.equal(s.store.hanging, 1);
    await s.clock.advance(5_000); // requestTimeout = renewDeadline / 2
    assert.equal(s.store.hanging, 0, 'the store saw the abort and let the request go');
    await s.elector.stop();
  });

  it('a renewal that lands after the step-down does not revive the old term', async () => {
    const s = setup({ requestTimeoutMs: 60_000 });
    s.store.put(LEASE, released());
    s.elector.start();
    await s.clock.advance(0);
    // The first renewal (at t=2s) is answered only when the test says so.
    const realUpdate = s.store.update.bind(s.store);
    let answer: () => void = () => assert.fail('renewal was not sent');
    s.store.update = (n, r, v) => {
      s.store.update = realUpdate;
      return new Promise((resolve, reject) => (answer = () => void realUpdate(n, r, v).then(resolve, reject)));
    };
    await s.clock.advance(10_000);
    assert.equal(s.elector.isLeader(), false, 'stepped down at the deadline');
    answer(); // the old term's renewal lands now
    await s.clock.advance(2_000);
    // The late success never silently continues term 1: the candidate is re-elected (it still
    // holds the record) only as a new term, announced, with a new token.
    assert.equal(s.elector.isLeader(), true);
    const transitions = s.events.filter((e) => e.startsWith('started') || e.startsWith('stopped'));
    assert.equal(transitions.length, 3, transitions.join(' | '));
    assert.equal(transitions[0], 'started:1');
    assert.match(transitions[1]!, /^stopped:no successful renewal within renewDeadline/);
    assert.equal(transitions[2], 'started:2', 're-election is a new term with a new token');
    await s.elector.stop();
  });

  it('stop(): announces the step-down first, then releases as client-go does', async () => {
    const order: string[] = [];
    const s = setup({
      listener: { onStoppedLeading: (r) => order.push(`stopped:${r}`) },
    });
    s.store.put(LEASE, released());
    s.elector.start();
    await s.clock.advance(0);
    const realUpdate = s.store.update.bind(s.store);
    s.store.update = (n, r, v) => {
      order.push(`update:holder=${r.holderIdentity}`);
      return realUpdate(n, r, v);
    };
    await s.elector.stop();
    assert.deepEqual(order, ['stopped:shutting down', 'update:holder=']);
    const rec = s.store.peek(LEASE)!;
    assert.equal(rec.holderIdentity, '');
    assert.equal(rec.leaseDurationSeconds, 1);
    assert.equal(rec.leaseTransitions, 1, 'release keeps the token; the next acquirer bumps it');
    assert.equal(rec.renewTime?.getTime(), s.clock.now().getTime());
    assert.equal(s.clock.pendingTimers(), 0, 'no timer left behind');
  });

  it('release retries on conflict while the record is still ours, and never overwrites another holder', async () => {
    const s = setup();
    await lead(s);
    s.store.put(LEASE, s.store.peek(LEASE)!); // version moves (a label added), still our record
    await s.elector.stop();
    assert.equal(s.store.peek(LEASE)?.holderIdentity, '');

    const t = setup();
    await lead(t);
    t.store.put(LEASE, record({ holderIdentity: 'newer' }));
    await t.elector.stop();
    assert.equal(t.store.peek(LEASE)?.holderIdentity, 'newer');
  });

  it('releaseOnCancel: false leaves the record as it was', async () => {
    const clock = new FakeClock();
    const store = new MemoryLeaseStore();
    const elector = new CandidateLoop({
      ...resolveElectionConfig({ ...timings, lease: LEASE, identity: ME }),
      store,
      clock,
      random: () => 0,
      releaseOnCancel: false,
    });
    store.put(LEASE, released());
    elector.start();
    await clock.advance(0);
    await elector.stop();
    assert.equal(store.peek(LEASE)?.holderIdentity, ME);
    assert.equal(elector.isLeader(), false);
  });

  it('releaseGate: asked after the step-down, before the release; no (or a throw) leaves the record as it was', async () => {
    const cases: [string, () => boolean | Promise<boolean>, string][] = [
      ['yes', () => true, ''],
      ['yes, later', () => Promise.resolve(true), ''],
      ['no', () => false, ME],
      [
        'throws',
        () => {
          throw new Error('boom');
        },
        ME,
      ],
    ];
    for (const [name, answer, holder] of cases) {
      const clock = new FakeClock();
      const store = new MemoryLeaseStore();
      const seen: string[] = [];
      const elector = new CandidateLoop({
        ...resolveElectionConfig({ ...timings, lease: LEASE, identity: ME }),
        store,
        clock,
        random: () => 0,
        listener: { onStoppedLeading: () => seen.push('stopped') },
        releaseGate: () => {
          seen.push(`gate:${store.peek(LEASE)?.holderIdentity}`);
          return answer();
        },
      });
      store.put(LEASE, released());
      elector.start();
      await clock.advance(0);
      await elector.stop();
      assert.deepEqual(seen, ['stopped', `gate:${ME}`], name);
      assert.equal(store.peek(LEASE)?.holderIdentity, holder, name);
    }
  });

  it('tokens strictly increase over handoffs among three candidates', async () => {
    const clock = new FakeClock();
    const store = new MemoryLeaseStore();
    const make = (id: string) => new CandidateLoop({ ...resolveElectionConfig({ ...timings, lease: LEASE, identity: id }), store, clock, random: () => 0 });
    const electors = ['a', 'b', 'c'].map(make);
    store.put(LEASE, released());
    const tokens: number[] = [];
    for (let round = 0; round < 12; round++) {
      const e = electors[round % 3]!;
      // The last leader crashes (is never called again this round); the others observe the
      // record, which then stays unchanged for a lease duration.
      const crashed = electors[(round + 2) % 3]!;
      for (const x of electors) if (x !== crashed) await x.tryAcquireOrRenew();
      await clock.advance(15_000);
      assert.equal(await e.tryAcquireOrRenew(), true, `round ${round}`);
      tokens.push(e.snapshot().fencingToken!);
      for (const x of electors) if (x !== e) assert.equal(await x.tryAcquireOrRenew(), false);
    }
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `tokens ${tokens.join(',')}`);
  });
});

describe('standbys with a connected watch (Kubernetes)', () => {
  function watched() {
    const s = setup({ random: () => 0 });
    s.store.eventsCarryRecords = true;
    s.store.put(LEASE, record());
    s.elector.start();
    s.store.setWatchHealth(true);
    return s;
  }

  it('send no requests while the holder renews: they observe its renewals from events', async () => {
    const s = watched();
    await s.clock.advance(0);
    assert.deepEqual(s.store.calls, ['get']);
    s.store.clearCalls();
    for (let i = 0; i < 59; i++) {
      await s.clock.advance(2_000);
      s.store.put(LEASE, record({ renewTime: s.clock.now() })); // the holder renews
    }
    assert.deepEqual(s.store.calls, [], '118 s of renewals cost the standby nothing');
    assert.equal(liveness(s.elector.snapshot(), timings, s.clock.monotonic()).ok, true, 'and it is live, though it made no attempt');
    await s.clock.advance(2_000);
    assert.deepEqual(s.store.calls, ['get'], 'then its safety re-read, at 120 s (60 × retryPeriod)');
    assert.equal(s.elector.isLeader(), false);
    await s.elector.stop();
  });

  it('take over when the renewals stop, at the observed change + leaseDuration', async () => {
    const s = watched();
    await s.clock.advance(0);
    await s.clock.advance(5_000);
    s.store.put(LEASE, record({ renewTime: s.clock.now() })); // last renewal at t=5s, then a crash
    s.store.clearCalls();
    await s.clock.advance(14_999);
    assert.deepEqual(s.store.calls, [], 'nothing before the lease could expire');
    await s.clock.advance(1);
    assert.deepEqual(s.store.calls, ['get', 'update'], 'a read at its turn, then the new term');
    assert.equal(s.elector.isLeader(), true);
    assert.equal(s.store.peek(LEASE)?.leaseTransitions, 5);
    await s.elector.stop();
  });

  it("a neighbour touching only the Lease's metadata (a new version, the same record) does not restart the expiry", async () => {
    const s = watched();
    await s.clock.advance(0);
    await s.clock.advance(5_000);
    const last = record({ renewTime: s.clock.now() });
    s.store.put(LEASE, last); // last renewal at t=5s, then a crash
    s.store.clearCalls();
    // A labelling controller rewrites the object every 400 ms: each time a new version, the same record.
    for (let t = 0; t < 14_800; t += 400) {
      await s.clock.advance(400);
      s.store.put(LEASE, last);
    }
    assert.equal(s.elector.isLeader(), false, 'not before the expiry observed at the last real change');
    await s.clock.advance(200);
    assert.equal(s.elector.isLeader(), true, 'taken at t=20s, as without the neighbour');
    assert.equal(s.store.peek(LEASE)?.leaseTransitions, 5);
    await s.elector.stop();
  });

  it('take a released lease at its turn (0 here): one read, then the write', async () => {
    const s = watched();
    await s.clock.advance(0);
    s.store.clearCalls();
    s.store.put(LEASE, record({ holderIdentity: '', leaseDurationSeconds: 1 }));
    await s.clock.advance(0);
    assert.deepEqual(s.store.calls, ['get', 'update']);
    assert.equal(s.elector.isLeader(), true);
    await s.elector.stop();
  });

  it('another took the lease before our turn, its event not yet here: the read sees it, and no write is sent', async () => {
    const s = watched();
    await s.clock.advance(0);
    const realGet = s.store.get.bind(s.store);
    s.store.get = async (n, o) => {
      s.store.get = realGet;
      s.store.eventsCarryRecords = false; // the winner's event is still on its way (a hint only)
      s.store.put(LEASE, record({ holderIdentity: 'quicker', leaseTransitions: 5 }));
      s.store.eventsCarryRecords = true;
      return realGet(n, o);
    };
    s.store.put(LEASE, record({ holderIdentity: '', leaseDurationSeconds: 1 }));
    s.store.clearCalls();
    await s.clock.advance(0);
    assert.deepEqual(s.store.calls.slice(0, 1), ['get']);
    assert.ok(!s.store.calls.includes('update'), 'no conflicting write');
    assert.equal(s.elector.isLeader(), false);
    assert.equal(s.store.peek(LEASE)?.holderIdentity, 'quicker');
    await s.elector.stop();
  });

  it('a release reported while a read is in flight is not slept through', async () => {
    const s = watched();
    await s.clock.advance(0);
    // The next read answers with the record as it was, after the release event has arrived.
    const realGet = s.store.get.bind(s.store);
    s.store.get = async (name) => {
      s.store.get = realGet;
      const before = await realGet(name);
      s.store.put(LEASE, record({ holderIdentity: '', leaseDurationSeconds: 1 })); // released meanwhile
      return before;
    };
    s.store.setWatchHealth(false); // forces a read now
    await s.clock.advance(0);
    assert.equal(s.elector.isLeader(), true, 'acquired at once, not after the 15 s the stale read suggested');
    await s.elector.stop();
  });

  it('still re-read the lease every safety period, and poll again once the watch breaks', async () => {
    const s = watched();
    s.store.put(LEASE, record({ leaseDurationSeconds: 600 })); // a long lease: no expiry soon
    await s.clock.advance(0);
    s.store.clearCalls();
    await s.clock.advance(120_000);
    assert.deepEqual(s.store.calls, ['get'], 'one safety re-read after 120 s');
    s.store.clearCalls();
    s.store.setWatchHealth(false);
    await s.clock.advance(0);
    assert.deepEqual(s.store.calls, ['get'], 'reads at once when the watch breaks');
    await s.clock.advance(2_000 * 3);
    assert.deepEqual(s.store.calls, ['get', 'get', 'get', 'get'], 'then polls every retryPeriod');
    await s.elector.stop();
  });

  it('learn the token of a deleted Lease from the event', async () => {
    const s = watched();
    await s.clock.advance(0);
    s.store.delete(LEASE);
    await s.clock.advance(0);
    await s.clock.advance(16_000); // the deleted holder may have been acting: wait its lease out
    assert.equal(s.elector.isLeader(), true);
    assert.equal(s.store.peek(LEASE)?.leaseTransitions, 5, "continues from the deleted record's token 4");
    await s.elector.stop();
  });
});

describe('safety holes found by the randomized simulation (each failed before its fix)', () => {
  function pair(opts: { identityB?: string; requestTimeoutMs?: number } = {}) {
    const clock = new FakeClock();
    const store = new MemoryLeaseStore();
    const events: string[] = [];
    const make = (id: string, name: string) =>
      new CandidateLoop({
        ...resolveElectionConfig({ ...timings, lease: LEASE, identity: id }),
        store,
        clock,
        random: () => 0,
        requestTimeoutMs: opts.requestTimeoutMs,
        listener: {
          onStartedLeading: (t) => events.push(`${name} started:${t.token}`),
          onStoppedLeading: (r) => events.push(`${name} stopped:${r}`),
        },
      });
    return { clock, store, events, a: make('a', 'a'), b: make(opts.identityB ?? 'b', 'b') };
  }

  /** The next store.get answers only when the returned function is called, with the store as it is then. */
  function holdNextGet(store: MemoryLeaseStore): () => void {
    const realGet = store.get.bind(store);
    let answer: () => void = () => assert.fail('the held read was not sent');
    store.get = (name) => {
      store.get = realGet;
      return new Promise((resolve, reject) => (answer = () => void realGet(name).then(resolve, reject)));
    };
    return () => answer();
  }

  it('a leader that stepped down while its read was in flight does not recreate a deleted lease at once', async () => {
    const { clock, store, a, b } = pair({ requestTimeoutMs: 60_000 });
    store.put(LEASE, released());
    assert.equal(await a.tryAcquireOrRenew(), true); // a leads with token 1 from t=0
    await b.tryAcquireOrRenew(); // b observes a's record at t=0
    await clock.advance(8_000);
    store.failNext('update', new BackendUnavailableError('slow API'));
    const answerA = holdNextGet(store);
    const aAttempt = a.tryAcquireOrRenew(); // fast path fails; its read hangs
    await clock.advance(2_000); // t=10s: a's renewDeadline passes while the read is in flight
    assert.equal(a.isLeader(), false);
    await clock.advance(5_000); // t=15s: a's record expired as b saw it
    assert.equal(await b.tryAcquireOrRenew(), true);
    assert.equal(b.snapshot().fencingToken, 2);
    store.delete(LEASE);
    answerA(); // a's read now says "absent"
    assert.equal(await aAttempt, false, 'a is no longer the sitting leader: it must wait');
    assert.equal(store.peek(LEASE), undefined, 'nothing created while b still leads with token 2');
    assert.equal(b.isLeader(), true);
  });

  it('a leader paused past its deadline does not recreate a deleted lease when a read answer beats its overdue timer', async () => {
    const base = new FakeClock();
    let paused = false;
    const deferred: (() => void)[] = [];
    const clock = {
      now: () => base.now(),
      monotonic: () => base.monotonic(),
      setTimer: (fn: () => void, ms: number) => base.setTimer(() => (paused ? deferred.push(fn) : fn()), ms),
    };
    const store = new MemoryLeaseStore();
    store.put(LEASE, released());
    const a = new CandidateLoop({ ...resolveElectionConfig({ ...timings, lease: LEASE, identity: 'a' }), store, clock, requestTimeoutMs: 60_000 });
    assert.equal(await a.tryAcquireOrRenew(), true);
    store.failNext('update', new BackendUnavailableError('slow API'));
    const answer = holdNextGet(store);
    const attempt = a.tryAcquireOrRenew();
    paused = true; // the process freezes: its deadline timer cannot run
    await base.advance(12_000);
    store.delete(LEASE);
    answer(); // the read's answer is handled first, before the overdue timer
    assert.equal(await attempt, false);
    assert.equal(store.peek(LEASE), undefined, 'not the sitting leader any more: it must wait like anyone else');
    assert.equal(a.isLeader(), false);
    paused = false;
    for (const fn of deferred) fn();
  });

  for (const lastView of ['its own ended term', 'a released record'] as const) {
    it(`a candidate whose last view was ${lastView} waits after a deletion instead of reusing the leader's token`, async () => {
      const { clock, store, a, b } = pair();
      store.put(LEASE, released());
      assert.equal(await a.tryAcquireOrRenew(), true); // token 1
      if (lastView === 'a released record') {
        await a.stop(); // its term given up and released; a still looks by hand below
        assert.equal(store.peek(LEASE)?.holderIdentity, '');
        assert.equal(await b.tryAcquireOrRenew(), true); // takes the released lease at once
      } else {
        await b.tryAcquireOrRenew(); // b sees a's record
        await clock.advance(15_000); // a's term ends at its deadline (it never renews); b's view expires
        assert.equal(a.isLeader(), false);
        assert.equal(await b.tryAcquireOrRenew(), true);
      }
      assert.equal(b.snapshot().fencingToken, 2);
      store.delete(LEASE); // a never saw token 2
      for (let i = 0; i < 3; i++) {
        assert.equal(await a.tryAcquireOrRenew(), false, `attempt ${i}: a must not create token 2 while b leads`);
        await clock.advance(2_000);
      }
      assert.equal(store.peek(LEASE), undefined);
    });
  }

  it('a takeover whose answer was lost is released at stop, not left to expire for a term nobody leads', async () => {
    const { store, elector, events } = setup();
    store.put(LEASE, released());
    // The takeover lands, and its answer is lost (a timeout after the store applied it).
    const realUpdate = store.update.bind(store);
    store.update = async (n, r, v, o) => {
      await realUpdate(n, r, v, o);
      store.update = realUpdate;
      throw new BackendUnavailableError('memory update: no answer within the request timeout');
    };
    assert.equal(await elector.tryAcquireOrRenew(), false, 'no answer: not leader');
    assert.equal(store.peek(LEASE)?.holderIdentity, ME, 'the takeover landed all the same');
    await elector.stop();
    assert.equal(store.peek(LEASE)?.holderIdentity, '', 'released: the others need not wait a lease duration');
    assert.equal(store.peek(LEASE)?.leaseTransitions, 1, 'the token stays');
    assert.equal(events.filter((e) => e.startsWith('started')).length, 0, 'nobody was told this candidate leads');
  });

  it('a takeover that lost its race (conflict) leaves nothing to release at stop', async () => {
    const { store, elector } = setup();
    store.put(LEASE, released());
    const realUpdate = store.update.bind(store);
    store.update = async (n, r, v, o) => {
      store.update = realUpdate;
      store.put(LEASE, record({ holderIdentity: 'other', leaseTransitions: 1 }));
      return realUpdate(n, r, v, o);
    };
    assert.equal(await elector.tryAcquireOrRenew(), false);
    store.clearCalls();
    await elector.stop();
    assert.deepEqual(store.calls, [], 'no read, no write');
    assert.equal(store.peek(LEASE)?.holderIdentity, 'other');
  });

  it('a term counts from the start of the request that succeeded, not of the attempt', async () => {
    const { clock, store, a } = pair({ requestTimeoutMs: 60_000 });
    store.put(LEASE, released());
    const realGet = store.get.bind(store);
    store.get = (name) => {
      store.get = realGet;
      return new Promise((resolve) => clock.setTimer(() => void realGet(name).then(resolve), 11_000)); // a read slower than renewDeadline
    };
    const attempt = a.tryAcquireOrRenew();
    await clock.advance(11_000);
    assert.equal(await attempt, true);
    const validUntil = a.snapshot().validUntil!;
    assert.equal(validUntil.getTime(), clock.now().getTime() + timings.renewDeadlineMs, 'renewDeadline from the update that won');
  });

  it('a write answered after renewDeadline is not announced as a term', async () => {
    const { clock, store, a, events } = pair({ requestTimeoutMs: 60_000 });
    store.put(LEASE, released());
    const realUpdate = store.update.bind(store);
    store.update = (n, r, v) => {
      store.update = realUpdate;
      return new Promise((resolve, reject) => clock.setTimer(() => void realUpdate(n, r, v).then(resolve, reject), 10_001));
    };
    const attempt = a.tryAcquireOrRenew();
    await clock.advance(10_001);
    assert.equal(await attempt, false);
    assert.equal(a.isLeader(), false);
    assert.deepEqual(events, []);
  });

  it('the loop adds nothing to a long-lived signal per iteration (AbortSignal.any leaked ~2 MB a day)', async () => {
    const s = setup();
    s.store.put(LEASE, released());
    const realAny = AbortSignal.any.bind(AbortSignal);
    let combined = 0;
    AbortSignal.any = (signals) => {
      combined++;
      return realAny(signals);
    };
    try {
      s.elector.start();
      await s.clock.advance(2_000 * 200);
      assert.equal(s.store.calls.length > 150, true, 'the loop ran');
      assert.equal(combined, 0);
    } finally {
      AbortSignal.any = realAny;
      await s.elector.stop();
    }
  });

  it('two processes with one identity never both lead; the second logs one error line and waits', async () => {
    const clock = new FakeClock();
    const store = new MemoryLeaseStore();
    const errors: string[] = [];
    const make = (log = false) =>
      new CandidateLoop({
        ...resolveElectionConfig({ ...timings, lease: LEASE, identity: 'same' }),
        store,
        clock,
        random: () => 0.5,
        log: {
          debug() {},
          info() {},
          warn() {},
          error: (m) => void (log && errors.push(m)),
        },
      });
    const parent = make();
    const child = make(true); // e.g. a leasehold started inside `leasehold run`'s command
    store.put(LEASE, released());
    parent.start();
    await clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS); // its turn after the release it read
    assert.equal(parent.isLeader(), true);
    child.start();
    for (let i = 0; i < 60; i++) {
      await clock.advance(1_000);
      assert.ok(!(parent.isLeader() && child.isLeader()), `both lead at t=${i + 1}s`);
    }
    assert.equal(parent.isLeader(), true, 'the parent keeps renewing its own record');
    assert.equal(child.isLeader(), false);
    assert.equal(store.peek(LEASE)?.leaseTransitions, 1);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0]!, /did not write/);
    await child.stop();
    await parent.stop();
  });
});
