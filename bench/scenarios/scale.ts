/**
 * The scale part of `npm run bench` (bench/run.ts): one lease, 1 leader + N standbys (100 by
 * default), as real processes on this machine:
 *   - on one SQLite file (leasehold);
 *   - on one kube-apiserver with an audit log (leasehold, then client-go, same timings).
 * For each: the standbys' total requests per minute over an idle window, conflicting writes per
 * handoff, graceful-handoff latency (SIGTERM to the leader, to the new holder seen), crash
 * failover after the expiry (SIGKILL), summed RSS and CPU of the candidates, and on Kubernetes
 * the API server's CPU. Every killed candidate is replaced, so N standbys stay throughout.
 */
import { join } from 'node:path';
import { summary } from '../lib/quantile.js';
import { cpuTicks, rssMB } from '../lib/proc-stats.js';
import { imageNode } from '../lib/image-node.js';
import { LeaseTimeline } from '../lib/lease-timeline.js';
import { buildGoCandidate, createNamespace, startKubeCandidate, timingArgs, type Timings } from '../lib/candidates.js';
import { auditBytes, auditEventsSince, countsAsRequest } from '../lib/audit-log.js';
import { FAST_T } from './kubernetes.js';
import { KubeClient } from '../../src/kube/api-client.js';
import { loadConnection } from '../../src/kube/kubeconfig.js';
import { KubernetesLeaseStore } from '../../src/backends/kubernetes/store.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { parseDuration } from '../../src/config/duration.js';
import { CLI, start, tempDir, waitFor, type Proc } from '../../test/support/cli.js';
import { startControlPlane, type ControlPlane } from '../../test/support/control-plane.js';
import type { BenchOptions, Phase } from '../phase.js';

export interface ScaleBenchOptions {
  standbys: number;
  trials: number;
  idleSeconds: number;
  log: (m: string) => void;
  /** Which setups to run (default all): sqlite, leasehold, client-go. */
  setups?: string[];
}

export interface ScaleRow {
  setup: string;
  standbys: number;
  /** All standbys together, requests per minute over the idle window. */
  standbyPerMin: number;
  leaderPerMin: number;
  /** Conflicting writes (409 / lost compare-and-swap) per handoff, SIGTERM and SIGKILL together. */
  conflicts: ReturnType<typeof summary>;
  handoff: ReturnType<typeof summary>;
  afterExpiry: ReturnType<typeof summary>;
  rssSumMB: number;
  cpuSumPct: number;
  apiserverCpuPct: number | null;
  startupS: number;
}

export interface ScaleBenchResult {
  rows: ScaleRow[];
  markdown: string;
}

const SQLITE_T = { lease: '2s', deadline: '1500ms', retry: '400ms' };
const HZ = 100; // USER_HZ
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One candidate process of a scale run. */
interface Member {
  id: string;
  proc: Proc;
}

/** What differs between the three setups: how to start a candidate and how to count its requests. */
interface Setup {
  name: string;
  timings: Timings;
  launch(id: string, role: 'leader' | 'standby'): Proc;
  /** Has this candidate reported the holder `id` (its log or its event stream)? */
  sawHolder(m: Member, id: string): boolean;
  timeline: LeaseTimeline;
  /** Opens a counting window; its close() returns requests by the leader and the standbys, and conflicts. */
  window(members: () => Member[], leaderId: () => string): Promise<{ close(): Promise<{ leader: number; standbys: number; conflicts: number }> }>;
  apiserverPid?: () => number | undefined;
}

export async function benchScale({
  standbys: N,
  trials,
  idleSeconds,
  log,
  setups = ['sqlite', 'leasehold', 'client-go'],
}: ScaleBenchOptions): Promise<ScaleBenchResult> {
  const node = imageNode();
  const rows: ScaleRow[] = [];
  const dir = tempDir('leasehold-scale-');
  try {
    if (setups.includes('sqlite')) rows.push(await runSetup(sqliteSetup(dir.path), N, trials, idleSeconds, log));
    const cp = await startControlPlane({ audit: true, extraUsers: ['scale-leader', 'scale-standby'] });
    const goBin = buildGoCandidate();
    const admin = new KubeClient(loadConnection(cp.adminKubeconfig));
    try {
      for (const impl of (['leasehold', 'client-go'] as const).filter((i) => setups.includes(i))) {
        const ns = `scale-${impl}`;
        await createNamespace(admin, ns);
        rows.push(await runSetup(kubeSetup(cp, admin, ns, impl, node, goBin), N, trials, idleSeconds, log));
      }
    } finally {
      admin.close();
      await cp.stop();
    }
  } finally {
    dir.cleanup();
  }
  return { rows, markdown: scaleMarkdown(rows, N, trials, idleSeconds) };
}

