/**
 * A candidate whose status files cannot be written neither takes nor keeps the lease (the fake
 * clock; the write fails for real: status.json is a directory). The same with real processes
 * and a full or read-only volume: test/sqlite/status-unwritable.test.ts.
 */
import { it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import type { Logger } from '../log.js';
import { Sidecar } from './sidecar.js';
import { DEFAULT_CONTENTION_WINDOW_MS, RELEASE_WINDOW_FACTOR } from '../election/elector-config.js';
import { resolveElectionConfig } from '../config/election-options.js';
import { StatusPublisher } from './status-publisher.js';
import { toLeaderStatus } from '../status/to-leader-status.js';
import type { CandidateSnapshot } from '../election/candidate-loop.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const root = mkdtempSync(join(tmpdir(), 'leasehold-unwritable-'));
after(() => rmSync(root, { recursive: true, force: true }));

async function sidecar(name: string, clock: FakeClock, over: { drainTimeoutMs?: number } = {}, holder = '') {
  const dir = join(root, name);
  const store = new MemoryLeaseStore();
  const now = holder ? clock.now() : null;
  store.put('l', { holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: holder ? 1 : 0 });
  const lines: string[] = [];
  const log: Logger = {
    debug() {},
    info: (msg) => lines.push(msg),
    warn: (msg, f) => lines.push(`${msg} ${JSON.stringify(f ?? {})}`),
    error: (msg, f) => lines.push(`${msg} ${JSON.stringify(f ?? {})}`),
  };
  const s = new Sidecar({
    ...resolveElectionConfig({ ...T, lease: 'l', identity: 'me' }),
    store,
    log,
    clock,
    statusDir: dir,
    listen: { host: '127.0.0.1', port: 0 },
    ...over,
  });
  const address = (await s.start())!;
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${address.port}${path}`);
    return { code: res.status, body: await res.text() };
  };
  const metric = async (series: string) => {
    const m = new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec((await get('/metrics')).body);
    return m ? Number(m[1]) : null;
  };
  return { s, dir, store, lines, get, metric, holder: () => store.peek('l')?.holderIdentity };
}

/** Advances the fake clock in steps until `cond`, at most `ms`. */
async function until(clock: FakeClock, cond: () => boolean, ms: number): Promise<void> {
  for (let waited = 0; !cond() && waited < ms; waited += 100) await clock.advance(100);
}

it('a candidate that cannot write status.json does not take the lease, is not ready, and says why; it takes once a write succeeds', async () => {
  const clock = new FakeClock();
  const dir = join(root, 'never');
  mkdirSync(join(dir, 'status.json', 'blocker'), { recursive: true });
  const w = await sidecar('never', clock);
  try {
    await clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS + 3 * T.retryPeriodMs);
    assert.equal(w.s.elector.isLeader(), false, 'no term its app could not read');
    assert.equal(w.holder(), '', 'the lease is left free for another');
    const failedLines = w.lines.filter((l) => l.startsWith('cannot write status files'));
    assert.equal(failedLines.length, 1, `one line, not one per retry:\n${w.lines.join('\n')}`);
    assert.match(failedLines[0]!, /"code":"EISDIR"/);
    assert.ok(failedLines[0]!.includes(dir), failedLines[0]);
    const ready = await w.get('/readyz');
    assert.equal(ready.code, 503);
    assert.match(ready.body, /status files: the status directory .* cannot be written/);
    assert.equal(await w.metric('leasehold_status_writable{name="l"}'), 0);
    assert.ok((await w.metric('leasehold_status_write_failures_total{name="l"}'))! >= 3, 'each retry tried a write');
    const leader = JSON.parse((await w.get('/leader')).body) as { isLeader: boolean; standingAside: { reason: string } | null };
    assert.equal(leader.isLeader, false);
    assert.match(leader.standingAside?.reason ?? '', /cannot be written/);

    // The volume is fixed: the next retry's write succeeds and the candidate campaigns again.
    rmSync(join(dir, 'status.json'), { recursive: true });
    await until(clock, () => w.s.elector.isLeader(), 4 * T.leaseDurationMs);
    assert.equal(w.s.elector.isLeader(), true, 'takes once a write succeeds');
    const file = JSON.parse(readFileSync(join(dir, 'status.json'), 'utf8')) as { isLeader: boolean; standingAside: unknown };
    assert.equal(file.isLeader, true);
    assert.equal(file.standingAside, null, 'the old reason is not left in the file');
    assert.equal((await w.get('/readyz')).code, 200);
    assert.equal(await w.metric('leasehold_status_writable{name="l"}'), 1);
  } finally {
    w.s.stop().catch(() => {});
    await clock.advance(5_000);
  }
});

it('a leader whose status.json can no longer be written steps down at its next renewal, never says "leader" over HTTP, and leaves the lease to expire', async () => {
  const clock = new FakeClock();
  const w = await sidecar('leading', clock);
  try {
    await clock.advance(RELEASE_WINDOW_FACTOR * DEFAULT_CONTENTION_WINDOW_MS);
    assert.equal(w.s.elector.isLeader(), true);
    const token = w.s.elector.snapshot().fencingToken!;
    rmSync(join(w.dir, 'status.json'));
    mkdirSync(join(w.dir, 'status.json', 'blocker'), { recursive: true });
    await until(clock, () => !w.s.elector.isLeader(), 2 * T.retryPeriodMs);
    assert.equal(w.s.elector.isLeader(), false, 'stepped down at the first renewal it could not write');
    assert.equal(readFileSync(join(w.dir, 'is-leader'), 'utf8'), 'false\n', 'what could be written says so');
    assert.equal((JSON.parse((await w.get('/leader')).body) as { isLeader: boolean }).isLeader, false);
    assert.equal((await w.get('/readyz')).code, 503);
    // "Not leader" could not reach status.json: the gate leaves the lease to expire.
    await clock.advance(T.retryPeriodMs);
    assert.equal(w.holder(), 'me', 'not released while status.json may say leader');
    assert.ok(w.lines.some((l) => l.startsWith('the step-down could not be written')));
    // Writable again: a new term once the old one could have expired.
    rmSync(join(w.dir, 'status.json'), { recursive: true });
    await until(clock, () => w.s.elector.isLeader(), 4 * T.leaseDurationMs);
    assert.equal(w.s.elector.snapshot().fencingToken, token + 1);
  } finally {
    w.s.stop().catch(() => {});
    await clock.advance(5_000);
  }
});

it('a standby whose status.json breaks before it takes: the take is written nowhere, so it is released at once, drain or not', async () => {
  for (const drainTimeoutMs of [0, 5_000]) {
    const clock = new FakeClock();
    const w = await sidecar(`standby-${drainTimeoutMs}`, clock, { drainTimeoutMs }, 'other');
    try {
      await clock.advance(T.retryPeriodMs);
      assert.equal(w.s.elector.isLeader(), false);
      // Nothing is published while another holds the lease: the break is found only by the take.
      rmSync(join(w.dir, 'status.json'));
      mkdirSync(join(w.dir, 'status.json', 'blocker'), { recursive: true });
      await until(clock, () => w.lines.some((l) => l.startsWith('cannot write status files')), 4 * T.leaseDurationMs);
      assert.ok(
        w.lines.some((l) => l.startsWith('cannot write status files')),
        w.lines.join('\n'),
      );
      const failedAt = clock.monotonic();
      await until(clock, () => w.holder() === '', T.leaseDurationMs);
      assert.equal(w.holder(), '', `released, not left to expire:\n${w.lines.join('\n')}`);
      assert.ok(clock.monotonic() - failedAt <= T.retryPeriodMs, `released ${clock.monotonic() - failedAt} ms after the failed write`);
      assert.equal(readFileSync(join(w.dir, 'is-leader'), 'utf8'), 'false\n', 'is-leader never said true');
      assert.ok(w.lines.some((l) => l.startsWith('the step-down could not be written, but no status file says this term leads: releasing')));
      await clock.advance(2 * T.leaseDurationMs);
      assert.equal(w.s.elector.isLeader(), false, 'it stands aside while the files cannot be written');
    } finally {
      w.s.stop().catch(() => {});
      await clock.advance(10_000);
    }
  }
});

it('StatusPublisher knows whether a file may say a term leads: a write that threw left its file as it was', () => {
  const p = new StatusPublisher(join(root, 'publisher'));
  p.prepare();
  assert.equal(p.mayShowLeader(), false, 'a new directory: no file to say anything');
  const now = new Date();
  const standby = toLeaderStatus(snapshot(false), now);
  p.publish(standby);
  assert.equal(p.mayShowLeader(), false);
  // The take's status.json cannot replace a directory: neither file says leader.
  rmSync(join(p.dir, 'status.json'));
  mkdirSync(join(p.dir, 'status.json', 'blocker'), { recursive: true });
  assert.throws(() => p.publish(toLeaderStatus(snapshot(true), now)));
  assert.equal(p.mayShowLeader(), false);
  assert.equal(p.showed(3), false);
  // Once status.json says leader and is-leader cannot be replaced, it may.
  rmSync(join(p.dir, 'status.json'), { recursive: true });
  rmSync(join(p.dir, 'is-leader'));
  mkdirSync(join(p.dir, 'is-leader', 'blocker'), { recursive: true });
  assert.throws(() => p.publish(toLeaderStatus(snapshot(true), now)));
  assert.equal(p.mayShowLeader(), true, 'status.json says leader');
  assert.equal(p.showed(3), true);
  // A previous process's files may say anything.
  const again = new StatusPublisher(p.dir);
  rmSync(join(p.dir, 'is-leader'), { recursive: true });
  again.prepare();
  assert.equal(again.mayShowLeader(), true);
});

function snapshot(isLeader: boolean): CandidateSnapshot {
  return {
    lease: 'l',
    identity: 'me',
    isLeader,
    holder: 'me',
    fencingToken: isLeader ? 3 : null,
    observedToken: 3,
    acquiredAt: null,
    renewedAt: null,
    validUntil: isLeader ? new Date(Date.now() + 10_000) : null,
    highestToken: 3,
    lastRenewMonotonic: null,
    loopDueMonotonic: null,
    standingAside: null,
    running: true,
  };
}
