/**
 * The Kubernetes part of `npm run bench` (bench/run.ts): leasehold and client-go's leader
 * election side by side, against one real kube-apiserver (started here, with an audit log of
 * lease requests), with the same lease timings.
 *   - API requests per minute by the leader and by each standby, counted from the audit log
 *     (each candidate authenticates as its own user), over an idle window;
 *   - RSS and CPU of each process over that window (from /proc);
 *   - graceful handoff (SIGTERM to the leader) and crash failover (SIGKILL) latency,
 *     min / median / p95 over TRIALS trials, measured from the signal to the Lease naming a
 *     standby (read every 5 ms over one keep-alive connection): two of a kind, three leasehold
 *     candidates, and a client-go leader handing over to a leasehold standby (bench/lib/latency-rows.ts).
 * RSS is sampled every second over the idle window (median and max reported); leasehold runs
 * as deployed, with its HTTP listener (probes and metrics) on.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { summary } from '../lib/quantile.js';
import { auditBytes as auditSize, auditEventsSince, countsAsRequest } from '../lib/audit-log.js';
import { parseDuration } from '../../src/config/duration.js';
import { cpuTicks, rssMB } from '../lib/proc-stats.js';
import { KubeClient } from '../../src/kube/api-client.js';
import { loadConnection } from '../../src/kube/kubeconfig.js';
import { waitFor, type Proc } from '../../test/support/cli.js';
import { imageNode } from '../lib/image-node.js';
import { buildGoCandidate, createNamespace as createKubeNamespace, startKubeCandidate, type Impl } from '../lib/candidates.js';
import { LATENCY_ROWS, latencyKey, latencyNamespace, parseLatencyRow, type LatencyRow } from '../lib/latency-rows.js';
export type { Impl } from '../lib/candidates.js';
import { startControlPlane } from '../../test/support/control-plane.js';
import { KubernetesLeaseStore } from '../../src/backends/kubernetes/store.js';
import { LeaseTimeline, selfReportedSinceFree } from '../lib/lease-timeline.js';
import type { Phase } from '../phase.js';

/**
 * leasehold runs as the image runs it: the image's Node version with its ENTRYPOINT flags
 * (bench/lib/image-node.ts); "leasehold-jitless" is the same with `--jitless` alone (the image's
 * flags before the memory ones), "leasehold-jit" the same sidecar on that Node without flags,
 * measured at idle only, for comparison.
 */
const IDLE_IMPLS: Impl[] = ['leasehold', 'leasehold-jitless', 'leasehold-jit', 'client-go'];
/** Start-up is over (watches connected, first reads and the first major GC done) before the idle window opens. */
const SETTLE_MS = 20_000;
// client-go's defaults, for the request-rate window; shorter ones for the latency trials.
export const IDLE_T = { lease: '15s', deadline: '10s', retry: '2s' };
export const FAST_T = { lease: '4s', deadline: '3s', retry: '1s' };

export interface KubernetesBenchOptions {
  trials: number;
  idleSeconds: number;
  log: (m: string) => void;
  /** e.g. "leasehold:SIGTERM" or "client-go/leasehold:SIGTERM": measure only that latency row (parseLatencyRow). */
  only?: string;
  /** The latency rows alone, without the idle windows (`--only failover`). */
  latencyOnly?: boolean;
}

export interface ProcessIdle {
  perMin: number;
  verbs: string;
  rssMedianMB: number;
  rssMaxMB: number;
  cpuPct: number;
}

export interface IdleResult {
  impl: Impl;
  leader: ProcessIdle;
  standbys: ProcessIdle[];
}

export interface KubernetesBenchResult {
  markdown: string;
  idle: IdleResult[];
  /** Keyed by latencyKey: "leasehold SIGTERM", "client-go SIGKILL", "leasehold SIGTERM, 3 candidates", "client-go to leasehold SIGTERM". */
  latency: Record<string, ReturnType<typeof summary>>;
  /** Crash failover measured from the expiry: keyed "leasehold" and "client-go" (from the records), "leasehold self" (its log). */
  afterExpiry: Record<string, ReturnType<typeof summary>>;
}

