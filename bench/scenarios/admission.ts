/**
 * Admission cost of the two injections (issue 44), policy against webhook, on one real
 * kube-apiserver started here (test/support/control-plane.ts, no kubelet): the chart's
 * MutatingAdmissionPolicy and ValidatingAdmissionPolicy as `helm template` renders them with
 * `injection.mode=policy`, and `leasehold operator` on this host serving the webhook through a
 * url clientConfig (test/support/operator-process.ts), each selecting a value of
 * leasehold.io/inject of its own, side by side. A third arm, unlabelled pods, is the control:
 * neither injector sees them.
 *
 * Each creation is a server-side dry run (`?dryRun=All`): admission runs in full (mutation,
 * validation) and nothing is stored, so the run measures admission and not etcd or a kubelet.
 * Creations are sent open loop at a fixed rate (each on its schedule, answered or not); the arms
 * alternate in blocks (webhook, policy, control, then the reverse), so a change in the machine's
 * load weighs on each alike. Both operators run throughout: the webhook one answers its arm, the
 * policy one (`--injection-mode policy`) only elects and watches; each process's RSS (/proc) is
 * read idle, at its peak during the blocks (one reading every 250 ms) and after them.
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { cpus, loadavg } from 'node:os';
import { KubeClient } from '../../src/kube/api-client.js';
import { loadConnection } from '../../src/kube/kubeconfig.js';
import { REPO, startCli, waitFor, type Proc } from '../../test/support/cli.js';
import { freePort, startControlPlane } from '../../test/support/control-plane.js';
import { buildTool } from '../../test/support/build-tool.js';
import { webhookConfiguration } from '../../test/support/operator-process.js';
import { rssMB } from '../lib/proc-stats.js';
import { quantiles, type Quantiles } from '../lib/quantile.js';
import type { Phase } from '../phase.js';

const CHART = join(REPO, 'deploy/helm/leasehold-operator');
const POLICY = 'lho-admission-bench';
const WEBHOOK = 'lho-admission-bench';
const ARMS = ['webhook', 'policy', 'control'] as const;
type Arm = (typeof ARMS)[number];
/** Each arm's namespace and its pods' leasehold.io/inject value (none for the control). */
const NS: Record<Arm, string> = { webhook: 'admission-webhook', policy: 'admission-policy', control: 'admission-control' };
const INJECT: Record<Arm, string | undefined> = { webhook: 'bench-webhook', policy: 'bench-policy', control: undefined };
/** Each operator's own namespace: its Lease (and the webhook's Secrets) apart from the other's. */
const OPS: Record<'webhook' | 'policy', string> = { webhook: 'admission-ops-webhook', policy: 'admission-ops-policy' };
const BLOCKS_PER_ARM = 4;
const WARM_UP = 20;
/** The operators read as idle once they have run this long (elected, watches open, first passes done). */
const SETTLE_MS = 20_000;
const AFTER_MS = 10_000;
const DEFAULT_SECONDS = 30;

export interface AdmissionBenchResult {
  arms: Record<Arm, Quantiles>;
  markdown: string;
}

interface Rss {
  idle: number;
  peak: number;
  after: number;
}