async function runSetup(s: Setup, N: number, trials: number, idleSeconds: number, log: (m: string) => void): Promise<ScaleRow> {
  const leaseMs = parseDuration(s.timings.lease)!;
  const retryMs = parseDuration(s.timings.retry)!;
  let seq = 0;
  const members: Member[] = [];
  const add = (role: 'leader' | 'standby') => {
    const id = `${s.name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}-${seq++}`;
    const m = { id, proc: s.launch(id, role) };
    members.push(m);
    return m;
  };
  let leaderId = '';
  const t0 = performance.now();
  try {
    log(`${s.name}: starting 1 leader and ${N} standbys`);
    const first = add('leader');
    await waitFor('the first leader', () => s.timeline.sightings.some((x) => x.holder === first.id), 60_000);
    leaderId = first.id;
    // In batches, so start-up (a few hundred ms of CPU each) does not starve the leader's renewals.
    for (let b = 0; b < N; b += 10) {
      const batch = Array.from({ length: Math.min(10, N - b) }, () => add('standby'));
      await waitFor(`standbys ${b + 1}-${b + batch.length} to see the leader`, () => batch.every((m) => s.sawHolder(m, leaderId)), 120_000);
    }
    const startupS = (performance.now() - t0) / 1000;
    log(`${s.name}: ${members.length} candidates up in ${startupS.toFixed(0)} s; settling`);
    await sleep(10_000);

    // Idle: requests, RSS, CPU.
    const cpuBefore = members.map((m) => cpuTicks(m.proc.pid));
    const apiPid = s.apiserverPid?.();
    const apiBefore = apiPid ? cpuTicks(apiPid) : 0;
    const win = await s.window(
      () => members,
      () => leaderId,
    );
    const w0 = performance.now();
    log(`${s.name}: idle window of ${idleSeconds} s`);
    await sleep(idleSeconds * 1000);
    const seconds = (performance.now() - w0) / 1000;
    const counted = await win.close();
    const cpuSumPct = (members.reduce((a, m, i) => a + cpuTicks(m.proc.pid) - cpuBefore[i]!, 0) / HZ / seconds) * 100;
    const apiserverCpuPct = apiPid ? ((cpuTicks(apiPid) - apiBefore) / HZ / seconds) * 100 : null;
    const rssSumMB = members.reduce((a, m) => a + rssMB(m.proc.pid), 0);

    // Handoffs: SIGTERM, then SIGKILL; each killed leader is replaced by a new standby.
    const handoff: number[] = [];
    const afterExpiry: number[] = [];
    const conflicts: number[] = [];
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      for (let i = 0; i < trials; i++) {
        const leader = members.find((m) => m.id === leaderId)!;
        const w = await s.window(
          () => members,
          () => leaderId,
        );
        const k0 = performance.now();
        leader.proc.kill(signal);
        const next = await waitFor('a new holder', () => s.timeline.firstOtherHolder(leader.id, k0), 30_000, 2);
        leaderId = next.holder;
        if (signal === 'SIGTERM') handoff.push(Math.round(next.at - k0));
        else {
          const a = s.timeline.afterExpiry(leader.id, next.holder, leaseMs, k0 - 2 * leaseMs);
          if (a !== undefined) afterExpiry.push(a);
        }
        await leader.proc.exited;
        members.splice(members.indexOf(leader), 1);
        await sleep(1_000); // late tries land in the window too
        conflicts.push((await w.close()).conflicts);
        const fresh = add('standby');
        await waitFor('the replacement to see the leader', () => s.sawHolder(fresh, leaderId), 60_000);
        await sleep(2 * retryMs); // every standby has seen a renewal since (see bench/scenarios/kubernetes.ts)
        log(
          `${s.name} ${signal} ${i + 1}/${trials}: ${signal === 'SIGTERM' ? `${handoff.at(-1)} ms from the signal` : `${afterExpiry.at(-1)} ms after the expiry`}, ${conflicts.at(-1)} conflicts`,
        );
      }
    }
    return {
      setup: s.name,
      standbys: N,
      standbyPerMin: (counted.standbys * 60) / seconds,
      leaderPerMin: (counted.leader * 60) / seconds,
      conflicts: summary(conflicts),
      handoff: summary(handoff),
      afterExpiry: summary(afterExpiry),
      rssSumMB,
      cpuSumPct,
      apiserverCpuPct,
      startupS,
    };
  } finally {
    for (const m of members) m.proc.kill('SIGKILL');
    await Promise.all(members.map((m) => m.proc.exited));
    s.timeline.close();
  }
}

