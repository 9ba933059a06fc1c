/**
 * The cron recipe when a runner's takeover lands but its answer is lost (a timeout after the
 * store applied it), and that runner stops before it learns it holds the lease (a signal, or
 * --try running out): it never ran the job, so the tick must not look run to the next runner.
 * The runner that loses the answer runs in this process, on a real SQLite file, behind a store
 * that applies its first takeover and never answers it; the next runner is a real `leasehold
 * run` process on the same file.
 */
import { resolveElectionConfig } from '../../src/config/election-options.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runOnce, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { LeaderRunner } from '../../src/run/leader-runner.js';
import { silentLogger } from '../../src/log.js';
import { abortReason } from '../../src/abort.js';
import type { CallOptions, LeaseRecord, LeaseStore } from '../../src/backends/lease-store.js';

const TIMINGS = { leaseDurationMs: 1_000, renewDeadlineMs: 800, retryPeriodMs: 200 };
const T = ['--lease-duration', '1s', '--renew-deadline', '800ms', '--retry-period', '200ms'];

/** `inner`, except that its first takeover is applied and then never answered (until its call is aborted). */
function losingFirstAnswer(inner: LeaseStore): { store: LeaseStore; landed: Promise<LeaseRecord> } {
  let landed!: (r: LeaseRecord) => void;
  const landedOnce = new Promise<LeaseRecord>((resolve) => (landed = resolve));
  let lost = false;
  const hang = (r: LeaseRecord, o?: CallOptions) =>
    new Promise<string>((_, reject) => {
      landed(r);
      const abort = () => reject(abortReason(o!.signal!));
      if (o?.signal?.aborted) abort();
      else o?.signal?.addEventListener('abort', abort, { once: true });
    });
  const write = async (r: LeaseRecord, o: CallOptions | undefined, send: () => Promise<string>) => {
    const version = await send();
    if (r.holderIdentity === '' || lost) return version;
    lost = true;
    return hang(r, o);
  };
  return {
    landed: landedOnce,
    store: {
      backend: inner.backend,
      location: inner.location,
      get: (n, o) => inner.get(n, o),
      create: (n, r, o) => write(r, o, () => inner.create(n, r, o)),
      update: (n, r, v, o) => write(r, o, () => inner.update(n, r, v, o)),
      close: () => inner.close(),
    },
  };
}

describe('cron on SQLite: a takeover that landed unanswered', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);

  it('the runner stopped before it knew it held the lease ran nothing, and the next runner of the tick runs the job', { timeout: 60_000 }, async () => {
    const db = join(dir.path, 'leases.db');
    const marker = join(dir.path, 'ran');
    // The last tick's run, long finished: its released record is what this tick's runners find.
    const seed = new SqliteLeaseStore(db);
    const long = new Date(Date.now() - 600_000);
    await seed.create('unanswered', { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: long, renewTime: long, leaseTransitions: 7 });
    await seed.close();

    const { store, landed } = losingFirstAnswer(new SqliteLeaseStore(db));
    const runner = new LeaderRunner({
      ...resolveElectionConfig({ ...TIMINGS, lease: 'unanswered', identity: 'lost-answer' }),
      store,
      lease: 'unanswered',
      identity: 'lost-answer',
      log: silentLogger,
      argv: ['sh', '-c', `echo lost-answer >> '${marker}'`],
      once: true,
      gracePeriodMs: 200,
      skipIfRanWithinMs: 60_000,
      childEnv: () => process.env,
    });
    await runner.start();
    const takeover = await waitFor('the takeover to land', () => landed, 10_000);
    assert.equal(takeover.leaseTransitions, 8);
    // A signal before the answer: the runner stops, releasing the term it may hold.
    await runner.forwardSignalAndStop('SIGTERM');
    assert.equal(await runner.finished, 0);
    assert.equal(existsSync(marker), false, 'it never ran the job');

    const next = await runOnce(db, 'unanswered', 'next', [...T, '--listen', 'off', '--skip-if-ran-within', '1m'], ['sh', '-c', `echo next >> '${marker}'`]);
    assert.equal(next.code, 0, next.stderr);
    assert.doesNotMatch(next.stderr, /skipping: a run began within/);
    assert.equal(readFileSync(marker, 'utf8'), 'next\n', 'the next runner of the tick ran the job');
  });
});
