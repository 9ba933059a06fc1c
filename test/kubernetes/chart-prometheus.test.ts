/**
 * The chart's alert rules and dashboard queries, evaluated by a real Prometheus (built once
 * from the Go module proxy: test/support/build-prometheus.sh) scraping real sidecar processes on
 * this machine, each target labelled as a ServiceMonitor labels a pod (job, namespace, pod).
 * Each sidecar probes a TCP port of this test as its app (--health-tcp), so the app-health
 * series exist. The rules are the chart's, rendered with short timings and a 1 s scrape interval:
 *   - healthy: no alert fires, and every dashboard query returns data;
 *   - the store locked under the leader: its renewals fail, LeaseholdRenewalsFailing fires;
 *   - every sidecar stopped: LeaseholdNoLeader and LeaseholdSidecarDown fire within their
 *     `for` plus a scrape interval.
 * Beside the lease's three candidates, one member of a shard group of the same name (sidecar
 * --shards), so the shard panel has data; its app failing leaves every shard without an owner,
 * and LeaseholdShardWithoutOwner fires.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { dump, loadAll } from 'js-yaml';
import { REPO, start, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { validLeaders, type Candidate } from '../support/sidecars.js';
import { buildTool } from '../support/build-tool.js';
import { freePort } from '../support/control-plane.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
const LEASE = 'observed';
const TIMINGS = { leaseDuration: '4s', renewDeadline: '3s', retryPeriod: '500ms' };
const SCRAPE_S = 1;
// LeaseholdNoLeader's `for` with these: 4s + 2 × 500ms + the 1s scrape interval.
const NO_LEADER_FOR_S = 6;

interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

describe('the chart rules and dashboard on a real Prometheus scraping real sidecars', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  let prometheusDir = '';
  let helmBin = '';
  // The sidecars' app: a TCP port that accepts, their health source, so the app-health panel has data.
  const app = createServer((socket) => socket.end());
  // The shard member's app, of its own: closed to make it fail.
  const shardApp = createServer((socket) => socket.end());
  before(async () => {
    helmBin = buildTool('build-helm.sh');
    prometheusDir = buildTool('build-prometheus.sh');
    await new Promise<void>((res) => app.listen(0, '127.0.0.1', res));
    await new Promise<void>((res) => shardApp.listen(0, '127.0.0.1', res));
  });
  after(async () => {
    await new Promise<void>((res) => app.close(() => res()));
    if (shardApp.listening) await new Promise<void>((res) => shardApp.close(() => res()));
  });

  function render(): { groups: unknown; dashboard: { panels: { title: string; targets: { expr: string }[] }[] } } {
    const home = join(dir.path, 'helm');
    const set = [
      'metrics.prometheusRule.enabled=true',
      'metrics.grafanaDashboard.enabled=true',
      `leasehold.lease=${LEASE}`,
      `leasehold.leaseDuration=${TIMINGS.leaseDuration}`,
      `leasehold.renewDeadline=${TIMINGS.renewDeadline}`,
      `leasehold.retryPeriod=${TIMINGS.retryPeriod}`,
      `metrics.serviceMonitor.interval=${SCRAPE_S}s`,
    ];
    const r = spawnSync(helmBin, ['template', 'demo', CHART, '--namespace', 'apps', '--kube-version', '1.37.0', ...set.flatMap((s) => ['--set', s])], {
      encoding: 'utf8',
      env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home },
    });
    assert.equal(r.status, 0, r.stderr);
    const docs = (loadAll(r.stdout) as ({ kind: string; spec?: { groups: unknown }; data?: Record<string, string> } | null)[]).filter((d) => d !== null);
    const rule = docs.find((d) => d.kind === 'PrometheusRule')!;
    const cm = docs.find((d) => d.kind === 'ConfigMap' && d.data?.[`leasehold-${LEASE}.json`])!;
    return { groups: rule.spec!.groups, dashboard: JSON.parse(cm.data![`leasehold-${LEASE}.json`]!) as ReturnType<typeof render>['dashboard'] };
  }

  it('stays silent while healthy, every dashboard query has data, and the alerts fire as the store and the sidecars fail', { timeout: 240_000 }, async () => {
    const { groups, dashboard } = render();
    const db = join(dir.path, 'leases.db');
    const cands: (Candidate & { port: number })[] = [];
    const startOne = async (id: string, port?: number) => {
      port ??= await freePort();
      const statusDir = join(dir.path, `status-${id}`);
      const proc = startCli([
        'sidecar',
        ...['--db', db, '--lease', LEASE, '--identity', id, '--status-dir', statusDir, '--listen', `127.0.0.1:${port}`],
        ...['--lease-duration', TIMINGS.leaseDuration, '--renew-deadline', TIMINGS.renewDeadline, '--retry-period', TIMINGS.retryPeriod],
        ...['--health-tcp', `127.0.0.1:${(app.address() as AddressInfo).port}`, '--health-period', '500ms', '--health-timeout', '500ms'],
      ]);
      procs.push(proc);
      return { id, statusDir, proc, port };
    };
    for (const id of ['a', 'b', 'c']) cands.push(await startOne(id));
    // A member of the shard group named as the lease (a table of its own in the same file).
    const shardPort = await freePort();
    const member = startCli([
      'sidecar',
      ...['--shards', '4', '--db', db, '--lease', LEASE, '--identity', 's', '--status-dir', join(dir.path, 'status-s'), '--listen', `127.0.0.1:${shardPort}`],
      ...['--lease-duration', TIMINGS.leaseDuration, '--renew-deadline', TIMINGS.renewDeadline, '--retry-period', TIMINGS.retryPeriod],
      ...[
        '--health-tcp',
        `127.0.0.1:${(shardApp.address() as AddressInfo).port}`,
        '--health-period',
        '500ms',
        '--health-timeout',
        '500ms',
        '--health-hold-down',
        '0s',
      ],
    ]);
    procs.push(member);

    // The labels a ServiceMonitor gives each pod's target: job (the Service), namespace, pod.
    writeFileSync(join(dir.path, 'rules.yaml'), dump({ groups }));
    writeFileSync(
      join(dir.path, 'prometheus.yml'),
      dump({
        global: { scrape_interval: '1s', evaluation_interval: '1s', scrape_timeout: '900ms' },
        rule_files: ['rules.yaml'],
        scrape_configs: [
          {
            job_name: 'demo-leasehold',
            static_configs: [
              ...cands.map((c) => ({ targets: [`127.0.0.1:${c.port}`], labels: { namespace: 'apps', pod: c.id } })),
              { targets: [`127.0.0.1:${shardPort}`], labels: { namespace: 'apps', pod: 's' } },
            ],
          },
        ],
      }),
    );
    const promPort = await freePort();
    mkdirSync(join(dir.path, 'tsdb'));
    const prometheus = start(join(prometheusDir, 'prometheus'), [
      `--config.file=${join(dir.path, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir.path, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ]);
    procs.push(prometheus);
    const api = async <T>(path: string): Promise<T> => {
      const res = await fetch(`http://127.0.0.1:${promPort}${path}`);
      const body = (await res.json()) as { status: string; data: T; error?: string };
      assert.equal(body.status, 'success', `${path}: ${body.error}`);
      return body.data;
    };
    const query = (q: string) => api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(q)}`);
    const alerts = async () => (await api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts;
    const firing = async (name: string) => (await alerts()).filter((a) => a.state === 'firing' && a.labels.alertname === name);
    await waitFor('Prometheus ready', async () => (await fetch(`http://127.0.0.1:${promPort}/-/ready`).catch(() => null))?.status === 200, 60_000, 100);

    // Healthy: one leader, every target up, for longer than the longest `for` of the rules.
    const first = await waitFor('a first leader', () => validLeaders(cands)[0], 30_000);
    await waitFor(
      'one leader seen by Prometheus',
      async () => (await query(`sum(leader_election_master_status{name="${LEASE}"})`)).result[0]?.value[1] === '1',
      30_000,
      200,
    );
    // The new group's shards are owned once a lease duration has passed (shards never seen wait that long).
    await waitFor(
      'every shard owned, as Prometheus sees it',
      async () => (await query(`min(leasehold_shards_orphaned{group="${LEASE}"})`)).result[0]?.value[1] === '0',
      30_000,
      200,
    );
    const healthySince = Date.now() / 1000;
    const evaluatedPast = async (t: number) => {
      const rules = await api<{ groups: { lastEvaluation: string }[] }>('/api/v1/rules');
      return rules.groups.every((g) => Date.parse(g.lastEvaluation) / 1000 > t);
    };
    await waitFor('the rules evaluated past the longest for', () => evaluatedPast(healthySince + NO_LEADER_FOR_S + 2), 30_000, 200);
    assert.deepEqual(await alerts(), [], 'healthy: no alert pending or firing');

    // A handoff, so the takeover histogram has a rate; then every dashboard query has data.
    first.c.proc.kill('SIGTERM');
    const restarted = cands.find((c) => c === first.c)!;
    await restarted.proc.exited;
    cands[cands.indexOf(restarted)] = await startOne(restarted.id, restarted.port);
    await waitFor('a new leader', () => validLeaders(cands).find((l) => l.c.id !== first.c.id), 10_000);
    for (const p of dashboard.panels) {
      for (const t of p.targets) {
        const r = await waitFor(
          `data for "${p.title}": ${t.expr}`,
          async () => {
            const got = await query(t.expr);
            return got.result.some((s) => !Number.isNaN(Number(s.value[1]))) && got;
          },
          30_000,
          250,
        );
        assert.ok(r.result.length > 0);
      }
    }

    // The member's app fails: it leaves, giving every shard up, and nobody else can take them.
    const failedAt = Date.now();
    await new Promise<void>((res) => shardApp.close(() => res()));
    const orphans = await waitFor('LeaseholdShardWithoutOwner', async () => (await firing('LeaseholdShardWithoutOwner'))[0], 30_000, 250);
    const orphanedS = (Date.now() - failedAt) / 1000;
    // Three failed probes (1.5 s), the give-up, a scrape, then the rule's `for`.
    assert.ok(orphanedS <= NO_LEADER_FOR_S + SCRAPE_S + 5, `LeaseholdShardWithoutOwner fired ${orphanedS} s after the app failed`);
    assert.deepEqual([orphans.labels.group, orphans.labels.lease, orphans.labels.severity], [LEASE, LEASE, 'critical']);
    assert.deepEqual(await firing('LeaseholdNoLeader'), [], "the lease's alerts do not count the group's member");

    // Renewals made to fail: a write transaction held open on the file locks the leader out.
    const leader = await waitFor('the leader', () => validLeaders(cands)[0], 10_000);
    const locker = start(process.execPath, [
      '-e',
      `const db = new (require('better-sqlite3'))(${JSON.stringify(db)}); db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`,
    ]);
    procs.push(locker);
    await waitFor('the lock', () => locker.stdout().includes('locked'), 10_000);
    const renewal = await waitFor('LeaseholdRenewalsFailing', async () => (await firing('LeaseholdRenewalsFailing'))[0], 30_000, 250).catch(
      async (err: Error) => {
        const seen = await query(`leasehold_renew_failures_total{lease="${LEASE}"}[30s]`.replace('[30s]', ''));
        throw new Error(
          `${err.message}; failures ${JSON.stringify(seen.result)}; alerts ${JSON.stringify(await alerts())}; leader log ${leader.c.proc.stderr().slice(-1500)}`,
        );
      },
    );
    assert.equal(renewal.labels.pod, leader.c.id);
    assert.equal(renewal.labels.lease, LEASE);
    assert.equal(renewal.labels.release, 'demo');
    locker.child.stdin!.end();
    await locker.exited;
    await waitFor('a leader again', () => validLeaders(cands)[0], 30_000);

    // Every sidecar's process stopped: no leader, and every target down.
    const stoppedAt = Date.now();
    for (const c of cands) c.proc.kill('SIGSTOP');
    const noLeader = await waitFor('LeaseholdNoLeader', async () => (await firing('LeaseholdNoLeader'))[0], 60_000, 250);
    const tookS = (Date.now() - stoppedAt) / 1000;
    assert.ok(tookS <= NO_LEADER_FOR_S + SCRAPE_S + 3, `LeaseholdNoLeader fired ${tookS} s after the stop`);
    assert.equal(noLeader.labels.severity, 'critical');
    const down = await waitFor(
      'LeaseholdSidecarDown for all three',
      async () => ((await firing('LeaseholdSidecarDown')).length === 3 ? true : undefined),
      30_000,
      250,
    );
    assert.ok(down);
    assert.deepEqual(await firing('LeaseholdMultipleLeaders'), []);
    for (const c of cands) c.proc.kill('SIGCONT');
  });
});
