/**
 * One candidate of the race tests, as a real OS process that serves many rounds. Per round,
 * on stdin:
 *   "open <json>"  open a fresh store ({"backend":"sqlite","db":...} or
 *                  {"backend":"kubernetes","kubeconfig":...,"namespace":...}) and an elector,
 *                  and make sure the lease exists as released (holder "", token 0): every
 *                  worker tries to create it, one succeeds. Answers "ready". (A lease found
 *                  absent is created only after a lease duration seen absent, so the race is
 *                  run on a released one: all workers take it at once, by compare-and-swap.)
 *   "go"           make exactly one acquire attempt; answers {"id","acquired","token"}
 * The two steps let the test start all workers' attempts at once.
 *   race-worker.ts <identity> <leaseDurationMs>
 */
import { createInterface } from 'node:readline';
import { openStore, type StoreSettings } from '../../src/backends/open-store.js';
import type { LeaseStore } from '../../src/backends/lease-store.js';
import { CandidateLoop } from '../../src/election/candidate-loop.js';
import { ConflictError } from '../../src/errors.js';
import { resolveElectionConfig } from '../../src/config/election-options.js';

const [id, leaseMs] = process.argv.slice(2);
const leaseDurationMs = Number(leaseMs ?? 10_000);
let store: LeaseStore | null = null;
let elector: CandidateLoop | null = null;

for await (const line of createInterface({ input: process.stdin })) {
  const space = line.indexOf(' ');
  const cmd = space < 0 ? line : line.slice(0, space);
  if (cmd === 'open') {
    await store?.close();
    const spec = JSON.parse(line.slice(space + 1)) as StoreSettings & { lease?: string };
    store = await openStore(spec);
    elector = new CandidateLoop({
      ...resolveElectionConfig({
        lease: spec.lease ?? 'race',
        identity: id!,
        leaseDurationMs,
        renewDeadlineMs: leaseDurationMs * 0.66,
        retryPeriodMs: leaseDurationMs * 0.2,
        backend: store.backend,
      }),
      store,
    });
    const released = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: new Date(), leaseTransitions: 0 };
    await store.create(spec.lease ?? 'race', released).catch((err: unknown) => {
      if (!(err instanceof ConflictError)) throw err;
    });
    process.stdout.write('ready\n');
  } else if (cmd === 'go') {
    const acquired = await elector!.tryAcquireOrRenew();
    process.stdout.write(JSON.stringify({ id, acquired, token: elector!.snapshot().fencingToken }) + '\n');
  }
}
await store?.close();
