/**
 * How fast the test API server takes a shard member's writes, by how many are in flight: a pass
 * of N shard Lease updates, each its own compare-and-swap, sent as the Kubernetes group store
 * sends a batch (writeEachGroupRecord), at 5 (BATCH_IN_FLIGHT), 10, 20, 40 and 80 at once, from
 * this process (JIT on, unlike the members) as an ordinary user. It tells the API server's own
 * bound on this machine apart from the members' work (docs/benchmarks.md, "Kubernetes writes by
 * requests in flight").
 *
 *   node --import tsx bench/lib/kube-write-rate.ts [N, default 2048]
 */
import { startControlPlane } from '../../test/support/control-plane.js';
import { KubeClient } from '../../src/kube/api-client.js';
import { loadConnection } from '../../src/kube/kubeconfig.js';
import { KubernetesLeaseStore } from '../../src/backends/kubernetes/store.js';
import { writeEachGroupRecord } from '../../src/backends/group-writes.js';
import { BATCH_IN_FLIGHT } from '../../src/backends/kubernetes/group-store.js';
import type { GroupWrite } from '../../src/backends/group-store.js';
import { createNamespace } from './candidates.js';

const N = Number(process.argv[2] ?? 2048);
if (!Number.isInteger(N) || N < 1 || N > 4096) {
  console.error(`kube-write-rate: N must be a whole number from 1 to 4096, got ${process.argv[2]}`);
  process.exit(2);
}
const IN_FLIGHT = [BATCH_IN_FLIGHT, 10, 20, 40, 80];
const ROUNDS = 3;

const cp = await startControlPlane({ extraUsers: ['writer'] });
const admin = new KubeClient(loadConnection(cp.adminKubeconfig));
const client = new KubeClient(loadConnection(cp.userKubeconfigs.writer), 30_000, Math.max(...IN_FLIGHT));
const store = new KubernetesLeaseStore(client, 'rate');
try {
  await createNamespace(admin, 'rate');
  const group = 'rate';
  await store.createGroupRecord(group, { kind: 'group', index: 0, shards: N, createdAt: new Date(), highWater: 0 });
  const versions = new Map<number, string>();
  let token = 0;
  const pass = async (inFlight: number): Promise<number> => {
    const writes: GroupWrite[] = Array.from({ length: N }, (_, s) => ({
      record: { kind: 'shard', index: s, holderIdentity: 'bench', owner: { slot: 0, session: 1 }, token: ++token, acquireTime: new Date() },
      expectedVersion: versions.get(s) ?? null,
    }));
    const t0 = performance.now();
    const outcomes = await writeEachGroupRecord(store, group, writes, inFlight);
    const ms = performance.now() - t0;
    outcomes.forEach((o, s) => {
      if (!o.written) throw new Error(`shard ${s}: a bench write lost its compare-and-swap: ${o.conflict}`);
      versions.set(s, o.version);
    });
    return ms;
  };
  console.log(`creating ${N} shard Leases: ${(await pass(BATCH_IN_FLIGHT)).toFixed(0)} ms`);
  const rows: string[] = [];
  for (const inFlight of IN_FLIGHT) {
    const times: number[] = [];
    for (let r = 0; r < ROUNDS; r++) times.push(await pass(inFlight));
    times.sort((a, b) => a - b);
    const median = times[Math.floor(ROUNDS / 2)]!;
    rows.push(
      `| ${inFlight} | ${median.toFixed(0)} (${times[0]!.toFixed(0)}-${times.at(-1)!.toFixed(0)}) | ${Math.round((N / median) * 1000).toLocaleString('en-US')} |`,
    );
    console.log(rows.at(-1));
  }
  console.log(`\n| in flight | ${N} updates, ms: median (min-max) of ${ROUNDS} | updates a second |\n| ---: | ---: | ---: |\n${rows.join('\n')}`);
} finally {
  await store.close();
  client.close();
  admin.close();
  await cp.stop();
}
