/**
 * The library's term on a real SQLite file another process holds write-locked once the
 * candidate leads: the term ends (its signal aborts) at least the clock margin before the lease
 * could expire, counted from the renewTime of the last renewal the file holds, with store
 * settings that leave the busy timeout out and that give it as undefined.
 *
 * Found by a hostile review: LeaderElection (and ShardGroup) opened their store with
 * `{ ...storeTimeouts(config), ...opts.store }`, so store settings carrying the key with the value
 * undefined replaced the bound with undefined and the store fell back to its 1 s default; while
 * SQLite's busy handler held the event loop, that made the term end after the lease could have
 * expired (withStoreTimeouts fills it in now; its unit test, src/config/election-options.test.ts,
 * pins the filling). Since the store waits on a lock with its own timers, the event loop free
 * (src/backends/sqlite/store.ts, write()), the term ends at the renew deadline whatever the busy
 * timeout: what this file still pins is that end, on a real file, through the library.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeaderElection } from '../../src/election/leader-election.js';
import { clockMarginMs } from '../../src/config/election-options.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { JUDGED_LATENESS_MS, startTimerProbe } from '../support/kill-margin.js';
import { waitFor } from '../support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-busy-bound-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const TIMINGS = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 };
const MARGIN = clockMarginMs(TIMINGS.leaseDurationMs);
/** Rounds tried at most for one judged round: a round is judged where this machine kept its timers on time. */
const MAX_ROUNDS = 5;
const probe = startTimerProbe();
after(async () => {
  probe.kill('SIGKILL');
  await probe.exited;
});

interface Round {
  /** How long before the lease could expire the term ended (ms). */
  before: number;
  /** The latest a timer beside it came, from the renew deadline to the term's end (ms). */
  latenessMs: number;
}

/** How long before the lease could expire the term ended, another process holding the write lock from the time it led. */
async function endBeforeExpiry(db: string, store: Record<string, unknown>): Promise<Round> {
  let ended = 0;
  let leading!: () => void;
  const led = new Promise<void>((r) => (leading = r));
  const election = await LeaderElection.start({
    ...TIMINGS,
    store: { backend: 'sqlite', db, ...store },
    lease: 'busy',
    identity: 'me',
    callbacks: {
      onStartedLeading: (l) => {
        l.signal.addEventListener('abort', () => (ended = Date.now()));
        leading();
      },
    },
  });
  let holder: ReturnType<typeof spawn> | undefined;
  try {
    await led;
    // Spawned once leading: a lock taken before the first acquire would hold back the term instead.
    holder = spawn('python3', [
      '-c',
      `import sqlite3, time\nc = sqlite3.connect(${JSON.stringify(db)}, isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(30)`,
    ]);
    while (ended === 0) await new Promise((r) => setTimeout(r, 5));
    // WAL: a reader passes the write lock.
    const reader = new SqliteLeaseStore(db, { readonly: true });
    try {
      const renewed = (await reader.get('busy'))!.record.renewTime!.getTime();
      const before = renewed + TIMINGS.leaseDurationMs - ended;
      const latenessMs = await probe.latenessIn(renewed + TIMINGS.renewDeadlineMs, ended);
      console.log(
        `busyTimeoutMs ${'busyTimeoutMs' in store ? String(store.busyTimeoutMs) : 'absent'}: the term ended ${before} ms before the lease could expire (margin ${MARGIN} ms); a timer beside it at most ${latenessMs} ms late${latenessMs > JUDGED_LATENESS_MS ? ' (not judged)' : ''}`,
      );
      return { before, latenessMs };
    } finally {
      await reader.close();
    }
  } finally {
    holder?.kill('SIGKILL');
    await election.stop().catch(() => undefined);
  }
}

/**
 * Rounds until one ran while this machine kept its timers on time (test/support/kill-margin.ts):
 * under CI's load a term once ended 50 ms after the expiry, its deadline's timer late as every
 * timer was; that tests the machine, not the bound.
 */
async function judgedRound(name: string, store: Record<string, unknown>): Promise<Round> {
  await waitFor('the timer probe to tick', () => probe.ticking(), 30_000);
  const rounds: Round[] = [];
  for (let i = 0; i < MAX_ROUNDS; i++) {
    const r = await endBeforeExpiry(join(dir, `${name}-${i}.db`), store);
    if (r.latenessMs <= JUDGED_LATENESS_MS) return r;
    rounds.push(r);
  }
  assert.fail(`no round had this machine's timers within ${JUDGED_LATENESS_MS} ms, none could be judged: ${JSON.stringify(rounds)}`);
}

describe('the busy timeout bound and store settings', () => {
  it('store settings without busyTimeoutMs; the term ends the margin before the expiry', { timeout: 120_000 }, async () => {
    const { before } = await judgedRound('control', {});
    assert.ok(before >= MARGIN, `the term ended ${before} ms before the expiry`);
  });

  it('store settings with busyTimeoutMs: undefined; the term ends the margin before the expiry', { timeout: 120_000 }, async () => {
    const { before } = await judgedRound('undefined', { busyTimeoutMs: undefined });
    assert.ok(before >= MARGIN, `the term ended ${before} ms before the expiry`);
  });
});