function pod(arm: Arm) {
  const inject = INJECT[arm];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${arm}-`,
      labels: { app: 'admission-bench', ...(inject ? { 'leasehold.io/inject': inject } : {}) },
      annotations: { 'leasehold.io/lease': 'admission-bench' },
    },
    spec: { containers: [{ name: 'app', image: 'localhost/busybox:local', command: ['sleep', '3600'] }] },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchAdmission(o: { seconds: number; rate: number }, log: (m: string) => void): Promise<AdmissionBenchResult> {
  const started = Date.now();
  log('admission: starting a control plane');
  const cp = await startControlPlane();
  const kubectl = (args: string[], input?: string) => {
    const r = spawnSync(join(cp.binDir, 'kubectl'), ['--kubeconfig', cp.adminKubeconfig, ...args], { input, encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.error?.message ?? r.stderr}`);
    return r.stdout;
  };
  const client = new KubeClient(loadConnection(cp.adminKubeconfig));
  const operators: Proc[] = [];
  try {
    for (const ns of [...Object.values(NS), ...Object.values(OPS)]) kubectl(['create', 'namespace', ns]);
    // No controller-manager here: the ServiceAccount admission plugin needs each namespace's default made by hand.
    for (const ns of Object.values(NS)) kubectl(['create', 'serviceaccount', 'default', '-n', ns]);

    const webhookPort = await freePort();
    kubectl(
      ['create', '-f', '-'],
      JSON.stringify(webhookConfiguration({ name: WEBHOOK, port: webhookPort, failurePolicy: 'Fail', namespaces: [NS.webhook], injectValue: INJECT.webhook })),
    );
    const common = (mode: 'webhook' | 'policy', port: number) => [
      'operator',
      '--kubeconfig',
      cp.adminKubeconfig,
      '--namespace',
      OPS[mode],
      '--identity',
      `bench-${mode}`,
      '--injection-mode',
      mode,
      '--listen',
      `127.0.0.1:${port}`,
      '--sidecar-image',
      'leasehold:bench',
      '--inject-value',
      INJECT[mode]!,
    ];
    const webhookOp = startCli([...common('webhook', webhookPort), '--webhook-configuration', WEBHOOK, '--extra-host', '127.0.0.1']);
    operators.push(webhookOp);
    const policyOp = startCli(common('policy', await freePort()));
    operators.push(policyOp);
    const opStarted = Date.now();

    // The chart's policies as an install renders them, kept off the webhook's and the control's namespaces.
    const helmHome = join(cp.dir, 'helm');
    const t = spawnSync(
      buildTool('build-helm.sh'),
      [
        'template',
        POLICY,
        CHART,
        '--namespace',
        OPS.policy,
        '--kube-version',
        '1.37.0',
        '-s',
        'templates/admission-policy.yaml',
        '-s',
        'templates/validating-policy.yaml',
        ...[
          'injection.mode=policy',
          `fullnameOverride=${POLICY}`,
          `webhook.injectValue=${INJECT.policy}`,
          'image.repository=leasehold',
          'image.tag=bench',
        ].flatMap((s) => ['--set', s]),
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, HELM_CACHE_HOME: join(helmHome, 'c'), HELM_CONFIG_HOME: join(helmHome, 'g'), HELM_DATA_HOME: join(helmHome, 'd') },
      },
    );
    if (t.status !== 0) throw new Error(`helm template: ${t.stderr}`);
    kubectl(['create', '-f', '-'], t.stdout);

    const dryRun = (arm: Arm) =>
      client.request<{ spec: { containers: { name: string }[] } }>('POST', `/api/v1/namespaces/${NS[arm]}/pods?dryRun=All`, { body: pod(arm) });
    // Admission sees new configurations and policies through its informers: wait until each injects.
    for (const arm of ['webhook', 'policy'] as const) {
      await waitFor(
        `the ${arm} to inject`,
        async () => (await dryRun(arm).catch(() => undefined))?.spec.containers.some((c) => c.name === 'leasehold'),
        60_000,
        200,
      );
    }
    const control = await dryRun('control');
    if (control.spec.containers.some((c) => c.name === 'leasehold')) throw new Error('the control pod was injected');

    const pids = { webhook: webhookOp.pid, policy: policyOp.pid };
    const wait = opStarted + SETTLE_MS - Date.now();
    if (wait > 0) await sleep(wait);
    const rss: Record<'webhook' | 'policy', Rss> = {
      webhook: { idle: rssMB(pids.webhook), peak: 0, after: 0 },
      policy: { idle: rssMB(pids.policy), peak: 0, after: 0 },
    };

    let failures = 0;
    const failureMessages = new Set<string>();
    /** Dry-run creates of n pods of an arm at the rate, open loop; each answered one's latency, ms. */
    const burst = async (arm: Arm, n: number): Promise<{ ms: number[]; seconds: number }> => {
      const ms: number[] = [];
      const inflight: Promise<void>[] = [];
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const w = t0 + (i * 1000) / o.rate - performance.now();
        if (w > 1) await sleep(w);
        const sent = performance.now();
        inflight.push(
          dryRun(arm).then(
            (p) => {
              ms.push(performance.now() - sent);
              if (arm !== 'control' && !p.spec.containers.some((c) => c.name === 'leasehold')) {
                failures++;
                failureMessages.add(`${arm}: admitted without the sidecar`);
              }
            },
            (err: Error) => {
              failures++;
              failureMessages.add(`${arm}: ${err.message.slice(0, 200)}`);
            },
          ),
        );
      }
      const seconds = (performance.now() - t0) / 1000;
      await Promise.all(inflight);
      return { ms, seconds };
    };
    log('admission: warming up (not counted)');
    for (const arm of ARMS) await burst(arm, WARM_UP);
    failures = 0;
    failureMessages.clear();

    const sampler = setInterval(() => {
      for (const m of ['webhook', 'policy'] as const) rss[m].peak = Math.max(rss[m].peak, rssMB(pids[m]));
    }, 250);
    const perArm = Math.round(o.seconds * o.rate);
    const block = Math.ceil(perArm / BLOCKS_PER_ARM);
    const order = Array.from({ length: BLOCKS_PER_ARM }, (_, i) => (i % 2 === 0 ? [...ARMS] : [...ARMS].reverse())).flat();
    const ms: Record<Arm, number[]> = { webhook: [], policy: [], control: [] };
    const wall: Record<Arm, number> = { webhook: 0, policy: 0, control: 0 };
    const load0 = loadavg()[0]!;
    log(`admission: ${block * BLOCKS_PER_ARM} dry-run creations per arm at ${o.rate}/s, in blocks of ${block} (${order.join(', ')})`);
    try {
      for (const arm of order) {
        const r = await burst(arm, block);
        ms[arm].push(...r.ms);
        wall[arm] += r.seconds;
      }
    } finally {
      clearInterval(sampler);
    }
    const load1 = loadavg()[0]!;
    await sleep(AFTER_MS);
    for (const m of ['webhook', 'policy'] as const) rss[m].after = rssMB(pids[m]);
    for (const m of ['webhook', 'policy'] as const)
      if (operators.find((p) => p.pid === pids[m])!.child.exitCode !== null) throw new Error(`the ${m} operator exited`);
    const arms = { webhook: quantiles(ms.webhook), policy: quantiles(ms.policy), control: quantiles(ms.control) };
    log(
      `admission: p99 webhook ${arms.webhook.p99.toFixed(1)} ms, policy ${arms.policy.p99.toFixed(1)} ms, control ${arms.control.p99.toFixed(1)} ms; RSS peak webhook ${rss.webhook.peak.toFixed(1)} MiB, policy ${rss.policy.peak.toFixed(1)} MiB`,
    );
    const markdown = render({
      o,
      block,
      arms,
      rates: { webhook: ms.webhook.length / wall.webhook, policy: ms.policy.length / wall.policy, control: ms.control.length / wall.control },
      rss,
      failures,
      failureMessages: [...failureMessages],
      load: [load0, load1],
      minutes: (Date.now() - started) / 60_000,
    });
    return { arms, markdown };
  } finally {
    for (const p of operators) if (p.child.exitCode === null) p.kill('SIGKILL');
    client.close();
    await cp.stop();
  }
}

