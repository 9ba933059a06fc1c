/**
 * The chart's leader Service (`leaderService.enabled`) on a real API server: a Service without a
 * selector whose one EndpointSlice only the leader's sidecar writes (--leader-endpoints), so a
 * pod that copies the leader's labels is never routed to. The chart's manifests are applied; the
 * sidecars are real processes under a TokenRequest token of the chart's own ServiceAccount, each
 * given a pod address of its own (no kubelet here: the EndpointSlice is what a Service routes by).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { REPO, waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { env, freshNamespace, kubectl, rawLease } from '../support/kube.js';
import { kubeconfig } from '../support/control-plane.js';
import { buildTool } from '../support/build-tool.js';
import { connect } from '../../src/kube/connect.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
const SLICE = 'demo-leasehold-leader';
const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
let helmBin = '';

function helm(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(helmBin, args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      HELM_CACHE_HOME: join(env().cpDir, 'helm-cache'),
      HELM_CONFIG_HOME: join(env().cpDir, 'helm-config'),
      HELM_DATA_HOME: join(env().cpDir, 'helm-data'),
    },
  });
  return { code: r.status ?? 1, out: r.stdout, err: r.stderr };
}

const template = (set: string[], ns = 'apps') =>
  helm(['template', 'demo', CHART, '--namespace', ns, '--kube-version', '1.37.0', ...set.flatMap((s) => ['--set', s])]);

// Rendered manifests are walked as the untyped YAML they are; a wrong path fails the assertion.
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call */
type Obj = { kind: string; metadata: { name: string; labels?: Record<string, string> }; [k: string]: any };
function render(set: string[]): Obj[] {
  const r = template(set);
  assert.equal(r.code, 0, r.err);
  return (loadAllYaml(r.out) as (Obj | null)[]).filter((d): d is Obj => d !== null);
}
const plain = (o: unknown) => JSON.parse(JSON.stringify(o)) as unknown;

interface SliceJson {
  metadata: { annotations?: Record<string, string>; resourceVersion: string };
  endpoints?: { addresses: string[]; targetRef?: { name?: string }; conditions?: { ready?: boolean } }[] | null;
}

