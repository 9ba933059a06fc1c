/**
 * End-to-end on a real cluster: kind, the image built from the Dockerfile, the chart with 3
 * replicas. Run with `npm run test:kind` wherever a Docker engine, kind, kubectl and helm are
 * on PATH; it creates and deletes its own cluster. It cannot run on the project's CI machines,
 * which reach no image registry for kind's node image; there the single-node cluster tier
 * (test/cluster) runs the same judgements, which live in test/support/cluster-views.ts and are
 * unit-tested beside it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import { allReady, failoverBoundMs, readPods, singleLeader, type LeaseView, type PodView } from '../support/cluster-views.js';

const CLUSTER = process.env.LEASEHOLD_KIND_CLUSTER ?? 'leasehold-e2e';
const IMAGE = 'leasehold:e2e';
const NS = 'leasehold-e2e';
const RELEASE = 'e2e';
const REPLICAS = 3;
const sh = (cmd: string, args: string[], input?: string) => execFileSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'inherit'] });
const kubectl = (...args: string[]) => sh('kubectl', ['--context', `kind-${CLUSTER}`, '-n', NS, ...args]);

const pods = (): PodView[] => readPods(kubectl, RELEASE);

const lease = (): LeaseView => JSON.parse(kubectl('get', 'lease', `${RELEASE}-leasehold`, '-o', 'jsonpath={.spec}') || '{}') as LeaseView;

describe('kind: the chart with 3 replicas', () => {
  before(() => {
    sh('docker', ['build', '-t', IMAGE, REPO]);
    sh('kind', ['create', 'cluster', '--name', CLUSTER, '--wait', '120s']);
    sh('kind', ['load', 'docker-image', IMAGE, '--name', CLUSTER]);
    sh('helm', [
      '--kube-context',
      `kind-${CLUSTER}`,
      'install',
      RELEASE,
      join(REPO, 'deploy/helm/leasehold'),
      '--namespace',
      NS,
      '--create-namespace',
      '--set',
      `replicaCount=${REPLICAS}`,
      '--set',
      'leasehold.image.repository=leasehold',
      '--set',
      'leasehold.image.tag=e2e',
      '--set',
      'leasehold.image.pullPolicy=Never',
      '--wait',
      '--timeout',
      '5m',
    ]);
  });
  after(() => {
    if (!process.env.LEASEHOLD_KIND_KEEP) sh('kind', ['delete', 'cluster', '--name', CLUSTER]);
  });

  it('has one Ready leader, agreeing with the Lease', { timeout: 180_000 }, async () => {
    await waitFor('all pods Ready', () => allReady(pods(), REPLICAS), 120_000, 1_000);
    const v = await waitFor('one leader', () => singleLeader(pods(), lease(), new Date()).leader, 60_000, 1_000);
    assert.ok(v);
  });

  it('deleting the leader pod elects another within the bound, with a higher token', { timeout: 180_000 }, async () => {
    const before = singleLeader(pods(), lease(), new Date());
    assert.ok(before.leader, before.problem);
    const t0 = Date.now();
    kubectl('delete', 'pod', before.leader, '--wait=false');
    const after = await waitFor(
      'a new leader',
      () => {
        const v = singleLeader(pods(), lease(), new Date());
        return v.leader && v.leader !== before.leader ? v : undefined;
      },
      failoverBoundMs(15_000, 2_000),
      500,
    );
    assert.ok(after.token! > before.token!);
    console.log(`leader pod deleted: new leader in ${Date.now() - t0} ms`);
  });

  it('a rolling update completes (readiness does not deadlock it)', { timeout: 300_000 }, () => {
    kubectl('rollout', 'restart', `deployment/${RELEASE}-leasehold`);
    kubectl('rollout', 'status', `deployment/${RELEASE}-leasehold`, '--timeout', '240s');
    assert.ok(singleLeader(pods(), lease(), new Date()).leader);
  });

  it('helm test passes', { timeout: 180_000 }, () => {
    sh('helm', ['--kube-context', `kind-${CLUSTER}`, 'test', RELEASE, '--namespace', NS, '--timeout', '2m']);
  });
});
