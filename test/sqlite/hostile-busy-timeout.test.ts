/**
 * Hostile review of the SQLite busy timeout bound (issue 41 item 6, storeTimeouts in
 * src/config/election-options.ts) with a real SQLite file and a real process holding its write
 * lock once the candidate leads. What is measured is what the bound is for: the term ends (its
 * signal aborts) at least the clock margin before the lease could expire, counted from the
 * renewTime of the last renewal the file holds. Asserts the CORRECT behaviour; the FINDING case
 * fails on the code it was written against.
 *
 * FINDING 4: LeaderElection (and ShardGroup) open their store with
 * `{ ...storeTimeouts(config), ...opts.store }`, so store settings that carry the key with the
 * value undefined (`busyTimeoutMs: process.env.X ? Number(process.env.X) : undefined`, which the
 * type allows) replace the bound with undefined, and the store falls back to its 1 s default:
 * with a 2 s lease and a 1.5 s renew deadline (bound 448 ms) the term then ends after the lease
 * could have expired, although the user chose nothing. Without the key it holds (the control).
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

const dir = mkdtempSync(join(tmpdir(), 'leasehold-hostile-busy-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const TIMINGS = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 };
const MARGIN = clockMarginMs(TIMINGS.leaseDurationMs);

/** How long before the lease could expire the term ended, another process holding the write lock from the time it led. */
async function endBeforeExpiry(db: string, store: Record<string, unknown>): Promise<number> {
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
      console.log(
        `busyTimeoutMs ${'busyTimeoutMs' in store ? String(store.busyTimeoutMs) : 'absent'}: the term ended ${before} ms before the lease could expire (margin ${MARGIN} ms)`,
      );
      return before;
    } finally {
      await reader.close();
    }
  } finally {
    holder?.kill('SIGKILL');
    await election.stop().catch(() => undefined);
  }
}

describe('hostile: the busy timeout bound and store settings', () => {
  it('control: store settings without busyTimeoutMs; the term ends the margin before the expiry', { timeout: 60_000 }, async () => {
    const before = await endBeforeExpiry(join(dir, 'control.db'), {});
    assert.ok(before >= MARGIN, `the term ended ${before} ms before the expiry`);
  });

  it('FINDING 4: store settings with busyTimeoutMs: undefined; the term ends the margin before the expiry', { timeout: 60_000 }, async () => {
    const before = await endBeforeExpiry(join(dir, 'undefined.db'), { busyTimeoutMs: undefined });
    assert.ok(before >= MARGIN, `the term ended ${before} ms before the expiry`);
  });
});
