/**
 * leasehold on a real single-node Kubernetes (the cluster tier's, test/support/cluster-session.ts),
 * as users run it: the image from the Dockerfile and `helm install` of the chart, timings and
 * everything else at the chart's defaults. Over TRIALS trials each:
 *   - the time from `helm install` to the first leader (the Lease's acquireTime);
 *   - the leaderless gap when the leader pod is deleted, with the example app that ignores
 *     SIGTERM (the chart's) and with one that exits on it (test/cluster/cluster.test.ts);
 *   - the leaderless gaps during `kubectl rollout restart` of 3 replicas.
 * Gaps come from the Lease's history on the records' own times (bench/lib/leaderless-gaps.ts), which
 * the bench follows with a watch; every clock involved is this machine's.
 */
import { loadavg } from 'node:os';
import { summary } from '../lib/quantile.js';
import { leaderlessGaps } from '../lib/leaderless-gaps.js';
import { LeaseTimeline } from '../lib/lease-timeline.js';
import { KubeClient } from '../../src/kube/api-client.js';
import { loadConnection } from '../../src/kube/kubeconfig.js';
import { KubernetesLeaseStore } from '../../src/backends/kubernetes/store.js';
import { CHART, type ClusterSession, LOCAL_IMAGES } from '../../test/support/cluster-session.js';
import { waitFor } from '../../test/support/cli.js';
import type { Phase } from '../phase.js';
import { clusterSpliceNote } from '../report/splice-note.js';

/** The example app's command (values.yaml) ignores SIGTERM; this variant exits on it (as in cluster.test.ts). */
const APP_EXITING_ON_SIGTERM = [
  'sh',
  '-c',
  "trap 'exit 0' TERM; httpd -p 8080 -h /leader; while true; do cat /leader/status.json; echo; sleep 10 & wait $!; done",
];
/** The chart's leaseDuration (values.yaml), for a takeover without a release. */
const LEASE_MS = 15_000;
const RELEASE = 'gap';

export interface ClusterFiguresResult {
  markdown: string;
}

type Summary = ReturnType<typeof summary>;

interface PodView {
  metadata: { name: string; deletionTimestamp?: string; labels?: Record<string, string> };
  status: { phase?: string; containerStatuses?: { ready: boolean }[] };
}

