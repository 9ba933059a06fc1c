/**
 * The chart in shard mode (`shards.count`, `shards.maxMembers`) on a real API server: `helm
 * template` across value sets (the sidecar's flags, the Role naming the group's Leases, what
 * only a lease has left out), the schema's and the templates' refusals, and the manifests
 * applied: sidecar processes under a TokenRequest token of the chart's own ServiceAccount join
 * the group and divide its shards, and are denied everything else (another group's records, a
 * slot or shard past the chart's counts, delete, other namespaces).
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { REPO, waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, type Candidate } from '../support/sidecars.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { kubeconfig } from '../support/control-plane.js';
import { buildTool } from '../support/build-tool.js';
import { readOwnedShards } from '../../src/status/shards-status.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
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
/* eslint-disable @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument */
type Obj = { kind: string; metadata: { name: string }; [k: string]: any };
function render(set: string[]): Obj[] {
  const r = template(set);
  assert.equal(r.code, 0, r.err);
  return (loadAllYaml(r.out) as (Obj | null)[]).filter((d): d is Obj => d !== null);
}
const plain = (o: unknown) => JSON.parse(JSON.stringify(o)) as unknown;
const pod = (docs: Obj[]) => docs.find((d) => d.kind === 'Deployment')!.spec.template.spec;
const container = (docs: Obj[], name: string) => pod(docs).containers.find((c: { name: string }) => c.name === name);
const rules = (docs: Obj[]) => plain(docs.find((d) => d.kind === 'Role')!.rules);

/** The Lease names of group `g` with K slots and N shards, as the sidecar names them. */
function groupNames(g: string, k: number, n: number): string[] {
  const pad = (i: number) => String(i).padStart(4, '0');
  return [g, ...Array.from({ length: k }, (_, i) => `${g}-member-${pad(i)}`), ...Array.from({ length: n }, (_, i) => `${g}-shard-${pad(i)}`)];
}

const LEASES = { apiGroups: ['coordination.k8s.io'], resources: ['leases'] };
const groupRules = (g: string, k: number, n: number) => [
  { ...LEASES, resourceNames: groupNames(g, k, n), verbs: ['get', 'update'] },
  { ...LEASES, verbs: ['list', 'watch'] },
  { ...LEASES, verbs: ['create'] },
];