export async function benchKubernetes({
  trials: TRIALS,
  idleSeconds: IDLE_S,
  log,
  only,
  latencyOnly = false,
}: KubernetesBenchOptions): Promise<KubernetesBenchResult> {
  const node = imageNode();
  const users = Array.from({ length: 12 }, (_, i) => `candidate-${i}`);
  const cp = await startControlPlane({ audit: true, extraUsers: users });
  const goBin = buildGoCandidate();
  // The bench's own poller reuses its connections too, so it does not load the machine.
  const admin = new KubeClient(loadConnection(cp.adminKubeconfig));
  const createNamespace = (name: string) => createKubeNamespace(admin, name);
  let userSeq = 0;

  function launch(impl: Impl, ns: string, lease: string, id: string, t: typeof IDLE_T): { proc: Proc; user: string } {
    const user = users[userSeq++ % users.length]!;
    const proc = startKubeCandidate(impl, node, goBin, { kubeconfig: cp.userKubeconfigs[user]!, namespace: ns, lease, identity: id, timings: t });
    return { proc, user };
  }

  async function holder(ns: string, lease: string): Promise<string | undefined> {
    try {
      const path = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${lease}`;
      return (await admin.request<{ spec?: { holderIdentity?: string } }>('GET', path)).spec?.holderIdentity;
    } catch {
      return undefined;
    }
  }

  /** Requests by user and verb in the audit log after byte `from`. */
  function countRequests(from: number): Map<string, Map<string, number>> {
    const byUser = new Map<string, Map<string, number>>();
    for (const e of auditEventsSince(cp.auditLog!, from)) {
      if (!countsAsRequest(e)) continue;
      const m = byUser.get(e.user.username) ?? new Map<string, number>();
      m.set(e.verb, (m.get(e.verb) ?? 0) + 1);
      byUser.set(e.user.username, m);
    }
    return byUser;
  }
  const auditBytes = () => auditSize(cp.auditLog!);

  async function idle(impl: Impl): Promise<IdleResult> {
    const ns = `idle-${impl}`;
    await createNamespace(ns);
    const cands = ['a', 'b', 'c'].map((id) => ({ id, ...launch(impl, ns, 'idle', `${impl}-${id}`, IDLE_T) }));
    await waitFor('a leader', async () => (await holder(ns, 'idle')) || undefined, 30_000);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const leaderId = await holder(ns, 'idle');
    const from = auditBytes();
    const before = cands.map((c) => cpuTicks(c.proc.pid));
    const t0 = Date.now();
    log(`${impl}: idle window of ${IDLE_S} s`);
    const rssSamples: number[][] = cands.map(() => []);
    while (Date.now() - t0 < IDLE_S * 1000) {
      await new Promise((r) => setTimeout(r, 1_000));
      cands.forEach((c, i) => rssSamples[i]!.push(rssMB(c.proc.pid)));
    }
    const seconds = (Date.now() - t0) / 1000;
    const after = cands.map((c) => cpuTicks(c.proc.pid));
    const counts = countRequests(from);
    const hz = 100; // USER_HZ on Linux
    const rows = cands.map((c, i) => {
      const verbs = counts.get(c.user) ?? new Map<string, number>();
      const total = [...verbs.values()].reduce((a, b) => a + b, 0);
      return {
        leader: `${impl}-${c.id}` === leaderId,
        perMin: (total * 60) / seconds,
        verbs: [...verbs.entries()].map(([v, n]) => `${v} ${n}`).join(', ') || 'none',
        rssMedianMB: summary(rssSamples[i]!).median,
        rssMaxMB: Math.max(...rssSamples[i]!),
        cpuPct: ((after[i]! - before[i]!) / hz / seconds) * 100,
      };
    });
    for (const c of cands) c.proc.kill('SIGTERM');
    await Promise.all(cands.map((c) => c.proc.exited));
    const leader = rows.find((r) => r.leader)!;
    return { impl, leader, standbys: rows.filter((r) => !r.leader) };
  }

  /** Has this candidate reported the current leader? (its log or its event stream) */
  function sawLeader(impl: Impl, proc: Proc, leaderId: string): boolean {
    return impl !== 'client-go' ? proc.stderr().includes(`"holder":"${leaderId}"`) : proc.stdout().includes(`"holder":"${leaderId}"`);
  }

  /**
   * One handoff or failover row: a leader of the row's kind and its standbys on one Lease; each
   * trial signals the leader and times the signal to the Lease naming one of the standbys, then
   * replaces it with a fresh standby. When the new holder is not of the leader's kind (client-go
   * to leasehold), a fresh leader of that kind first takes the Lease over from it, untimed: the
   * holder is SIGTERMed once the fresh one has seen it.
   */
  async function latency(row: LatencyRow): Promise<{ fromSignal: number[]; afterExpiry: number[]; selfReported: number[] }> {
    const { signal } = row;
    const ns = latencyNamespace(row);
    await createNamespace(ns);
    const watcher = new KubernetesLeaseStore(admin, ns);
    const timeline = new LeaseTimeline((on) => watcher.watch('lat', on));
    const afterExpiry: number[] = [];
    const selfReported: number[] = [];
    const leaseMs = parseDuration(FAST_T.lease)!;
    let gen = 0;
    const mk = (impl: Impl) => {
      const id = `${impl}-${gen++}`;
      return { id, impl, ...launch(impl, ns, 'lat', id, FAST_T) };
    };
    const holds = async <C extends { id: string }>(cs: C[]) => {
      const h = await holder(ns, 'lat');
      return cs.find((c) => c.id === h);
    };
    let cands = [mk(row.leader)];
    const out: number[] = [];
    try {
      for (let i = 0; i < TRIALS; i++) {
        let leader = await waitFor('a leader', () => holds(cands), 30_000);
        if (leader.impl !== row.leader) {
          const fresh = mk(row.leader);
          await waitFor('the new leader-to-be to see the holder', () => sawLeader(fresh.impl, fresh.proc, leader.id), 60_000);
          for (const c of cands) c.proc.kill('SIGTERM');
          await Promise.all(cands.map((c) => c.proc.exited));
          cands = [fresh];
          leader = await waitFor('it to hold the Lease', () => holds(cands), 30_000);
        }
        while (cands.length < row.candidates) cands.push(mk(row.standby));
        const standbys = cands.filter((c) => c !== leader);
        // The standbys must be up and have seen the leader (their first read and watch done).
        await waitFor('the standbys to see the leader', () => standbys.every((c) => sawLeader(c.impl, c.proc, leader.id)), 60_000);
        // And long enough to have seen a renewal after their first read: a standby that has only
        // read the record once counts its expiry from that read (it cannot know when the
        // renewal it read happened), which is later than the bench's view of the expiry.
        await new Promise((r) => setTimeout(r, 2 * parseDuration(FAST_T.retry)!));
        const t0 = performance.now();
        leader.proc.kill(signal);
        const other = await waitFor('a standby to hold the Lease', () => holds(standbys), 30_000, 5);
        out.push(Math.round(performance.now() - t0));
        if (signal === 'SIGKILL') {
          await waitFor('the bench to see the new holder', () => timeline.sightings.some((s) => s.at >= t0 && s.holder === other.id), 10_000, 5);
          const a = timeline.afterExpiry(leader.id, other.id, leaseMs, t0 - 2 * leaseMs);
          if (a !== undefined) afterExpiry.push(a);
          // Its log line can come a moment after the Lease names it.
          const self =
            other.impl === 'client-go'
              ? undefined
              : await waitFor('its "became leader" line', () => selfReportedSinceFree(other.proc.stderr()), 2_000, 5).catch(() => undefined);
          if (self !== undefined) selfReported.push(self);
        }
        await leader.proc.exited;
        const slowAfterExpiry = signal === 'SIGKILL' && (afterExpiry.at(-1) ?? 0) > 100;
        if (other.impl === 'leasehold' && ((signal === 'SIGTERM' && out.at(-1)! > 2_000) || slowAfterExpiry)) {
          // An outlier worth reading: keep both processes' logs.
          const file = join(cp.dir, `..`, `leasehold-bench-outlier-${Date.now()}.log`);
          writeFileSync(file, `leader ${leader.id}\n${leader.proc.stderr()}\nstandby ${other.id}\n${other.proc.stderr()}`);
          log(`outlier ${out.at(-1)} ms: logs in ${file}`);
        }
        cands = cands.filter((c) => c !== leader);
        log(`${latencyKey(row)} trial ${i + 1}/${TRIALS}: ${out.at(-1)} ms${signal === 'SIGKILL' ? `, ${afterExpiry.at(-1)} ms after the expiry` : ''}`);
      }
    } finally {
      for (const c of cands) c.proc.kill('SIGKILL');
      await Promise.all(cands.map((c) => c.proc.exited));
      timeline.close();
    }
    return { fromSignal: out, afterExpiry, selfReported };
  }

  /** Every row of LATENCY_ROWS (or the one asked for), keyed by latencyKey. */
  async function latencies(rows: readonly LatencyRow[]) {
    const lat: Record<string, ReturnType<typeof summary>> = {};
    const afterExpiry: Record<string, ReturnType<typeof summary>> = {};
    for (const row of rows) {
      const r = await latency(row);
      lat[latencyKey(row)] = summary(r.fromSignal);
      if (r.afterExpiry.length) afterExpiry[row.leader === row.standby ? row.leader : latencyKey(row)] = summary(r.afterExpiry);
      if (r.selfReported.length) afterExpiry[`${row.leader === row.standby ? row.leader : latencyKey(row)} self`] = summary(r.selfReported);
    }
    return { lat, afterExpiry };
  }

  try {
    if (only) {
      const { lat, afterExpiry } = await latencies([parseLatencyRow(only)]);
      const md = Object.entries({ ...lat, ...Object.fromEntries(Object.entries(afterExpiry).map(([k, v]) => [`${k}, after the expiry`, v])) })
        .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
        .join('\n');
      return { markdown: `${md}\n`, idle: [], latency: lat, afterExpiry };
    }
    const idleResults: IdleResult[] = [];
    if (!latencyOnly) for (const impl of IDLE_IMPLS) idleResults.push(await idle(impl));
    const { lat, afterExpiry } = await latencies(LATENCY_ROWS);
    return {
      markdown: (latencyOnly ? '' : idleMarkdown(idleResults, IDLE_S, node.version, node.flags.join(' '))) + latencyMarkdown(lat, afterExpiry, TRIALS),
      idle: idleResults,
      latency: lat,
      afterExpiry,
    };
  } finally {
    admin.close();
    await cp.stop();
  }
}

export const standbyRequestsPerMin = (r: IdleResult) => r.standbys.reduce((a, s) => a + s.perMin, 0) / r.standbys.length;

function idleMarkdown(idleResults: IdleResult[], idleSeconds: number, nodeVersion: string, nodeFlags: string): string {
  const f1 = (n: number) => n.toFixed(1);
  const idleRows = idleResults
    .flatMap((r) =>
      [{ role: 'leader', p: r.leader }, ...r.standbys.map((p, i) => ({ role: `standby ${i + 1}`, p }))].map(
        ({ role, p }) => `| ${r.impl} | ${role} | ${f1(p.perMin)} | ${p.verbs} | ${f1(p.rssMedianMB)} / ${f1(p.rssMaxMB)} | ${f1(p.cpuPct)} |`,
      ),
    )
    .join('\n');
  return `### API requests and resources at idle

${idleSeconds} s with 1 leader + 2 standbys per implementation, opened ${SETTLE_MS / 1000} s after the first leader (start-up over), timings ${IDLE_T.lease} / ${IDLE_T.deadline} / ${IDLE_T.retry}
(lease / renew deadline / retry; client-go's defaults). Requests per minute on leases come from
the API server's audit log (each candidate is its own user; a watch counts once, when it
starts). RSS is sampled from \`/proc\` every second (median / max); CPU is the share of one core
over the window. leasehold runs as the image runs it: Node ${nodeVersion} \`node ${nodeFlags}\`, with
its HTTP listener (probes, metrics) on; \`leasehold-jitless\` is the same sidecar with \`--jitless\` alone and \`leasehold-jit\`
the same on that Node without flags.

| implementation | role | requests/min | by verb (window) | RSS MiB median / max | CPU % |
| --- | --- | ---: | --- | ---: | ---: |
${idleRows}

A leasehold standby holds one watch and reads only for a safety re-read (every
max(60 × retryPeriod, leaseDuration)), when the lease could have expired, or when it is
released; client-go's standby reads every retryPeriod.

`;
}

/** The latency table's rows, graceful handoffs first. */
const DISPLAYED_ROWS = [...LATENCY_ROWS].sort((a, b) => (a.signal === b.signal ? 0 : a.signal === 'SIGTERM' ? -1 : 1));

function latencyMarkdown(lat: Record<string, ReturnType<typeof summary>>, afterExpiry: Record<string, ReturnType<typeof summary>>, trials: number): string {
  const latRow = (r: LatencyRow) => {
    const s = lat[latencyKey(r)];
    const who = r.leader === r.standby ? r.leader : `${r.leader} leader, ${r.standby} standby`;
    return s ? [`| ${who} | ${r.signal} | ${r.candidates} | ${s.min} ms | ${s.median} ms | ${s.p95} ms |`] : [];
  };
  return `### Handoff and failover latency

${trials} trials per row, timings ${FAST_T.lease} / ${FAST_T.deadline} / ${FAST_T.retry}; from the signal to the Lease
naming a standby (read every 5 ms). Before each signal every standby has seen the leader, and
each signalled leader is replaced by a fresh standby. In the client-go to leasehold row a
client-go leader releases and a leasehold standby takes over on the same Lease, as in a rollout
from one to the other; before each trial a fresh client-go candidate takes the Lease back, untimed.

![Each trial of the two-candidate rows of one implementation below, on a logarithmic axis](benchmarks-latency.svg)

| implementation | signal | candidates | min | median | p95 |
| --- | --- | ---: | ---: | ---: | ---: |
${DISPLAYED_ROWS.flatMap(latRow).join('\n')}

### Crash failover after the expiry

The same SIGKILL trials, measured from the expiry instead of the signal, on the records
themselves: the new holder's \`acquireTime\` minus (the crashed leader's last \`renewTime\` + the
lease duration, ${FAST_T.lease}). Both are written by candidates on this machine's clock, so the
figure does not depend on when the bench heard of them. Nobody may take the lease before that
expiry (a negative figure would be a safety bug); the goal is p95 ≤ 50 ms after it, with few tries
at once. A standby can only count from when it *observed* the last renewal, so the figure includes
that delay: a watch event for leasehold, up to one poll (${FAST_T.retry} × 2.2) for client-go.
"leasehold (its own log)" is the new leader's \`sinceFreeMs\`: the gap from the expiry as it
observed it, on its own clock.

| implementation | trials | min | median | p95 |
| --- | ---: | ---: | ---: | ---: |
${['leasehold', 'leasehold self', 'client-go']
  .filter((k) => afterExpiry[k])
  .map((k) => {
    const s = afterExpiry[k]!;
    return `| ${k === 'leasehold self' ? 'leasehold (its own log)' : k} | ${s.samples.length} | ${s.min} ms | ${s.median} ms | ${s.p95} ms |`;
  })
  .join('\n')}
`;
}

export const KUBERNETES_HEADING = '## Kubernetes: one real kube-apiserver 1.37.2 + etcd 3.7.3';

export const kubernetesPhase: Phase<KubernetesBenchResult> = {
  name: 'kubernetes',
  what: () => 'leasehold and client-go on one API server: idle requests, RSS, CPU; handoff and failover latency',
  needsRoot: false,
  inFullRun: true,
  // Each latency trial about 7 s; the client-go to leasehold row's hand-back adds about 4 s to each of its trials.
  estimateS: (o) => 60 + 4 * (o.idleSeconds + 45) + LATENCY_ROWS.length * o.trials * 7 + o.trials * 4,
  // One latency row alone, e.g. `leasehold:SIGTERM:3`; a mistyped one is refused before anything starts.
  accepts: (word) => word.includes(':') && parseLatencyRow(word) !== undefined,
  otherWords: 'LEADER[/STANDBY]:SIGNAL[:N], one latency row',
  heading: () => KUBERNETES_HEADING,
  run: (ctx) =>
    benchKubernetes({ trials: ctx.opts.trials, idleSeconds: ctx.opts.idleSeconds, log: ctx.log, only: ctx.word.includes(':') ? ctx.word : undefined }),
};
