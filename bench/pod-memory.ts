/**
 * Memory as the chart deploys the sidecar: the image built from the Dockerfile, in pods on the
 * single-node cluster (test/support/cluster-session.ts), its working set read from the
 * container's memory cgroup (what the kubelet compares with the limit) 60 s after it started.
 */
import { CHART, ClusterSession, LOCAL_IMAGES } from '../test/support/cluster-session.js';
import { waitFor } from '../test/support/cli.js';

export interface PodMemoryResult {
  /** Working set per sidecar, MiB, leader first. */
  leaderMB: number;
  standbyMB: number;
  limitMB: number;
  markdown: string;
}

const LIMIT_MB = 160;
const SETTLE_MS = 60_000;

export async function benchPodMemory(log: (m: string) => void): Promise<PodMemoryResult> {
  const s = new ClusterSession();
  try {
    log('pod memory: bringing up the single-node cluster (about 15 s warm)');
    s.up();
    s.helm('install', 'mem', CHART, ...LOCAL_IMAGES, '--set', 'replicaCount=2', '--wait=false');
    log('pod memory: chart installed with 2 replicas; reading each sidecar cgroup 60 s after it started (about 90 s)');
    const lease = () => {
      try {
        return s.kubectl('get', 'lease', 'mem-leasehold', '-o', 'jsonpath={.spec.holderIdentity}').trim() || undefined;
      } catch {
        return undefined;
      }
    };
    const leader = await waitFor('a leader', lease, 120_000, 500);
    const pods = s.kubectl('get', 'pods', '-l', 'app.kubernetes.io/instance=mem', '-o', 'jsonpath={.items[*].metadata.name}').trim().split(/\s+/);
    const standby = pods.find((p) => p !== leader)!;
    for (const pod of [leader, standby]) {
      const wait = s.containerStartedAt(pod, 'leasehold') + SETTLE_MS - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const mb = (pod: string) => s.workingSetBytes(pod, 'leasehold') / 2 ** 20;
    const leaderMB = mb(leader);
    const standbyMB = mb(standby);
    log(`pod memory: leader ${leaderMB.toFixed(1)} MiB, standby ${standbyMB.toFixed(1)} MiB (limit ${LIMIT_MB} MiB)`);
    const markdown = `The chart's sidecar in real pods (\`test/cluster/cluster.sh\`: the image from the Dockerfile,
\`helm install\` with 2 replicas and the chart's defaults), its working set read from the
container's memory cgroup (usage − inactive file, as the kubelet computes it) 60 s after the
container started:

| sidecar | working set | chart limit |
| --- | ---: | ---: |
| leader | ${leaderMB.toFixed(1)} MiB | ${LIMIT_MB} MiB |
| standby | ${standbyMB.toFixed(1)} MiB | ${LIMIT_MB} MiB |
`;
    return { leaderMB, standbyMB, limitMB: LIMIT_MB, markdown };
  } finally {
    s.down();
  }
}
