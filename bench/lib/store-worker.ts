/**
 * One benchmark process: waits for "go" on stdin, then runs acquire/renew attempts through the
 * real elector on an SQLite file (or a PostgreSQL table, given a postgres:// URL) for
 * `durationMs`, and prints {"ops","leaderOps","durableOps"}. durableOps counts the successful
 * attempts that changed the stored record: SQLite skips the write (and the sync) of an update
 * that stores the same bytes, which a renewal in the same millisecond as the last one does.
 *   store-worker.ts <db|url> <lease> <identity> <durationMs> [durable]
 * With `durable`, it instead sends renewals straight to the store, each with a renewTime 1 ms
 * past the last, so every commit changes the stored bytes and is synced: the store's rate of
 * durable writes, whatever the clock's resolution.
 */
import { createInterface } from 'node:readline';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import { CandidateLoop } from '../../src/election/candidate-loop.js';
import { ConflictError } from '../../src/errors.js';
import { resolveElectionConfig } from '../../src/config/election-options.js';

const [db, lease, id, duration, mode] = process.argv.slice(2);
const store = db!.startsWith('postgres://')
  ? await PostgresLeaseStore.open({ url: db!, table: 'public.bench' })
  : new SqliteLeaseStore(db!, { busyTimeoutMs: 5_000 });
const elector = new CandidateLoop({
  ...resolveElectionConfig({ lease: lease!, identity: id!, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, backend: store.backend }),
  store,
});
// The lease starts released: a lease never seen is created only a lease duration after it was
// first seen absent (the absence rule), which would leave a short run with no leader at all.
await store
  .create(lease!, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: new Date(), leaseTransitions: 0 })
  .catch((err: unknown) => {
    if (!(err instanceof ConflictError)) throw err;
  });
process.stdout.write('ready\n');
const rl = createInterface({ input: process.stdin });
rl.once('line', () => void (mode === 'durable' ? measureDurable() : measure()));

async function measureDurable(): Promise<void> {
  const end = performance.now() + Number(duration);
  const base = Date.now();
  let current = await store.get(lease!);
  let ops = 0;
  while (performance.now() < end) {
    const t = new Date(base + ops + 1);
    const record = { holderIdentity: id!, leaseDurationSeconds: 15, acquireTime: new Date(base), renewTime: t, leaseTransitions: 1 };
    const version = await store.update(lease!, record, current!.version);
    current = { record, version };
    ops++;
  }
  process.stdout.write(JSON.stringify({ ops, leaderOps: ops, durableOps: ops }) + '\n');
  rl.close();
  await store.close();
  process.exit(0);
}

async function measure(): Promise<void> {
  const end = performance.now() + Number(duration);
  let ops = 0;
  let leaderOps = 0;
  let durableOps = 0;
  let lastRenewMs = NaN;
  while (performance.now() < end) {
    if (await elector.tryAcquireOrRenew()) {
      leaderOps++;
      const renewMs = elector.snapshot().renewedAt?.getTime() ?? NaN;
      if (renewMs !== lastRenewMs) durableOps++;
      lastRenewMs = renewMs;
    }
    ops++;
  }
  process.stdout.write(JSON.stringify({ ops, leaderOps, durableOps }) + '\n');
  rl.close();
  await store.close();
  process.exit(0);
}
