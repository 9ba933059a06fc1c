/**
 * One candidate of the race tests, as a real OS process that serves many rounds. Per round,
 * on stdin:
 *   "open <db>"  open a fresh connection to that SQLite file and an elector; answers "ready"
 *   "go"         make exactly one acquire attempt; answers {"id","acquired","token"}
 * The two steps let the test start all workers' attempts at once.
 *   race-worker.ts <identity> <leaseDurationMs>
 */
import { createInterface } from 'node:readline';
import { SqliteLeaseStore } from '../../src/backends/sqlite-store.js';
import { LeaderElector } from '../../src/sidecar/elector.js';

const [id, leaseMs] = process.argv.slice(2);
const leaseDurationMs = Number(leaseMs ?? 10_000);
let store: SqliteLeaseStore | null = null;
let elector: LeaderElector | null = null;

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, arg] = line.split(' ');
  if (cmd === 'open') {
    await store?.close();
    store = new SqliteLeaseStore(arg!, { busyTimeoutMs: 5_000 });
    elector = new LeaderElector({
      store,
      lease: 'race',
      identity: id!,
      leaseDurationMs,
      renewDeadlineMs: leaseDurationMs * 0.66,
      retryPeriodMs: leaseDurationMs * 0.2,
    });
    process.stdout.write('ready\n');
  } else if (cmd === 'go') {
    const acquired = await elector!.tryAcquireOrRenew();
    process.stdout.write(JSON.stringify({ id, acquired, token: elector!.snapshot().fencingToken }) + '\n');
  }
}
await store?.close();