/**
 * leasehold sidecars on one SQLite file; requests and conflicts come from each one's /metrics.
 * Local mode runs on the machine's own Node (here the one running the bench), not the image's:
 * better-sqlite3's addon in node_modules is built for it.
 */
function sqliteSetup(dir: string): Setup {
  const db = join(dir, 'scale.db');
  const t = SQLITE_T;
  let watcher: SqliteLeaseStore | null = null;
  const timeline = new LeaseTimeline((on) => {
    // The file appears with the first candidate; watch it every 2 ms from then on.
    let stop: (() => void) | null = null;
    const timer = setInterval(() => {
      try {
        watcher = new SqliteLeaseStore(db, { readonly: true });
        stop = watcher.watch('scale', on, undefined, { everyMs: 2 });
        clearInterval(timer);
      } catch {
        // not created yet
      }
    }, 20);
    return () => {
      clearInterval(timer);
      stop?.();
      void watcher?.close();
    };
  });
  const requests = async (members: Member[]) => {
    const out = new Map<string, { total: number; conflicts: number }>();
    await Promise.all(
      members.map(async (m) => {
        const listen = /"listen":"([^"]+)"/.exec(m.proc.stderr())?.[1];
        if (!listen) return;
        try {
          const text = await (await fetch(`http://${listen}/metrics`)).text();
          let total = 0;
          let conflicts = 0;
          for (const line of text.split('\n')) {
            if (!line.startsWith('leasehold_backend_request_duration_seconds_count')) continue;
            const n = Number(line.split(' ').at(-1));
            total += n;
            if (line.includes('result="conflict"')) conflicts += n;
          }
          out.set(m.id, { total, conflicts });
        } catch {
          // a candidate that just exited
        }
      }),
    );
    return out;
  };
  return {
    name: 'SQLite, leasehold',
    timings: t,
    timeline,
    launch: (id) => start(process.execPath, [CLI, 'sidecar', '--db', db, '--lease', 'scale', '--identity', id, '--listen', '127.0.0.1:0', ...timingArgs(t)]),
    sawHolder: (m, id) => m.proc.stderr().includes(`"holder":"${id}"`) || m.id === id,
    async window(members, leaderId) {
      const before = await requests(members());
      return {
        async close() {
          const after = await requests(members());
          let leader = 0;
          let standbys = 0;
          let conflicts = 0;
          for (const [id, a] of after) {
            const b = before.get(id) ?? { total: 0, conflicts: 0 };
            if (id === leaderId()) leader += a.total - b.total;
            else standbys += a.total - b.total;
            conflicts += a.conflicts - b.conflicts;
          }
          // A killed candidate's last conflicts are lost with it; it was the leader, which does not contend.
          return { leader, standbys, conflicts };
        },
      };
    },
  };
}

/** leasehold or client-go on one API server; requests and conflicts come from its audit log. */
function kubeSetup(cp: ControlPlane, admin: KubeClient, ns: string, impl: 'leasehold' | 'client-go', node: ReturnType<typeof imageNode>, goBin: string): Setup {
  const t = FAST_T;
  const watcher = new KubernetesLeaseStore(admin, ns);
  const timeline = new LeaseTimeline((on) => watcher.watch('scale', on));
  return {
    name: `Kubernetes, ${impl}`,
    timings: t,
    timeline,
    apiserverPid: () => cp.pids().apiserver,
    // The first leader is its own user, so the idle window tells its requests from the standbys'.
    launch: (id, role) =>
      startKubeCandidate(impl, node, goBin, {
        kubeconfig: cp.userKubeconfigs[role === 'leader' ? 'scale-leader' : 'scale-standby']!,
        namespace: ns,
        lease: 'scale',
        identity: id,
        timings: t,
      }),
    sawHolder: (m, id) => m.id === id || (impl === 'leasehold' ? m.proc.stderr() : m.proc.stdout()).includes(`"holder":"${id}"`),
    async window() {
      await sleep(200); // the audit log is written asynchronously: let earlier events land first
      const from = auditBytes(cp.auditLog!);
      return {
        async close() {
          await sleep(500);
          let leader = 0;
          let standbys = 0;
          let conflicts = 0;
          for (const e of auditEventsSince(cp.auditLog!, from)) {
            if (!countsAsRequest(e)) continue;
            if (e.user.username === 'scale-leader') leader++;
            else if (e.user.username === 'scale-standby') standbys++;
            else continue;
            if (e.responseStatus?.code === 409 && (e.verb === 'update' || e.verb === 'create')) conflicts++;
          }
          return { leader, standbys, conflicts };
        },
      };
    },
  };
}

