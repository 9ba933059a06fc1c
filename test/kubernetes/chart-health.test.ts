/**
 * The chart's `health` values, rendered by the real helm: which --health-* flags the sidecar gets
 * from the app's probe or from `health`, which values are refused at template time (one line
 * naming the value and the rule), and what NOTES.txt says when no source is used.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { REPO, tempDir } from '../support/cli.js';
import { buildTool } from '../support/build-tool.js';
import { env } from '../support/kube.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
const KUBELET_DEFAULTS = [
  '--health-period=10s',
  '--health-timeout=1s',
  '--health-initial-delay=0s',
  '--health-failure-threshold=3',
  '--health-success-threshold=1',
];
const timingsOf = (period: number, timeout: number, delay: number, failure: number, success: number) => [
  `--health-period=${period}s`,
  `--health-timeout=${timeout}s`,
  `--health-initial-delay=${delay}s`,
  `--health-failure-threshold=${failure}`,
  `--health-success-threshold=${success}`,
];

/**
 * Replaces the example's readinessProbe: helm merges a map value into the default one, so its
 * keys the new probe does not have are set to null (which removes them).
 */
const probe = (json: string) =>
  `app.readinessProbe=${JSON.stringify({ tcpSocket: null, periodSeconds: null, failureThreshold: null, ...(JSON.parse(json) as object) })}`;

interface Container {
  name: string;
  args?: string[];
  readinessProbe?: unknown;
  livenessProbe?: unknown;
}
interface Doc {
  kind: string;
  spec?: { template?: { spec: { containers: Container[] } } };
}

