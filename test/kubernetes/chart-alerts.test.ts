/**
 * The chart's alert rules, checked by the real tools: the PrometheusRule rendered by helm is
 * loaded by `promtool check rules`, and `promtool test rules` runs alerts/rules-test.yaml on it
 * (every alert fires in one case and stays silent in another). promtool is built once from the
 * Go module proxy into the cache (test/support/build-prometheus.sh).
 */
import { after, describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, loadAll } from 'js-yaml';
import { REPO, tempDir } from '../support/cli.js';
import { buildTool } from '../support/build-tool.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
const RULES_TEST = join(REPO, 'test/kubernetes/alerts/rules-test.yaml');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
}
interface PrometheusRule {
  kind: string;
  metadata: { name: string; labels: Record<string, string> };
  spec: { groups: { name: string; rules: Rule[] }[] };
}

describe('the chart alert rules, checked by promtool', () => {
  let helmBin = '';
  let promtool = '';
  const dir = tempDir('leasehold-alerts-');
  before(() => {
    helmBin = buildTool('build-helm.sh');
    promtool = join(buildTool('build-prometheus.sh'), 'promtool');
  });
  after(() => dir.cleanup());

  function render(set: string[]): PrometheusRule[] {
    return renderAll(set).filter((d): d is PrometheusRule => d.kind === 'PrometheusRule');
  }

  /** `helm template` of the chart with these `--set` values: its exit status, output and errors. */
  function helmTemplate(set: string[]) {
    const home = join(dir.path, 'helm');
    return spawnSync(helmBin, ['template', 'demo', CHART, '--namespace', 'apps', '--kube-version', '1.37.0', ...set.flatMap((s) => ['--set', s])], {
      encoding: 'utf8',
      env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home },
    });
  }

  function renderAll(set: string[]): { kind: string }[] {
    const r = helmTemplate(set);
    assert.equal(r.status, 0, r.stderr);
    return (loadAll(r.stdout) as ({ kind: string } | null)[]).filter((d): d is { kind: string } => d !== null);
  }

  /** Writes the rule groups as a Prometheus rules file in `into`, and returns its path. */
  function rulesFile(rule: PrometheusRule, into: string): string {
    const path = join(into, 'rules.yaml');
    writeFileSync(path, dump({ groups: rule.spec.groups }));
    return path;
  }

  const promtoolRun = (args: string[]) => spawnSync(promtool, args, { encoding: 'utf8', cwd: dir.path });

  it("the alerts and the dashboard query the job the chart's own ServiceMonitor gives the sidecars", () => {
    const docs = renderAll(['metrics.prometheusRule.enabled=true', 'metrics.grafanaDashboard.enabled=true', 'metrics.serviceMonitor.enabled=true']) as {
      kind: string;
      metadata: { name: string; labels?: Record<string, string> };
      spec?: { jobLabel?: string; endpoints?: { port: string }[] };
      data?: Record<string, string>;
    }[];
    const monitor = docs.find((d) => d.kind === 'ServiceMonitor')!;
    // The Prometheus Operator names the job after the Service, or after the Service's jobLabel label when set.
    const scraped = docs.filter((d) => d.kind === 'Service' && d.metadata.name.endsWith('-metrics'));
    assert.equal(scraped.length, 1);
    const svc = scraped[0]!;
    const job = (monitor.spec!.jobLabel && svc.metadata.labels?.[monitor.spec!.jobLabel]) || svc.metadata.name;
    const rule = docs.find((d) => d.kind === 'PrometheusRule') as unknown as PrometheusRule;
    const down = rule.spec.groups[0]!.rules.find((r) => r.alert === 'LeaseholdSidecarDown')!;
    assert.match(down.expr, new RegExp(`up\\{job="${job}"`), `SidecarDown watches job ${job}: ${down.expr}`);
    const dashboard = Object.values(docs.find((d) => d.kind === 'ConfigMap' && d.data)!.data!).join('');
    const jobs = new Set([...dashboard.matchAll(/job=\\?"([^"\\]+)/g)].map((m) => m[1]));
    assert.deepEqual([...jobs], [job], 'every dashboard query that names a job names the scraped one');
  });

  it('refuses alertLabels that would replace the labels every alert carries (lease, release, severity)', () => {
    for (const key of ['lease', 'release', 'severity']) {
      const r = helmTemplate(['metrics.prometheusRule.enabled=true', `metrics.prometheusRule.alertLabels.${key}=x`]);
      assert.notEqual(r.status, 0, `alertLabels.${key} was accepted`);
      assert.match(r.stderr, /alertLabels/);
    }
    assert.ok(render(['metrics.prometheusRule.enabled=true', 'metrics.prometheusRule.alertLabels.team=billing'])[0], 'any other label is accepted');
  });

  it('renders no PrometheusRule unless asked', () => {
    assert.deepEqual(render([]), []);
  });

  it('with the default timings: promtool check rules passes, and every alert fires and stays silent in rules-test.yaml', () => {
    const [rule] = render(['metrics.prometheusRule.enabled=true']);
    assert.ok(rule);
    assert.deepEqual(
      rule.spec.groups[0]!.rules.map((r) => r.alert),
      [
        'LeaseholdNoLeader',
        'LeaseholdMultipleLeaders',
        'LeaseholdRenewalsFailing',
        'LeaseholdFlapping',
        'LeaseholdNoEligibleCandidate',
        'LeaseholdHealthStepDowns',
        'LeaseholdShardWithoutOwner',
        'LeaseholdStatusNotWritable',
        'LeaseholdSidecarDown',
      ],
    );
    const check = promtoolRun(['check', 'rules', rulesFile(rule, dir.path)]);
    assert.equal(check.status, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /SUCCESS: 9 rules found/);
    copyFileSync(RULES_TEST, join(dir.path, 'rules-test.yaml'));
    const test = promtoolRun(['test', 'rules', 'rules-test.yaml']);
    assert.equal(test.status, 0, test.stdout + test.stderr);
    assert.match(test.stdout, /SUCCESS/);
  });

  it("in shard mode (shards.count): a group's alerts only, which promtool loads; LeaseholdShardWithoutOwner as with a lease", () => {
    const [rule] = render(['metrics.prometheusRule.enabled=true', 'shards.count=16']);
    const by = Object.fromEntries(rule!.spec.groups[0]!.rules.map((r) => [r.alert, r]));
    // No lease is campaigned for: the leader's series are absent, and their alerts would watch nothing.
    assert.deepEqual(Object.keys(by), ['LeaseholdNoEligibleCandidate', 'LeaseholdShardWithoutOwner', 'LeaseholdStatusNotWritable', 'LeaseholdSidecarDown']);
    assert.equal(by.LeaseholdShardWithoutOwner!.expr, 'min by (namespace, group) (leasehold_shards_orphaned{group="demo-leasehold",namespace="apps"}) > 0');
    assert.equal(by.LeaseholdShardWithoutOwner!.for, '49s');
    const sub = join(dir.path, 'shards');
    mkdirSync(sub);
    const check = promtoolRun(['check', 'rules', rulesFile(rule!, sub)]);
    assert.equal(check.status, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /SUCCESS: 4 rules found/);
  });

  it('every for and window derives from the chart timings and the scrape interval', () => {
    const [rule] = render([
      'metrics.prometheusRule.enabled=true',
      'leasehold.leaseDuration=30s',
      'leasehold.renewDeadline=20s',
      'leasehold.retryPeriod=2500ms',
      'metrics.serviceMonitor.interval=1m',
    ]);
    const by = Object.fromEntries(rule!.spec.groups[0]!.rules.map((r) => [r.alert, r]));
    assert.equal(by.LeaseholdNoLeader!.for, '95s', '30s + 2 × 2.5s + 60s');
    assert.equal(by.LeaseholdMultipleLeaders!.for, '120s', 'two scrapes');
    assert.match(by.LeaseholdRenewalsFailing!.expr, /\[140s\]\)\) >= 2 or /, 'two failures within 2 × 60s + 20s');
    assert.equal(by.LeaseholdSidecarDown!.for, '120s');
    assert.equal(by.LeaseholdShardWithoutOwner!.for, '95s', 'as LeaseholdNoLeader: a new group owns nothing for a lease duration');
    const sub = join(dir.path, 'slow');
    mkdirSync(sub);
    const check = promtoolRun(['check', 'rules', rulesFile(rule!, sub)]);
    assert.equal(check.status, 0, check.stdout + check.stderr);
  });

  it('the app-health alerts take their for, threshold and window from values, and select the lease by its name label', () => {
    const [rule] = render([
      'metrics.prometheusRule.enabled=true',
      'metrics.prometheusRule.notEligibleFor=10m',
      'metrics.prometheusRule.healthStepDowns=6',
      'metrics.prometheusRule.healthStepDownsWindow=2h',
    ]);
    const by = Object.fromEntries(rule!.spec.groups[0]!.rules.map((r) => [r.alert, r]));
    assert.equal(by.LeaseholdNoEligibleCandidate!.for, '10m');
    assert.equal(by.LeaseholdNoEligibleCandidate!.expr, 'max by (namespace, name) (leasehold_app_eligible{name="demo-leasehold",namespace="apps"}) == 0');
    assert.equal(by.LeaseholdHealthStepDowns!.expr, 'sum(increase(leasehold_health_step_downs_total{name="demo-leasehold",namespace="apps"}[2h])) > 6');
    const check = promtoolRun(['check', 'rules', rulesFile(rule!, dir.path)]);
    assert.equal(check.status, 0, check.stdout + check.stderr);
  });

  it('labels route per lease and per release, plus the user labels; the selector narrows every expression', () => {
    const [rule] = render([
      'metrics.prometheusRule.enabled=true',
      'leasehold.lease=jobs',
      'metrics.prometheusRule.alertLabels.team=payments',
      'metrics.prometheusRule.labels.release=prometheus',
      'metrics.prometheusRule.selector=cluster="prod"\\,namespace="apps"',
      'metrics.prometheusRule.job=scraped-sidecars',
    ]);
    assert.equal(rule!.metadata.labels.release, 'prometheus', 'the operator selects the PrometheusRule by its labels');
    for (const r of rule!.spec.groups[0]!.rules) {
      assert.equal(r.labels.lease, 'jobs', r.alert);
      assert.equal(r.labels.release, 'demo', r.alert);
      assert.equal(r.labels.team, 'payments', r.alert);
      assert.match(r.labels.severity!, /^(critical|warning)$/, r.alert);
      assert.ok(r.expr.includes('cluster="prod",namespace="apps"'), `${r.alert}: ${r.expr}`);
    }
    assert.match(rule!.spec.groups[0]!.rules.at(-1)!.expr, /^up\{job="scraped-sidecars",/);
    const check = promtoolRun(['check', 'rules', rulesFile(rule!, dir.path)]);
    assert.equal(check.status, 0, check.stdout + check.stderr);
  });

  it('the Grafana dashboard: a ConfigMap the Grafana sidecar picks up, every query narrowed to this lease', () => {
    assert.deepEqual(
      renderAll([]).filter((d) => d.kind === 'ConfigMap'),
      [],
    );
    const [cm] = renderAll(['metrics.grafanaDashboard.enabled=true', 'leasehold.lease=jobs']).filter((d) => d.kind === 'ConfigMap') as unknown as {
      metadata: { labels: Record<string, string> };
      data: Record<string, string>;
    }[];
    assert.equal(cm!.metadata.labels.grafana_dashboard, '1');
    const json = cm!.data['leasehold-jobs.json']!;
    assert.doesNotMatch(json, /__[A-Z]+_SELECTOR__|__TITLE__|__UID__/);
    const dash = JSON.parse(json) as { title: string; panels: { title: string; targets: { expr: string }[] }[] };
    assert.equal(dash.title, 'leasehold: jobs (apps)');
    const titles = dash.panels.map((p) => p.title);
    for (const t of [
      'Leader',
      'Fencing token',
      'Standbys',
      'Handoffs',
      'Leaderless',
      'Renewal latency',
      'Store requests',
      'Sidecar memory',
      'Sidecar CPU',
      'App eligible',
      'Shards',
    ]) {
      assert.ok(titles.includes(t), t);
    }
    for (const p of dash.panels)
      for (const t of p.targets) assert.match(t.expr, /\{(name|lease|job|group)="(jobs|demo-leasehold)",namespace="apps"[,}]/, `${p.title}: ${t.expr}`);
  });

  it('refuses a selector that is not PromQL label matchers, naming the value', () => {
    const home = join(dir.path, 'helm');
    const r = spawnSync(
      helmBin,
      [
        'template',
        'demo',
        CHART,
        '--kube-version',
        '1.37.0',
        '--set',
        'metrics.prometheusRule.enabled=true',
        '--set',
        'metrics.prometheusRule.selector=}) or vector(1',
      ],
      { encoding: 'utf8', env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home } },
    );
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /prometheusRule\/selector/);
  });
});