describe('the chart in shard mode', () => {
  const cands: Candidate[] = [];
  const dir = scratchDir(() => cands);
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });

  it("renders members: --shards and --max-members, the Role naming the group's Leases, nothing of a lease's", () => {
    const lint = helm(['lint', '--strict', CHART, '--set', 'shards.count=8']);
    assert.equal(lint.code, 0, lint.out + lint.err);
    const docs = render(['shards.count=3', 'shards.maxMembers=2', 'replicaCount=2', 'leasehold.lease=jobs']);
    const args: string[] = container(docs, 'leasehold').args;
    assert.ok(args.includes('--shards=3') && args.includes('--max-members=2'), args.join(' '));
    assert.ok(args.includes('--lease=jobs'));
    for (const leaderOnly of ['--ready-when', '--release-on-exit', '--pod-label', '--leader-endpoints']) {
      assert.ok(!args.some((a) => a.startsWith(leaderOnly)), `${leaderOnly} rendered in shard mode: ${args.join(' ')}`);
    }
    // The example app drains each shard it loses: its sidecar waits for its post.
    assert.ok(args.includes('--drain-timeout=3s'));
    assert.deepEqual(plain(container(docs, 'app').env.find((e: { name: string }) => e.name === 'SHARDS')), { name: 'SHARDS', value: '3' });
    assert.deepEqual(rules(docs), groupRules('jobs', 2, 3));
    // helm test checks that every shard has a live owner.
    const test = docs.find((d) => d.kind === 'Pod' && d.metadata.name.endsWith('-test-one-leader'))!;
    assert.match(test.spec.containers[0].command.at(-1), /"orphaned":0/);

    // maxMembers unset: the sidecar's default, 64, given explicitly so the Role and the members agree.
    const byDefault = render(['shards.count=64']);
    assert.ok(container(byDefault, 'leasehold').args.includes('--max-members=64'));
    assert.deepEqual(rules(byDefault), groupRules('demo-leasehold', 64, 64));
    // The largest group the sidecar takes renders: 1 + 4096 + 4096 names.
    const largest = render(['shards.count=4096', 'shards.maxMembers=4096']);
    assert.equal((rules(largest) as { resourceNames?: string[] }[])[0]!.resourceNames!.length, 8193);
    // Without the Deployment (your own chart's pods include the sidecar): the same Role.
    assert.deepEqual(rules(render(['shards.count=5', 'app.enabled=false', 'leasehold.lease=jobs'])), groupRules('jobs', 64, 5));
  });

  it('0 or unset is leader election, as before: the lease flags and the one-Lease Role', () => {
    for (const set of [[], ['shards.count=0'], ['shards.count=null']]) {
      const docs = render([...set, 'leasehold.lease=jobs']);
      const args: string[] = container(docs, 'leasehold').args;
      assert.ok(args.includes('--ready-when=elected-any') && args.includes('--release-on-exit=true'), `${set.join(' ')}: ${args.join(' ')}`);
      assert.ok(!args.some((a) => a.startsWith('--shards') || a.startsWith('--max-members')), args.join(' '));
      assert.equal(
        container(docs, 'app').env.find((e: { name: string }) => e.name === 'SHARDS'),
        undefined,
      );
      assert.deepEqual(rules(docs), [
        { ...LEASES, resourceNames: ['jobs'], verbs: ['get', 'update', 'list', 'watch'] },
        { ...LEASES, verbs: ['create'] },
      ]);
    }
    // readyWhen's empty default is elected-any; leader still given as asked.
    assert.ok(container(render(['leasehold.readyWhen=leader']), 'leasehold').args.includes('--ready-when=leader'));
    // A lease name of 64 characters is a lease's right: the 63-character rule is a group's.
    assert.ok(render([`leasehold.lease=${'a'.repeat(64)}`]));
  });

  it('the alerts of a group: no leader alerts, LeaseholdShardWithoutOwner', () => {
    const alerts = (set: string[]) =>
      render([...set, 'metrics.prometheusRule.enabled=true'])
        .find((d) => d.kind === 'PrometheusRule')!
        .spec.groups[0].rules.map((r: { alert: string }) => r.alert);
    assert.deepEqual(alerts(['shards.count=8']), [
      'LeaseholdNoEligibleCandidate',
      'LeaseholdShardWithoutOwner',
      'LeaseholdStatusNotWritable',
      'LeaseholdSidecarDown',
    ]);
    assert.ok(alerts([]).includes('LeaseholdNoLeader'));
  });

  it('refuses, with one line naming the value, what the sidecar would refuse and what means nothing to a group', () => {
    const refused: [string[], RegExp][] = [
      // The schema: counts the sidecar refuses, a group name that is not a label value, the chart's own flags.
      [['shards.count=4097'], /\/shards\/count': maximum: got 4,097, want 4,096/],
      [['shards.count=-1'], /\/shards\/count': minimum/],
      [['shards.count=three'], /\/shards\/count'/],
      [['shards.count=2', 'shards.maxMembers=0'], /\/shards\/maxMembers': minimum/],
      [['shards.count=2', 'shards.maxMembers=4097'], /\/shards\/maxMembers': maximum/],
      [['shards.count=2', `leasehold.lease=${'a'.repeat(64)}`], /\/leasehold\/lease': maxLength: got 64, want 63/],
      [['shards.count=2', 'leasehold.extraArgs[0]=--shards=3'], /extraArgs/],
      [['leasehold.extraArgs[0]=--max-members=3'], /extraArgs/],
      [['shards.size=2'], /additional properties 'size'/],
      // The templates: combinations.
      [['shards.maxMembers=8'], /^Error: .*shards\.maxMembers 8 needs shards\.count: it bounds the members of a shard group/m],
      [['shards.count=2', 'leasehold.lease=jobs-shard-0001'], /the group name "jobs-shard-0001" .* must not end in -member-NNNN or -shard-NNNN/],
      [['shards.count=2', 'podLabel.enabled=true'], /podLabel\.enabled applies to a lease, not to a shard group \(shards\.count 2\)/],
      [['shards.count=2', 'leaderService.enabled=true'], /leaderService\.enabled applies to a lease, not to a shard group .*no leader for a Service/],
      [['shards.count=2', 'leasehold.readyWhen=elected-any'], /leasehold\.readyWhen "elected-any" applies to a lease, not to a shard group/],
      [['shards.count=2', 'leasehold.readyWhen=leader'], /leasehold\.readyWhen "leader" applies to a lease/],
      [['shards.count=2', 'leasehold.releaseOnExit=false'], /leasehold\.releaseOnExit false applies to a lease, not to a shard group/],
      [['shards.count=2', 'leasehold.extraArgs[0]=--contention-window=1s'], /leasehold\.extraArgs has --contention-window=1s, which applies to a lease/],
      [['shards.count=2', 'shards.maxMembers=2', 'replicaCount=3'], /replicaCount 3 is more than shards\.maxMembers 2/],
      // Refused whether or not this chart renders the Deployment (templates/checks.yaml).
      [['shards.count=2', 'podLabel.enabled=true', 'app.enabled=false'], /podLabel\.enabled applies to a lease/],
      [['shards.maxMembers=8', 'app.enabled=false'], /shards\.maxMembers 8 needs shards\.count/],
    ];
    for (const [set, message] of refused) {
      const r = template(set);
      assert.notEqual(r.code, 0, `${set.join(' ')} should be refused`);
      assert.match(r.err, message, set.join(' '));
      assert.equal(r.out, '', `${set.join(' ')}: nothing rendered`);
      assert.equal(
        r.err
          .trim()
          .split('\n')
          .filter((l) => l.startsWith('Error')).length,
        1,
        r.err,
      );
    }
    // Past maxMembers, with no Deployment of this chart's: its replicas are not the chart's to count.
    assert.ok(render(['shards.count=2', 'shards.maxMembers=2', 'replicaCount=3', 'app.enabled=false']));
  });

  it(
    "applies to a real API server; the chart's ServiceAccount token joins the group and divides its shards, and can do nothing more",
    { timeout: 180_000 },
    async () => {
      const ns = await freshNamespace('shards');
      const manifests = join(dir.path, 'manifests.yaml');
      const r = template(['shards.count=4', 'shards.maxMembers=3', 'leasehold.lease=jobs'], ns);
      assert.equal(r.code, 0, r.err);
      writeFileSync(manifests, r.out);
      kubectl(['apply', '-n', ns, '-f', manifests]);
      const sa = 'demo-leasehold';
      const token = kubectl(['create', 'token', sa, '-n', ns, '--duration', '10m']).trim();
      const saConfig = join(dir.path, 'sa.kubeconfig');
      const server = /server: (.*)/.exec(kubectl(['config', 'view', '--minify', '-o', 'yaml']))![1]!.trim();
      writeFileSync(saConfig, kubeconfig(server, join(env().cpDir, 'ca.crt'), sa, token), { mode: 0o600 });

      const can = (verb: string, resource: string, extra: string[] = []) =>
        spawnSync(join(env().binDir, 'kubectl'), ['--kubeconfig', saConfig, 'auth', 'can-i', verb, resource, '-n', ns, ...extra], {
          encoding: 'utf8',
        }).stdout.trim();
      for (const name of ['jobs', 'jobs-member-0000', 'jobs-member-0002', 'jobs-shard-0000', 'jobs-shard-0003']) {
        assert.equal(can('get', `leases/${name}`), 'yes', `get ${name}`);
        assert.equal(can('update', `leases/${name}`), 'yes', `update ${name}`);
      }
      assert.equal(can('list', 'leases'), 'yes', 'a label selector needs list on the namespace');
      assert.equal(can('watch', 'leases'), 'yes');
      assert.equal(can('create', 'leases'), 'yes', 'RBAC cannot name what create makes');
      for (const name of ['jobs-member-0003', 'jobs-shard-0004', 'other', 'other-member-0000', 'other-shard-0000']) {
        assert.equal(can('update', `leases/${name}`), 'no', `update ${name}: past the chart's counts, or another group's`);
      }
      assert.equal(can('delete', 'leases/jobs'), 'no');
      assert.equal(can('patch', 'leases/jobs-shard-0000'), 'no');
      assert.equal(can('list', 'leases', ['--all-namespaces']), 'no');
      assert.equal(can('get', 'secrets'), 'no');
      assert.equal(can('get', 'pods'), 'no');

      // Two members under the chart's ServiceAccount: two shards each, no refusal from the API server.
      const args = (group: string, kc: string, k: number) => [
        '--backend',
        'kubernetes',
        '--kubeconfig',
        kc,
        '--namespace',
        ns,
        '--lease',
        group,
        '--shards',
        '4',
        '--max-members',
        String(k),
      ];
      const a = startSidecar(dir.path, 'member-a', args('jobs', saConfig, 3), T);
      const b = startSidecar(dir.path, 'member-b', args('jobs', saConfig, 3), T);
      cands.push(a, b);
      const owned = (c: Candidate) => readOwnedShards(c.statusDir).owned.map((o) => o.shard);
      const split = await waitFor(
        'two shards each',
        () => {
          const [oa, ob] = [owned(a), owned(b)];
          return oa.length === 2 && ob.length === 2 && [...oa, ...ob].sort();
        },
        30_000,
        200,
      );
      assert.deepEqual(split, [0, 1, 2, 3]);
      assert.doesNotMatch(a.proc.stderr() + b.proc.stderr(), /LEASEHOLD_ERR_FORBIDDEN|forbidden/i);
      // kubectl get leases -l leasehold.io/group=jobs shows the group: its header, the two slots taken, its four shards.
      const listed = kubectl(['get', 'leases', '-n', ns, '-l', 'leasehold.io/group=jobs', '-o', 'jsonpath={.items[*].metadata.name}']).trim().split(' ').sort();
      assert.equal(listed.length, 7, listed.join(' '));
      assert.deepEqual(
        listed.filter((n) => !n.startsWith('jobs-member-')),
        ['jobs', 'jobs-shard-0000', 'jobs-shard-0001', 'jobs-shard-0002', 'jobs-shard-0003'],
      );
      assert.ok(
        listed.filter((n) => n.startsWith('jobs-member-')).every((n) => groupNames('jobs', 3, 0).includes(n)),
        listed.join(' '),
      );

      // Another group's records, made and left free by members with other credentials: a member
      // under the chart's ServiceAccount cannot take its free slot (an update of another group's
      // Lease), so it never joins, owns nothing, and changes none of them.
      const o1 = startSidecar(dir.path, 'other-1', args('other', env().admin, 2), T);
      const o2 = startSidecar(dir.path, 'other-2', args('other', env().admin, 2), T);
      cands.push(o1, o2);
      await waitFor('the other group to divide its shards', () => owned(o1).length === 2 && owned(o2).length === 2, 30_000, 200);
      for (const o of [o1, o2]) {
        o.proc.kill('SIGTERM');
        assert.equal((await o.proc.exited).code, 0, o.proc.stderr());
      }
      const versions = () => kubectl(['get', 'leases', '-n', ns, '-l', 'leasehold.io/group=other', '-o', 'jsonpath={.items[*].metadata.resourceVersion}']);
      const before = versions();
      assert.equal(before.trim().split(' ').length, 1 + 2 + 4, 'the other group has its header, both slots and its shards');
      const intruder = startSidecar(dir.path, 'intruder', args('other', saConfig, 2), T);
      cands.push(intruder);
      await waitFor('its slot refused', () => /"msg":"taking a member slot failed".*forbidden \(403\)/.test(intruder.proc.stderr()), 20_000, 200).catch(
        (err: unknown) => {
          throw new Error(`${(err as Error).message}\n${intruder.proc.stderr()}`);
        },
      );
      // A few more attempts, each refused: it never joins.
      await waitFor('three refusals', () => intruder.proc.stderr().match(/taking a member slot failed/g)!.length >= 3, 20_000, 200);
      assert.doesNotMatch(intruder.proc.stderr(), /joined the shard group/);
      assert.deepEqual(owned(intruder), []);
      assert.equal(versions(), before, "the other group's Leases are unchanged");
    },
  );
});
