/**
 * One candidate of the race tests, as a real OS process that serves many rounds. Per round,
 * on stdin:
 *   "open <json>"  open a fresh store ({"backend":"sqlite","db":...} or
 *                  {"backend":"kubernetes","kubeconfig":...,"namespace":...}) and an elector;
 *                  answers "ready"
 *   "go"           make exactly one acquire attempt; answers {"id","acquired","token"}
 * The two steps let the test start all workers' attempts at once.
 *   race-worker.ts <identity> <leaseDurationMs>
 */
import { createInterface } from 'node:readline';
import { openStore, type StoreSettings } from '../../src/backends/open-store.js';
import type { LeaseStore } from '../../src/backends/lease-store.js';
import { LeaderElector } from '../../src/sidecar/elector.js';

const [id, leaseMs] = process.argv.slice(2);
const leaseDurationMs = Number(leaseMs ?? 10_000);
let store: LeaseStore | null = null;
let elector: LeaderElector | null = null;

for await (const line of createInterface({ input: process.stdin })) {
  const space = line.indexOf(' ');
  const cmd = space < 0 ? line : line.slice(0, space);
  if (cmd === 'open') {
    await store?.close();
    const spec = JSON.parse(line.slice(space + 1)) as StoreSettings & { lease?: string };
    store = await openStore(spec);
    elector = new LeaderElector({
      store,
      lease: spec.lease ?? 'race',
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