describe("the chart's leader Service: only the Lease's holder is its endpoint", () => {
  const dir = scratchDir(() => cands);
  const cands: Candidate[] = [];
  const { client } = connect({ kubeconfig: env().admin });
  after(() => client.close());
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });

  const slicePath = (ns: string) => `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/${SLICE}`;
  const slice = (ns: string) => client.request<SliceJson>('GET', slicePath(ns));
  /** The slice's endpoints as `pod=ip` strings. */
  const endpoints = async (ns: string) => ((await slice(ns)).endpoints ?? []).map((e) => `${e.targetRef?.name}=${e.addresses.join(',')}`);

  it('renders a Service without a selector, its one EndpointSlice, the sidecar flags, and a Role rule for that slice only', () => {
    const docs = render(['leaderService.enabled=true']);
    const svc = docs.find((d) => d.kind === 'Service' && d.metadata.name === SLICE)!;
    assert.equal(svc.spec.selector, undefined, 'no selector: no label a pod can copy puts it behind the Service');
    assert.deepEqual(plain(svc.spec.ports), [{ name: 'app', port: 80, protocol: 'TCP' }]);
    const es = docs.find((d) => d.kind === 'EndpointSlice')!;
    assert.equal(es.metadata.name, SLICE);
    assert.equal(es.metadata.labels!['kubernetes.io/service-name'], SLICE);
    assert.equal(es.metadata.labels!['endpointslice.kubernetes.io/managed-by'], 'leasehold.io');
    assert.equal(es.addressType, 'IPv4');
    assert.deepEqual(plain(es.ports), [{ name: 'app', port: 8080, protocol: 'TCP' }], "app.ports' http, by number");
    assert.deepEqual(es.endpoints, []);
    const role = docs.find((d) => d.kind === 'Role')!;
    assert.deepEqual(plain(role.rules.at(-1)), {
      apiGroups: ['discovery.k8s.io'],
      resources: ['endpointslices'],
      resourceNames: [SLICE],
      verbs: ['get', 'update'],
    });
    assert.equal(role.rules.length, 3, 'no pod rule: the leader Service needs no labels');
    const sidecar = docs.find((d) => d.kind === 'Deployment')!.spec.template.spec.containers[1];
    assert.ok(sidecar.args.includes(`--leader-endpoints=${SLICE}`));
    assert.deepEqual(plain(sidecar.env.find((e: { name: string }) => e.name === 'LEASEHOLD_POD_IP')), {
      name: 'LEASEHOLD_POD_IP',
      valueFrom: { fieldRef: { fieldPath: 'status.podIP' } },
    });
    assert.deepEqual(
      plain(render(['leaderService.enabled=true', 'leaderService.targetPort=9090']).find((d) => d.kind === 'EndpointSlice')!.ports[0].port),
      9090,
    );
    const off = render([]);
    assert.equal(off.filter((d) => d.kind === 'EndpointSlice' || d.metadata.name === SLICE).length, 0);
    assert.ok(!off.find((d) => d.kind === 'Deployment')!.spec.template.spec.containers[1].args.some((a: string) => a.startsWith('--leader-endpoints')));

    const refused: [string[], RegExp][] = [
      [['leaderService.enabled=true', 'leaderService.targetPort=web'], /leaderService\.targetPort "web": app\.ports has no port of that name/],
      [['leaderService.enabled=true', 'app.enabled=false'], /leaderService\.enabled needs app\.enabled/],
      [['leaderService.addressType=IPv5'], /addressType/],
      // The label-selected Service of before is gone, and its values with it: refused, not ignored.
      [['podLabel.leaderService=true'], /leaderService/],
      [['leasehold.extraArgs[0]=--leader-endpoints=x'], /extraArgs/],
    ];
    for (const [set, message] of refused) {
      const r = template(set);
      assert.notEqual(r.code, 0, `${set.join(' ')} should be refused`);
      assert.match(r.err, message, set.join(' '));
    }
  });

  /** The chart applied in a fresh namespace, and a kubeconfig holding a token of its ServiceAccount. */
  async function installed(prefix: string): Promise<{ ns: string; saConfig: string }> {
    const ns = await freshNamespace(prefix);
    const r = template(['leasehold.lease=routed', 'leaderService.enabled=true'], ns);
    assert.equal(r.code, 0, r.err);
    const manifests = join(dir.path, `${ns}.yaml`);
    writeFileSync(manifests, r.out);
    kubectl(['apply', '-n', ns, '-f', manifests]);
    const token = kubectl(['create', 'token', 'demo-leasehold', '-n', ns, '--duration', '10m']).trim();
    const server = /server: (.*)/.exec(kubectl(['config', 'view', '--minify', '-o', 'yaml']))![1]!.trim();
    const saConfig = join(dir.path, `${ns}.kubeconfig`);
    writeFileSync(saConfig, kubeconfig(server, join(env().cpDir, 'ca.crt'), 'demo-leasehold', token), { mode: 0o600 });
    return { ns, saConfig };
  }

  const candidate = (ns: string, saConfig: string, id: string, ip: string) => {
    const c = startSidecar(dir.path, id, ['--backend', 'kubernetes', '--kubeconfig', saConfig, '--namespace', ns, '--lease', 'routed'], T, [
      '--leader-endpoints',
      SLICE,
      '--pod-ip',
      ip,
    ]);
    cands.push(c);
    return c;
  };
  // Each test's pods have names of their own: a candidate's status directory is named after it.
  const ipOf: Record<string, string> = { 'routed-a': '10.1.0.1', 'routed-b': '10.1.0.2', 'frozen-a': '10.1.0.3', 'frozen-b': '10.1.0.4' };

  it(
    "the holder's sidecar makes itself the only endpoint, a handover replaces it, and the chart's ServiceAccount may do nothing more",
    { timeout: 90_000 },
    async () => {
      const { ns, saConfig } = await installed('routed');
      const can = (verb: string, resource: string) =>
        spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', saConfig, 'auth', 'can-i', verb, resource, '-n', ns], { encoding: 'utf8' }).stdout.trim();
      assert.deepEqual(
        [
          can('get', `endpointslices.discovery.k8s.io/${SLICE}`),
          can('update', `endpointslices.discovery.k8s.io/${SLICE}`),
          can('create', 'endpointslices.discovery.k8s.io'),
          can('update', 'endpointslices.discovery.k8s.io/another'),
          can('list', 'endpointslices.discovery.k8s.io'),
          can('delete', `endpointslices.discovery.k8s.io/${SLICE}`),
          can('update', 'services'),
          can('get', 'pods'),
        ],
        ['yes', 'yes', 'no', 'no', 'no', 'no', 'no', 'no'],
      );
      const cs = [candidate(ns, saConfig, 'routed-a', ipOf['routed-a']!), candidate(ns, saConfig, 'routed-b', ipOf['routed-b']!)];
      const first = await waitFor('a leader', () => validLeaders(cs)[0], 20_000);
      await waitFor('the leader as the only endpoint', async () => (await endpoints(ns)).join() === `${first.c.id}=${ipOf[first.c.id]}`, 10_000, 50);
      assert.equal((await slice(ns)).metadata.annotations?.['leasehold.io/token'], String(rawLease(ns, 'routed').spec.leaseTransitions));

      // The handover, watched at every step: never two endpoints, never the old one after the new.
      const seen: string[] = [];
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          const now = (await endpoints(ns)).join(' ');
          if (seen.at(-1) !== now) seen.push(now);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      first.c.proc.kill('SIGTERM');
      const other = cs.find((c) => c !== first.c)!;
      await waitFor('the new leader as the only endpoint', async () => (await endpoints(ns)).join() === `${other.id}=${ipOf[other.id]}`, 10_000, 50);
      assert.equal((await first.c.proc.exited).code, 0, first.c.proc.stderr());
      await new Promise((r) => setTimeout(r, 500));
      watching = false;
      await watcher;
      const old = `${first.c.id}=${ipOf[first.c.id]}`;
      const next = `${other.id}=${ipOf[other.id]}`;
      assert.ok(
        seen.every((s) => s === old || s === '' || s === next),
        `only one endpoint at a time: ${JSON.stringify(seen)}`,
      );
      assert.equal(seen.at(-1), next, `ends with the new leader: ${JSON.stringify(seen)}`);
      assert.equal(seen.lastIndexOf(old) < seen.indexOf(next), true, `the old leader never came back: ${JSON.stringify(seen)}`);
      assert.match(first.c.proc.stderr(), /"msg":"the leader endpoints no longer name this pod"/);
      assert.doesNotMatch(first.c.proc.stderr() + other.proc.stderr(), /forbidden|cannot write the leader endpoints/i);
      other.proc.kill('SIGTERM');
      await other.proc.exited;
    },
  );

  it(
    "a leader frozen past its term neither takes the endpoint back nor removes the next leader's; another writer's edit is put back",
    { timeout: 90_000 },
    async () => {
      const { ns, saConfig } = await installed('frozen');
      const cs = [candidate(ns, saConfig, 'frozen-a', ipOf['frozen-a']!), candidate(ns, saConfig, 'frozen-b', ipOf['frozen-b']!)];
      const first = await waitFor('a leader', () => validLeaders(cs)[0], 20_000);
      const other = cs.find((c) => c !== first.c)!;
      const next = `${other.id}=${ipOf[other.id]}`;
      await waitFor('the leader as the only endpoint', async () => (await endpoints(ns)).join() === `${first.c.id}=${ipOf[first.c.id]}`, 10_000, 50);
      // Frozen as a pod cut off from the API server is: it cannot step down in the store's eyes.
      first.c.proc.kill('SIGSTOP');
      await waitFor('the other to take over at the expiry and route to itself', async () => (await endpoints(ns)).join() === next, 20_000, 50);
      first.c.proc.kill('SIGCONT');
      await waitFor('the frozen one to step down once resumed', () => /"msg":"stopped leading"/.test(first.c.proc.stderr()), 10_000);
      // Past a verify period of both (a lease duration): still only the new leader.
      const until = Date.now() + 3_000;
      while (Date.now() < until) {
        assert.equal((await endpoints(ns)).join(), next, 'the resumed old leader changed the endpoints');
        await new Promise((r) => setTimeout(r, 100));
      }
      // Someone else rewrites the slice (a pod of their own; `helm upgrade` rendered offline would
      // empty it): the leader puts itself back within a lease duration.
      const s = await slice(ns);
      await client.request('PUT', slicePath(ns), {
        body: { ...s, endpoints: [{ addresses: ['10.1.0.99'], targetRef: { kind: 'Pod', name: 'copycat', namespace: ns }, conditions: { ready: true } }] },
      });
      const t0 = Date.now();
      await waitFor('the leader to put itself back', async () => (await endpoints(ns)).join() === next, 10_000, 50);
      const ms = Date.now() - t0;
      console.log(`leader endpoints: another writer's endpoint replaced by the leader's ${ms} ms later`);
      assert.ok(ms < 2_000 + 1_000, `the leader took ${ms} ms to put itself back (lease duration 2 s)`);
    },
  );
});