export async function benchClusterFigures(s: ClusterSession, trials: number, log: (m: string) => void): Promise<ClusterFiguresResult> {
  const admin = new KubeClient(loadConnection(s.kubeconfig));
  const loads: string[] = [];
  const noteLoad = (what: string) =>
    loads.push(
      `${what}: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')}`,
    );
  const holder = (lease: string) => {
    try {
      return s.kubectl('get', 'lease', lease, '-o', 'jsonpath={.spec.holderIdentity}').trim();
    } catch {
      return '';
    }
  };
  const acquireMs = (lease: string) => Date.parse(s.kubectl('get', 'lease', lease, '-o', 'jsonpath={.spec.acquireTime}').trim());
  const livePods = (release: string) =>
    (JSON.parse(s.kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${release}`, '-o', 'json')) as { items: PodView[] }).items.filter(
      (p) => !p.metadata.deletionTimestamp,
    );
  const noPodsLeft = (release: string) => s.kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name').trim() === '';
  /** 3 pods, none terminating, all Ready, and the Lease held by one of them (only once the Lease is watched). */
  const settled = async (release: string) =>
    waitFor(
      `3 Ready pods of ${release} and a leader among them`,
      () => {
        const pods = livePods(release);
        const h = holder(`${release}-leasehold`);
        const ok =
          pods.length === 3 &&
          pods.every((p) => p.status.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.ready)) &&
          pods.some((p) => p.metadata.name === h) &&
          // The bench's watch has caught up too: its last record names the same holder.
          timeline.sightings.at(-1)?.holder === h;
        return ok && h;
      },
      300_000,
      500,
    );

  // 1. helm install to the first leader, a fresh release each trial.
  noteLoad('helm install, start');
  const install: number[] = [];
  for (let i = 0; i < trials; i++) {
    const release = `first${i}`;
    const lease = `${release}-leasehold`;
    const t0 = Date.now();
    s.helm('install', release, CHART, ...LOCAL_IMAGES, '--set-json', `app.command=${JSON.stringify(APP_EXITING_ON_SIGTERM)}`, '--wait=false');
    await waitFor(`a leader of ${release}`, () => holder(lease) !== '', 180_000, 200);
    install.push(acquireMs(lease) - t0);
    log(`cluster: helm install ${i + 1}/${trials}: first leader after ${install.at(-1)} ms`);
    s.helm('uninstall', release, '--wait=false');
    s.kubectl('delete', 'lease', lease, '--ignore-not-found');
    await waitFor(`the pods of ${release} to be gone`, () => noPodsLeft(release), 120_000, 500);
  }
  noteLoad('helm install, end');

  // 2. The leader pod deleted, with each app; 3. rollout restarts. One release, its Lease watched throughout.
  s.helm('install', RELEASE, CHART, ...LOCAL_IMAGES, '--wait=false');
  const watcher = new KubernetesLeaseStore(admin, s.namespace);
  const timeline = new LeaseTimeline((on) => watcher.watch(`${RELEASE}-leasehold`, on));
  /** `kubectl rollout status`, in steps shorter than the session's 120 s per kubectl call, up to 5 min. */
  const rolledOut = () => {
    for (let k = 0; ; k++) {
      try {
        s.kubectl('rollout', 'status', `deployment/${RELEASE}-leasehold`, '--timeout=100s');
        return;
      } catch (err) {
        if (k === 2) throw err;
      }
    }
  };
  /** The Lease's history from `since` (performance.now()), with the last record seen before it as the starting state. */
  const historyFrom = (since: number) => {
    const before = timeline.sightings.filter((x) => x.at < since).at(-1);
    return [...(before ? [before] : []), ...timeline.sightings.filter((x) => x.at >= since)];
  };
  const deletion: Record<'ignores' | 'exits', { gap: number[]; fromDelete: number[] }> = {
    ignores: { gap: [], fromDelete: [] },
    exits: { gap: [], fromDelete: [] },
  };
  const rollout: { total: number[]; handoffs: number[]; expired: number } = { total: [], handoffs: [], expired: 0 };
  try {
    for (const app of ['ignores', 'exits'] as const) {
      if (app === 'exits') {
        s.helm(
          'upgrade',
          RELEASE,
          CHART,
          '--reuse-values',
          '--set-json',
          `app.command=${JSON.stringify(APP_EXITING_ON_SIGTERM)}`,
          '--wait',
          '--timeout',
          '300s',
        );
        rolledOut();
      }
      noteLoad(`leader pod deleted (app ${app} SIGTERM), start`);
      for (let i = 0; i < trials; i++) {
        const old = await settled(RELEASE);
        const since = performance.now();
        const t0 = Date.now();
        s.kubectl('delete', 'pod', old, '--wait=false');
        const h = await waitFor(
          `a handoff from ${old} in the Lease's history`,
          () => leaderlessGaps(historyFrom(since), LEASE_MS).find((x) => x.from === old),
          120_000,
          50,
        );
        deletion[app].gap.push(h.gapMs);
        deletion[app].fromDelete.push(Math.round(h.acquireMs - t0));
        log(
          `cluster: leader pod deleted (app ${app} SIGTERM) ${i + 1}/${trials}: leaderless ${h.gapMs} ms (${h.released ? 'released' : 'expired'}), ${deletion[app].fromDelete.at(-1)} ms from the deletion`,
        );
      }
      noteLoad(`leader pod deleted (app ${app} SIGTERM), end`);
    }

    noteLoad('rollout restart, start');
    for (let i = 0; i < trials; i++) {
      await settled(RELEASE);
      const since = performance.now();
      s.kubectl('rollout', 'restart', `deployment/${RELEASE}-leasehold`);
      rolledOut();
      // Over when only new pods are left and one of them leads.
      await waitFor(
        'the old pods to be gone',
        () => s.kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'name').trim().split('\n').length === 3,
        120_000,
        500,
      );
      await settled(RELEASE);
      const hs = leaderlessGaps(historyFrom(since), LEASE_MS);
      rollout.total.push(hs.reduce((a, h) => a + h.gapMs, 0));
      rollout.handoffs.push(hs.length);
      rollout.expired += hs.filter((h) => !h.released).length;
      log(`cluster: rollout restart ${i + 1}/${trials}: ${hs.length} handoffs, leaderless ${hs.map((h) => h.gapMs).join(' + ')} ms`);
    }
    noteLoad('rollout restart, end');
  } finally {
    timeline.close();
    await watcher.close();
    admin.close();
  }

  const row = (what: string, x: Summary, unit = 'ms') =>
    `| ${what} | ${x.samples.length} | ${x.min} ${unit} | ${x.median} ${unit} | ${x.p95} ${unit} | ${x.samples.at(-1)} ${unit} |`;
  const markdown = `The chart on the cluster tier's single-node Kubernetes (\`test/cluster/cluster.sh\`: a real kubelet,
containerd, kube-scheduler and controller-manager), the image from the Dockerfile, the chart's
defaults (3 replicas, timings 15s / 10s / 2s, \`readyWhen: elected-any\`, the sidecar as a plain
container) unless said otherwise. Leaderless gaps come from the Lease's history, followed with a
watch, on the records' own times: from a release (holder cleared, its renewTime) to the next
holder's acquireTime, or from the expiry if there was no release. The deletion column is from
\`kubectl delete pod\` to the new holder's acquireTime. All clocks are this machine's.

| event | trials | min | median | p95 | max |
| --- | ---: | ---: | ---: | ---: | ---: |
${row('`helm install` to the first leader (acquireTime), app that exits on SIGTERM', summary(install))}
${row('leader pod deleted, the example app ignores SIGTERM: leaderless gap', summary(deletion.ignores.gap))}
${row('the same, from the deletion', summary(deletion.ignores.fromDelete))}
${row('leader pod deleted, an app that exits on SIGTERM: leaderless gap', summary(deletion.exits.gap))}
${row('the same, from the deletion', summary(deletion.exits.fromDelete))}
${row('`kubectl rollout restart` of 3 replicas (app exits on SIGTERM): leaderless time per rollout, all handoffs summed', summary(rollout.total))}
${row('handoffs per rollout', summary(rollout.handoffs), '')}

In the rollouts, ${rollout.expired} of ${rollout.handoffs.reduce((a, b) => a + b, 0)} handoffs waited for an expiry instead of a release.
A new release's first leader comes a lease duration (15 s) after the first sidecar found no Lease:
it creates none before a former holder's lease could have expired.
The machine is shared and was loaded during the run (load average over 1 / 5 / 15 min, 2 cores):
${loads.map((l) => `- ${l}`).join('\n')}
`;
  return { markdown };
}

export const CLUSTER_HEADING = '## On a real cluster';

export const clusterPhase: Phase<ClusterFiguresResult> = {
  name: 'cluster',
  what: () => 'the chart on a real cluster: helm install to the first leader, leader pod deleted, rollout restart',
  needsRoot: true,
  inFullRun: true,
  estimateS: (o) => o.clusterTrials * (25 + 2 * 20 + 40),
  heading: () => CLUSTER_HEADING,
  section: (r, ctx) => `${CLUSTER_HEADING}\n\n${clusterSpliceNote(ctx, `, ${ctx.opts.clusterTrials} trials per row`)}${r.markdown}`,
  run: (ctx) => benchClusterFigures(ctx.cluster(), ctx.opts.clusterTrials, ctx.log),
};