describe("the chart's health values", () => {
  let helmBin = '';
  const dir = tempDir('leasehold-chart-health-');
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });
  after(() => dir.cleanup());

  function helmTemplate(set: string[], json: string[] = [], extra: string[] = []) {
    const home = join(dir.path, 'helm');
    return spawnSync(
      helmBin,
      [
        'template',
        'demo',
        CHART,
        '--namespace',
        'apps',
        '--kube-version',
        '1.31.0',
        ...set.flatMap((s) => ['--set', s]),
        ...json.flatMap((s) => ['--set-json', s]),
        ...extra,
      ],
      { encoding: 'utf8', env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home } },
    );
  }

  function containers(set: string[], json: string[] = []): Container[] {
    const r = helmTemplate(set, json);
    assert.equal(r.status, 0, r.stderr);
    const docs = (loadAll(r.stdout) as (Doc | null)[]).filter((d): d is Doc => d !== null);
    return docs.find((d) => d.kind === 'Deployment')!.spec!.template!.spec.containers;
  }
  const healthArgs = (set: string[], json: string[] = []) =>
    (containers(set, json).find((c) => c.name === 'leasehold')!.args ?? []).filter((a) => a.startsWith('--health-'));

  it("the example app: its readinessProbe is rendered on the app container and becomes the sidecar's source, timings copied", () => {
    const cs = containers([]);
    assert.deepEqual(cs.find((c) => c.name === 'app')!.readinessProbe, { tcpSocket: { port: 'http' }, periodSeconds: 2, failureThreshold: 2 });
    assert.equal(cs.find((c) => c.name === 'app')!.livenessProbe, undefined);
    assert.deepEqual(healthArgs([]), ['--health-tcp=8080', ...timingsOf(2, 1, 0, 2, 1)]);
  });

  it('every source decision, as a table', () => {
    const noProbe = 'app.readinessProbe=null';
    const cases: { name: string; set?: string[]; json?: string[]; args: string[] }[] = [
      { name: 'source off', set: ['health.source=off'], args: [] },
      { name: 'no probe at all', set: [noProbe], args: [] },
      {
        name: 'httpGet, named port, no scheme',
        json: [probe('{"httpGet":{"path":"/ready","port":"http"}}')],
        args: ['--health-http=http://127.0.0.1:8080/ready', ...KUBELET_DEFAULTS],
      },
      {
        name: 'httpGet, scheme HTTP, host localhost, numeric port, no path',
        json: [probe('{"httpGet":{"port":9000,"scheme":"HTTP","host":"localhost"}}')],
        args: ['--health-http=http://127.0.0.1:9000/', ...KUBELET_DEFAULTS],
      },
      {
        name: 'no readinessProbe: the livenessProbe, its timings',
        set: [noProbe],
        json: ['app.livenessProbe={"httpGet":{"path":"/live","port":8080},"periodSeconds":5,"timeoutSeconds":2,"initialDelaySeconds":3,"failureThreshold":4}'],
        args: ['--health-http=http://127.0.0.1:8080/live', ...timingsOf(5, 2, 3, 4, 1)],
      },
      {
        name: 'a timeout longer than the period is cut to the period',
        json: [probe('{"tcpSocket":{"port":8080},"periodSeconds":2,"timeoutSeconds":5}')],
        args: ['--health-tcp=8080', ...timingsOf(2, 2, 0, 3, 1)],
      },
      { name: 'HTTPS is not used', json: [probe('{"httpGet":{"path":"/","port":8443,"scheme":"HTTPS"}}')], args: [] },
      { name: 'another host is not used', json: [probe('{"httpGet":{"path":"/","port":80,"host":"db"}}')], args: [] },
      { name: 'tcp to another host is not used', json: [probe('{"tcpSocket":{"port":80,"host":"db"}}')], args: [] },
      { name: 'headers are not used', json: [probe('{"httpGet":{"path":"/","port":8080,"httpHeaders":[{"name":"Host","value":"x"}]}}')], args: [] },
      { name: 'exec is not used', json: [probe('{"exec":{"command":["true"]}}')], args: [] },
      { name: 'an undeclared port name is not used', json: [probe('{"tcpSocket":{"port":"admin"}}')], args: [] },
      { name: "no circle: the sidecar's port", json: [probe('{"httpGet":{"path":"/readyz","port":4040}}')], args: [] },
      { name: "no circle: the sidecar's port name", json: [probe('{"httpGet":{"path":"/leader","port":"leasehold"}}')], args: [] },
      { name: 'no circle: leasehold.port moved', set: ['leasehold.port=9000'], json: [probe('{"tcpSocket":{"port":9000}}')], args: [] },
      {
        name: 'source http, timings from the app probe, health.probe overriding one',
        set: ['health.source=http', 'health.http=http://127.0.0.1:8081/healthz', 'health.probe.failureThreshold=5'],
        args: ['--health-http=http://127.0.0.1:8081/healthz', ...timingsOf(2, 1, 0, 5, 1)],
      },
      { name: 'source tcp without any app probe', set: ['health.source=tcp', 'health.tcp=5432', noProbe], args: ['--health-tcp=5432', ...KUBELET_DEFAULTS] },
      {
        name: 'health.probe sets every timing',
        set: [
          'health.probe.periodSeconds=7',
          'health.probe.timeoutSeconds=3',
          'health.probe.initialDelaySeconds=1',
          'health.probe.failureThreshold=6',
          'health.probe.successThreshold=2',
        ],
        args: ['--health-tcp=8080', ...timingsOf(7, 3, 1, 6, 2)],
      },
    ];
    for (const c of cases) assert.deepEqual(healthArgs(c.set ?? [], c.json ?? []), c.args, c.name);
  });

  it("the example Deployment's --drain-timeout is app.drainTimeout's, not drain.timeout's (chart-drain.test.ts: your pods'); the flag is refused in extraArgs", () => {
    const drainArgs = (set: string[]) => (containers(set).find((c) => c.name === 'leasehold')!.args ?? []).filter((a) => a.startsWith('--drain-timeout'));
    assert.deepEqual(drainArgs([]), ['--drain-timeout=3s']);
    assert.deepEqual(drainArgs(['app.drainTimeout=', 'drain.timeout=3s']), []);
    for (const set of ['drain.timeout=3', 'leasehold.extraArgs[0]=--drain-timeout=3s']) {
      const r = helmTemplate([set]);
      assert.notEqual(r.status, 0, `${set} should be refused`);
      assert.match(r.stderr, /drain\/timeout|extraArgs/, r.stderr);
    }
  });

  it('NOTES.txt says which source the sidecar uses, or why none', () => {
    // helm template does not render NOTES.txt; install --dry-run does, and asks the API server its version.
    const dry = (json: string[]) => {
      const home = join(dir.path, 'helm');
      const r = spawnSync(
        helmBin,
        ['install', 'demo', CHART, '--dry-run=client', '--kubeconfig', env().admin, '--namespace', 'apps', ...json.flatMap((s) => ['--set-json', s])],
        { encoding: 'utf8', env: { ...process.env, HELM_CACHE_HOME: home, HELM_CONFIG_HOME: home, HELM_DATA_HOME: home } },
      );
      assert.equal(r.status, 0, r.stderr);
      return r.stdout.slice(r.stdout.indexOf('NOTES:'));
    };
    assert.match(dry([]), /App health: the sidecar probes --health-tcp=8080 \(from app\.readinessProbe\)/);
    assert.match(
      dry([probe('{"httpGet":{"path":"/readyz","port":4040}}')]),
      /App health: none \(app\.readinessProbe's port 4040 is leasehold\.port, the sidecar's own port: the app's health must not depend on leadership\)/,
    );
    assert.match(dry([probe('{"exec":{"command":["true"]}}')]), /App health: none \(app\.readinessProbe is neither httpGet nor tcpSocket\)/);
    // The sidecar template included by another chart's pods: this chart's example probe is not theirs.
    assert.match(dry(['app.enabled=false']), /App health: none \(app\.enabled is false, and auto reads this chart's app: set health\.source http or tcp\)/);
    assert.match(dry(['app.enabled=false', 'health.source="tcp"', 'health.tcp=5432']), /App health: the sidecar probes --health-tcp=5432:/);
  });

  it('refuses, at template time with one line naming the value and the rule, a source the sidecar would refuse or that is the sidecar itself', () => {
    const cases: { set: string[]; err: RegExp }[] = [
      { set: ['health.source=sometimes'], err: /\/health\/source/ },
      { set: ['health.tcp=70000'], err: /\/health\/tcp/ },
      { set: ['health.http=ftp://x'], err: /\/health\/http/ },
      { set: ['health.probe.periodSeconds=0'], err: /periodSeconds/ },
      { set: ['health.probe.everySeconds=1'], err: /everySeconds|additional/i },
      { set: ['leasehold.extraArgs[0]=--health-tcp=80'], err: /extraArgs/ },
      {
        set: ['health.source=http', 'health.http=http://10.0.0.1:8080/'],
        err: /health\.http "http:\/\/10\.0\.0\.1:8080\/" must be http:\/\/127\.0\.0\.1:<port><path> \(or localhost\) with health\.source http: the sidecar probes the app in its own pod/,
      },
      { set: ['health.source=http'], err: /health\.http "" must be http:\/\/127\.0\.0\.1:<port><path>/ },
      {
        set: ['health.source=http', 'health.http=http://127.0.0.1:4040/readyz'],
        err: /health\.http "http:\/\/127\.0\.0\.1:4040\/readyz": port 4040 is leasehold\.port, the sidecar's own port: the app's health must not depend on leadership/,
      },
      {
        // The sidecar reads the port as decimal: a leading 0 is still its own port.
        set: ['health.source=http', 'health.http=http://127.0.0.1:04040/readyz'],
        err: /health\.http "http:\/\/127\.0\.0\.1:04040\/readyz": port 4040 is leasehold\.port, the sidecar's own port/,
      },
      {
        set: ['health.source=http', 'health.http=http://127.0.0.1:99999/healthz'],
        err: /health\.http "http:\/\/127\.0\.0\.1:99999\/healthz": its port must be from 1 to 65535/,
      },
      {
        set: ['health.source=http', 'health.http=http://localhost:0/healthz'],
        err: /health\.http "http:\/\/localhost:0\/healthz": its port must be from 1 to 65535/,
      },
      {
        set: ['health.source=tcp', 'health.tcp=4040'],
        err: /health\.tcp 4040 is leasehold\.port, the sidecar's own port: the app's health must not depend on leadership/,
      },
      { set: ['health.source=tcp'], err: /health\.tcp 0 must be a port from 1 to 65535 with health\.source tcp/ },
      {
        set: ['leasehold.extraArgs[0]=--health-period=5s'],
        err: /leasehold\.extraArgs has --health-period, which the chart sets from health \(source auto\): set health\.probe or health\.source instead/,
      },
      {
        set: ['leasehold.extraArgs[0]=--health-exec=true'],
        err: /leasehold\.extraArgs has --health-exec, but health\.source auto already gives the sidecar a source \(at most one\): set health\.source off to use it/,
      },
    ];
    for (const c of cases) {
      const r = helmTemplate(c.set);
      assert.notEqual(r.status, 0, `${c.set.join(' ')} should be refused`);
      assert.match(r.stderr, c.err, `${c.set.join(' ')}: ${r.stderr}`);
    }
    // With source off, the sidecar's own flags are the user's to give.
    assert.equal(helmTemplate(['health.source=off', 'leasehold.extraArgs[0]=--health-exec=true']).status, 0);
  });
});
