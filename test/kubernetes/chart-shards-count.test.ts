/**
 * The chart and a shard group that exists (docs/shards.md, "Limits"): a `shards.count` other than
 * the group's (its header Lease's annotation leasehold.io/shards) is refused where helm can see
 * the cluster (an upgrade, `--dry-run=server`), so an upgrade never cuts the Role down to the new
 * count's Leases while members of the old count run. Without a cluster (`helm template`) there is
 * nothing to look up, and the chart renders.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../support/cli.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { buildTool } from '../support/build-tool.js';

const CHART = join(REPO, 'deploy/helm/leasehold');
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

/** Renders with the cluster's answers to `lookup` (server) or without a cluster (none). */
const render = (ns: string, set: string[], cluster: 'server' | 'none') =>
  helm([
    'template',
    'demo',
    CHART,
    '--namespace',
    ns,
    '--kube-version',
    '1.37.0',
    ...(cluster === 'server' ? ['--dry-run=server', '--kubeconfig', env().admin] : []),
    ...set.flatMap((s) => ['--set', s]),
  ]);

describe('the chart with a shard group that exists', () => {
  before(() => {
    helmBin = buildTool('build-helm.sh');
  });

  it('refuses another shards.count (or a lease on the group’s header), in one line naming the group’s count; renders the same count, and anything without a cluster', async () => {
    const ns = await freshNamespace('shardcount');
    const dir = mkdtempSync(join(tmpdir(), 'lh-chart-count-'));
    try {
      // The group's header as the sidecar writes it (src/backends/kubernetes/group-store.ts).
      const header = join(dir, 'header.yaml');
      writeFileSync(
        header,
        [
          'apiVersion: coordination.k8s.io/v1',
          'kind: Lease',
          'metadata:',
          '  name: workers',
          '  labels: { leasehold.io/group: workers, leasehold.io/group-record: group }',
          '  annotations: { leasehold.io/shards: "8" }',
          'spec:',
          '  acquireTime: "2026-12-06T01:00:00.000000Z"',
          '',
        ].join('\n'),
      );
      kubectl(['apply', '-n', ns, '-f', header]);

      const same = render(ns, ['leasehold.lease=workers', 'shards.count=8'], 'server');
      assert.equal(same.code, 0, same.err);
      assert.match(same.out, /"workers-shard-0007"/, 'the Role names the group’s 8 shards');

      for (const count of ['4', '16']) {
        const other = render(ns, ['leasehold.lease=workers', `shards.count=${count}`], 'server');
        assert.notEqual(other.code, 0, `shards.count ${count} renders over a group of 8: ${other.out.slice(0, 200)}`);
        assert.match(other.err, new RegExp(`shards.count ${count}, but the shard group "workers" in namespace ${ns} has 8 shards`));
        assert.match(other.err, /keep shards.count 8/);
        assert.equal(other.out, '', 'nothing rendered');
      }

      const lease = render(ns, ['leasehold.lease=workers'], 'server');
      assert.notEqual(lease.code, 0, 'a leader lease named after a shard group’s header renders');
      assert.match(lease.err, /shards.count 0, but the shard group "workers"/);

      // No cluster, nothing to look up: the chart renders (the new pods would be refused at start).
      const offline = render(ns, ['leasehold.lease=workers', 'shards.count=4'], 'none');
      assert.equal(offline.code, 0, offline.err);
      // Another group of the namespace is not this one's business.
      const elsewhere = render(ns, ['leasehold.lease=jobs', 'shards.count=4'], 'server');
      assert.equal(elsewhere.code, 0, elsewhere.err);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      kubectl(['delete', 'namespace', ns, '--wait=false']);
    }
  });

  it('refuses a shards.maxMembers below a member slot in use, naming the slot; a free slot above it does not count', async () => {
    const ns = await freshNamespace('shardslots');
    const dir = mkdtempSync(join(tmpdir(), 'lh-chart-slots-'));
    try {
      // Two member slots as the sidecar writes them: slot 5 held, slot 7 left free (holder "").
      const slot = (i: number, holder: string) =>
        [
          'apiVersion: coordination.k8s.io/v1',
          'kind: Lease',
          'metadata:',
          `  name: workers-member-${String(i).padStart(4, '0')}`,
          '  labels: { leasehold.io/group: workers, leasehold.io/group-record: member }',
          '  annotations: { leasehold.io/member-state: active }',
          'spec:',
          `  holderIdentity: "${holder}"`,
          '  leaseDurationSeconds: 15',
          '',
        ].join('\n');
      const file = join(dir, 'slots.yaml');
      writeFileSync(file, [slot(5, 'workers-abc-1'), slot(7, '')].join('---\n'));
      kubectl(['apply', '-n', ns, '-f', file]);

      for (const k of ['2', '5']) {
        const cut = render(ns, ['leasehold.lease=workers', 'shards.count=8', `shards.maxMembers=${k}`, 'replicaCount=2'], 'server');
        assert.notEqual(cut.code, 0, `shards.maxMembers ${k} renders over a held slot 5: ${cut.out.slice(0, 200)}`);
        assert.match(
          cut.err,
          new RegExp(
            `shards.maxMembers ${k}, but member slot 5 of the shard group "workers" in namespace ${ns} is in use \\(its Lease workers-member-0005, held by workers-abc-1\\)`,
          ),
        );
        assert.equal(cut.out, '', 'nothing rendered');
      }
      // Slot 5 fits in 6; slot 7 is free, so 6 cuts nothing in use.
      const fits = render(ns, ['leasehold.lease=workers', 'shards.count=8', 'shards.maxMembers=6', 'replicaCount=2'], 'server');
      assert.equal(fits.code, 0, fits.err);
      assert.match(fits.out, /"workers-member-0005"/, 'the Role names slot 5');
      // Another group's slots are not this one's business; without a cluster, nothing to look up.
      assert.equal(render(ns, ['leasehold.lease=jobs', 'shards.count=8', 'shards.maxMembers=2', 'replicaCount=2'], 'server').code, 0);
      assert.equal(render(ns, ['leasehold.lease=workers', 'shards.count=8', 'shards.maxMembers=2', 'replicaCount=2'], 'none').code, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      kubectl(['delete', 'namespace', ns, '--wait=false']);
    }
  });
});