interface RenderInput {
  o: { seconds: number; rate: number };
  block: number;
  arms: Record<Arm, Quantiles>;
  rates: Record<Arm, number>;
  rss: Record<'webhook' | 'policy', Rss>;
  failures: number;
  failureMessages: string[];
  load: [number, number];
  minutes: number;
}

function render(r: RenderInput): string {
  const f1 = (n: number) => n.toFixed(1);
  const f2 = (n: number) => n.toFixed(2);
  const what: Record<Arm, string> = {
    webhook: 'webhook: `leasehold operator` on this host, HTTPS',
    policy: "policy: the chart's MutatingAdmissionPolicy and ValidatingAdmissionPolicy",
    control: 'control: unlabelled, neither injects',
  };
  const row = (arm: Arm) => {
    const q = r.arms[arm];
    return `| ${what[arm]} | ${q.n} | ${f1(r.rates[arm])} | ${f1(q.median)} | ${f1(q.p95)} | ${f1(q.p99)} | ${f1(q.max)} |`;
  };
  const over = (arm: 'webhook' | 'policy', k: keyof Quantiles) => f1(r.arms[arm][k] - r.arms.control[k]);
  const rssRow = (m: 'webhook' | 'policy') => `| \`--injection-mode ${m}\` | ${f1(r.rss[m].idle)} | ${f1(r.rss[m].peak)} | ${f1(r.rss[m].after)} |`;
  return `One kube-apiserver 1.37.2 with etcd on this machine (\`test/support/control-plane.ts\`, no kubelet), the
chart's policies rendered by \`helm template\` with \`injection.mode=policy\`, and \`leasehold operator\` on
this host serving the webhook through a url clientConfig (the TLS, the AdmissionReview and the handler
as deployed; no Service or pod network between them). The bench sends server-side dry-run pod
creations (\`?dryRun=All\`: all of admission, nothing stored), ${r.o.rate} per second, open loop, ${r.block * BLOCKS_PER_ARM} per
arm in blocks of ${r.block} alternating webhook, policy, control and back, after ${WARM_UP} of each not
counted. Both operators run throughout. ${r.failures} creations failed or were admitted uninjected${r.failureMessages.length ? ` (${r.failureMessages.map((m) => `\`${m}\``).join('; ')})` : ''}.
Load average (1 min) ${f2(r.load[0])} before the blocks and ${f2(r.load[1])} after, on ${cpus().length} cores shared with
other work; the part took ${Math.round(r.minutes)} min.

| dry-run creation (client side, ms) | n | rate /s | median | p95 | p99 | max |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${row('webhook')}
${row('policy')}
${row('control')}

Over the control (each arm's own quantile minus the control's): webhook ${over('webhook', 'median')} ms at the median and
${over('webhook', 'p99')} ms at p99; policy ${over('policy', 'median')} ms and ${over('policy', 'p99')} ms. Either difference also carries the
larger pod returned.

The operator's RSS (\`/proc/PID/status\`, MiB; Node on this host, not the image's flags): idle
(${SETTLE_MS / 1000} s after it started), the peak of one reading per 250 ms during the blocks, and ${AFTER_MS / 1000} s after
them. In policy mode it serves no webhook, keeps no certificate and loads no mark key.

| operator | RSS idle | peak | after |
| --- | ---: | ---: | ---: |
${rssRow('webhook')}
${rssRow('policy')}
`;
}

export const ADMISSION_HEADING = '## Admission: MutatingAdmissionPolicy against the webhook';

export const admissionPhase: Phase<AdmissionBenchResult> = {
  name: 'admission',
  what: (o) =>
    `admission: dry-run pod creations at ${o.operatorRate}/s for ${o.seconds ?? DEFAULT_SECONDS} s per arm, policy against webhook against unlabelled, and the operator's RSS in each mode`,
  needsRoot: false,
  inFullRun: false,
  estimateS: (o) => 60 + 3 * (o.seconds ?? DEFAULT_SECONDS) + SETTLE_MS / 1000 + AFTER_MS / 1000,
  heading: () => ADMISSION_HEADING,
  section: (r, ctx) =>
    `${ADMISSION_HEADING}\n\n_This section was measured by \`npm run bench -- --only ${ctx.only}${ctx.opts.seconds !== undefined ? ` --seconds ${ctx.opts.seconds}` : ''} --splice\` on ${ctx.today}, apart from the full run._\n\n${r.markdown}`,
  run: (ctx) => benchAdmission({ seconds: ctx.opts.seconds ?? DEFAULT_SECONDS, rate: ctx.opts.operatorRate }, ctx.log),
};