function scaleMarkdown(rows: ScaleRow[], N: number, trials: number, idleSeconds: number): string {
  const f1 = (n: number) => n.toFixed(1);
  const ms = (s: ReturnType<typeof summary>) => `${s.median} / ${s.p95} ms`;
  const body = rows
    .map(
      (r) =>
        `| ${r.setup} | ${f1(r.standbyPerMin)} | ${f1(r.standbyPerMin / N)} | ${f1(r.leaderPerMin)} | ${f1(r.conflicts.median)} / ${r.conflicts.p95} (max ${Math.max(...r.conflicts.samples)}) | ${ms(r.handoff)} | ${ms(r.afterExpiry)} | ${f1(r.rssSumMB / 1024)} GiB | ${f1(r.cpuSumPct)} % | ${r.apiserverCpuPct === null ? '' : `${f1(r.apiserverCpuPct)} %`} | ${r.startupS.toFixed(0)} s |`,
    )
    .join('\n');
  return `1 leader and ${N} standbys on one lease, every candidate a real process on this machine
(leasehold on Kubernetes with the image's Node and flags; on SQLite, local mode, with the Node running the bench). Timings ${SQLITE_T.lease} / ${SQLITE_T.deadline} / ${SQLITE_T.retry} on SQLite and
${FAST_T.lease} / ${FAST_T.deadline} / ${FAST_T.retry} on Kubernetes, as in the two-candidate rows above. Requests are counted over a
${idleSeconds} s idle window (Kubernetes: the API server's audit log, the first leader and the standbys as two users;
SQLite: each sidecar's \`leasehold_backend_request_duration_seconds_count\`). Conflicts are the
writes that lost their compare-and-swap (HTTP 409 on Kubernetes) in each handoff, ${trials} SIGTERM and
${trials} SIGKILL; a new standby replaces every killed leader. Handoff: SIGTERM to the new holder seen by
the bench's watch. Failover: SIGKILL, the new holder's \`acquireTime\` minus the crashed leader's last \`renewTime\` + the
lease duration (the true expiry, from the records).
RSS and CPU are summed over all ${N + 1} candidates; CPU is the share of one core over the idle window.

| setup | standbys' requests/min (all) | per standby | leader's | conflicts per handoff, median / p95 | handoff median / p95 | failover after expiry median / p95 | RSS sum | CPU sum | API server CPU | start-up |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${body}
`;
}

export const scaleHeading = (o: BenchOptions) => `## One lease, ${o.standbys} standbys`;

export const scalePhase: Phase<ScaleBenchResult> = {
  name: 'scale',
  what: (o) => `1 leader + ${o.standbys} standbys on SQLite and on Kubernetes (leasehold and client-go): requests, conflicts, handoffs, RSS, CPU`,
  needsRoot: false,
  inFullRun: true,
  estimateS: (o) => 3 * (o.standbys * 0.8 + 10 + o.idleSeconds + o.scaleTrials * 2 * 8),
  heading: scaleHeading,
  section: (r, ctx) =>
    `${scaleHeading(ctx.opts)}\n\n_This section was re-measured by \`npm run bench -- --only scale --splice\` on ${ctx.today}, after the full run; the summary and goals tables above quote the full run's figures._\n\n${r.markdown}\n`,
  run: (ctx) =>
    benchScale({ standbys: ctx.opts.standbys, trials: ctx.opts.scaleTrials, idleSeconds: ctx.opts.idleSeconds, log: ctx.log, setups: ctx.opts.scaleSetups }),
};
