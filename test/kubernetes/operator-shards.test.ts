/**
 * `leasehold operator` and shard groups on a real API server (admission through a url
 * clientConfig, as test/kubernetes/operator.test.ts): a pod annotated `leasehold.io/shards` is
 * injected with a member of the group named by its lease; a bad shard annotation is refused at
 * admission with one line; the reconciler grants the pod's ServiceAccount the group's Leases by
 * name, list, watch and create (checked with `kubectl auth can-i`), on which a real member
 * process under that ServiceAccount's token owns the group's shards; a group's name another
 * controller's Lease holds is not granted; the grant goes with the last pod.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor, type Proc } from '../support/cli.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { kubectlIn, startOperatorProcess, stopOperators, webhookCaBundle, webhookConfiguration } from '../support/operator-process.js';
import { freePort, kubeconfig } from '../support/control-plane.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, type Candidate } from '../support/sidecars.js';
import { readOwnedShards } from '../../src/status/shards-status.js';

const WEBHOOK = `leasehold-operator-shards-${process.pid}`;
const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };

const json = <T>(args: string[]) => JSON.parse(kubectl([...args, '-o', 'json'])) as T;
interface PodJson {
  metadata: { name: string; uid: string; annotations?: Record<string, string> };
  spec: { containers: { name: string; args?: string[] }[] };
}

describe('leasehold operator: members of a shard group on a real API server', () => {
  let ops = '';
  let app = '';
  let port = 0;
  const procs: Proc[] = [];
  const cands: Candidate[] = [];
  const dir = scratchDir(() => cands);

  /** Creates a pod labelled for injection with these annotations, as the ServiceAccount `sa`; kubectl's result. */
  const createPod = (name: string, annotations: Record<string, string>, sa = 'default'): { ok: boolean; out: string } => {
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: app, labels: { 'leasehold.io/inject': 'true' }, annotations },
      spec: { serviceAccountName: sa, containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
    };
    try {
      return { ok: true, out: kubectlIn(['create', '-f', '-', '-o', 'json'], JSON.stringify(manifest)) };
    } catch (err) {
      return { ok: false, out: String((err as { stderr?: Buffer }).stderr ?? err) };
    }
  };
  const canI = (sa: string, verb: string, resource: string, ns = app) => {
    try {
      return kubectl(['auth', 'can-i', verb, resource, '-n', ns, '--as', `system:serviceaccount:${app}:${sa}`]).trim();
    } catch (err) {
      return String((err as { stdout?: Buffer }).stdout ?? '').trim();
    }
  };

  before(async () => {
    ops = await freshNamespace('opsh');
    app = await freshNamespace('opshapp');
    kubectl(['create', 'serviceaccount', 'default', '-n', app]);
    port = await freePort();
    kubectlIn(['create', '-f', '-'], JSON.stringify(webhookConfiguration({ name: WEBHOOK, port, failurePolicy: 'Fail', namespaces: [app] })));
    procs.push(startOperatorProcess({ namespace: ops, identity: 'op-0', port, webhook: WEBHOOK, flags: ['--extra-host', '127.0.0.1', '--resync', '2s'] }));
    await waitFor('the caBundle written', () => webhookCaBundle(WEBHOOK) !== '', 30_000, 100);
    await waitFor(
      'a first injection',
      () => {
        const r = createPod(`probe-${Date.now()}`, {});
        return r.ok && (JSON.parse(r.out) as PodJson).spec.containers.some((c) => c.name === 'leasehold');
      },
      30_000,
      200,
    );
  });

  after(() => {
    stopOperators(procs, WEBHOOK);
    for (const ns of [ops, app]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it('refuses a bad shard annotation at admission with one line naming it and the rule', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [
        { 'leasehold.io/shards': '5000' },
        /denied the request: leasehold: annotation leasehold\.io\/shards "5000" is invalid: must be a whole number from 1 to 4096$/m,
      ],
      [{ 'leasehold.io/max-members': '4' }, /annotation leasehold\.io\/max-members "4" is invalid: needs leasehold\.io\/shards/],
      [
        { 'leasehold.io/shards': '4', 'leasehold.io/pod-label': 'true' },
        /leasehold\.io\/pod-label "true" is invalid: applies to a lease, not to a shard group/,
      ],
      [
        { 'leasehold.io/shards': '4', 'leasehold.io/lease': 'jobs-member-0001' },
        /leasehold\.io\/lease "jobs-member-0001" is invalid: on Kubernetes a group name is a label value/,
      ],
    ];
    for (const [annotations, message] of cases) {
      const r = createPod('bad', annotations);
      assert.equal(r.ok, false, JSON.stringify(annotations));
      assert.match(r.out, message);
    }
  });

  it(
    "injects a member and grants its ServiceAccount the group's Leases: a member under its token owns the shards; the grant goes with the last pod",
    { timeout: 120_000 },
    async () => {
      kubectl(['create', 'serviceaccount', 'worker', '-n', app]);
      const r = createPod('worker-0', { 'leasehold.io/lease': 'jobs', 'leasehold.io/shards': '4', 'leasehold.io/max-members': '2' }, 'worker');
      assert.ok(r.ok, r.out);
      const pod = json<PodJson>(['get', 'pod', 'worker-0', '-n', app]);
      const args = pod.spec.containers.find((c) => c.name === 'leasehold')!.args!;
      assert.ok(args.includes('--shards=4') && args.includes('--max-members=2') && !args.some((a) => a.startsWith('--ready-when')), args.join(' '));
      assert.equal(pod.metadata.annotations!['leasehold.io/injected-shards'], '4');
      assert.equal(pod.metadata.annotations!['leasehold.io/injected-max-members'], '2');

      await waitFor('the group granted', () => canI('worker', 'update', 'leases/jobs-shard-0003') === 'yes', 30_000, 200);
      for (const name of ['jobs', 'jobs-member-0000', 'jobs-member-0001', 'jobs-shard-0000', 'jobs-shard-0003']) {
        assert.equal(canI('worker', 'get', `leases/${name}`), 'yes', `get ${name}`);
        assert.equal(canI('worker', 'update', `leases/${name}`), 'yes', `update ${name}`);
      }
      assert.equal(canI('worker', 'list', 'leases'), 'yes');
      assert.equal(canI('worker', 'watch', 'leases'), 'yes');
      assert.equal(canI('worker', 'create', 'leases'), 'yes', 'the members make the records: RBAC cannot name what create makes');
      for (const name of ['jobs-member-0002', 'jobs-shard-0004', 'other']) assert.equal(canI('worker', 'update', `leases/${name}`), 'no', name);
      assert.equal(canI('worker', 'delete', 'leases/jobs'), 'no');
      assert.equal(canI('worker', 'patch', 'pods'), 'no');
      assert.equal(canI('worker', 'update', 'leases/jobs', ops), 'no', 'another namespace');
      assert.equal(kubectl(['get', 'lease', 'jobs', '-n', app, '--ignore-not-found']).trim(), '', 'the operator made no Lease for the group');

      // What the pod's sidecar would do, as a process under the ServiceAccount's token: it owns every shard.
      const token = kubectl(['create', 'token', 'worker', '-n', app, '--duration', '10m']).trim();
      const saConfig = join(dir.path, 'worker.kubeconfig');
      const server = /server: (.*)/.exec(kubectl(['config', 'view', '--minify', '-o', 'yaml']))![1]!.trim();
      writeFileSync(saConfig, kubeconfig(server, join(env().cpDir, 'ca.crt'), 'worker', token), { mode: 0o600 });
      const member = startSidecar(
        dir.path,
        'worker-0',
        ['--backend', 'kubernetes', '--kubeconfig', saConfig, '--namespace', app, '--lease', 'jobs', '--shards', '4', '--max-members', '2'],
        T,
      );
      cands.push(member);
      await waitFor('the member to own the 4 shards', () => readOwnedShards(member.statusDir).owned.length === 4, 30_000, 200);
      assert.doesNotMatch(member.proc.stderr(), /forbidden/i);
      // Its records exist now, each the group's: a later pass still grants them.
      assert.equal(kubectl(['get', 'leases', '-n', app, '-l', 'leasehold.io/group=jobs', '-o', 'name']).trim().split('\n').length, 1 + 1 + 4);
      member.proc.kill('SIGTERM');
      assert.equal((await member.proc.exited).code, 0, member.proc.stderr());
      assert.equal(canI('worker', 'update', 'leases/jobs-shard-0003'), 'yes');

      kubectl(['delete', 'pod', 'worker-0', '-n', app, '--grace-period=0', '--force']);
      await waitFor('the grant removed', () => canI('worker', 'update', 'leases/jobs') === 'no', 30_000, 200);
    },
  );

  it("does not grant a group whose name another controller's Lease holds", { timeout: 60_000 }, async () => {
    kubectl(['create', 'serviceaccount', 'busy', '-n', app]);
    kubectlIn(
      ['create', '-f', '-'],
      JSON.stringify({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'busy-shard-0001', namespace: app },
        spec: { holderIdentity: 'another-controller' },
      }),
    );
    const r = createPod('busy-0', { 'leasehold.io/lease': 'busy', 'leasehold.io/shards': '2' }, 'busy');
    assert.ok(r.ok, r.out);
    const uid = json<PodJson>(['get', 'pod', 'busy-0', '-n', app]).metadata.uid;
    const event = await waitFor(
      'the pod reported',
      () =>
        json<{ items: { reason: string; message: string; involvedObject: { uid: string } }[] }>(['get', 'events', '-n', app]).items.find(
          (e) => e.reason === 'LeaseholdNotGranted' && e.involvedObject.uid === uid,
        ),
      30_000,
      200,
    );
    assert.match(event.message, new RegExp(`Lease ${app}/busy-shard-0001, a name of shard group busy, exists and is neither a record of that group`));
    for (const name of ['busy', 'busy-shard-0000', 'busy-shard-0001']) assert.equal(canI('busy', 'update', `leases/${name}`), 'no', name);
    assert.equal(canI('busy', 'create', 'leases'), 'no');
    assert.equal(json<{ spec: { holderIdentity: string } }>(['get', 'lease', 'busy-shard-0001', '-n', app]).spec.holderIdentity, 'another-controller');
  });
});
