/**
 * The operator's checks on the cluster tier, run in the same session as the chart's (one
 * bring-up): the operator installed by `helm install` from its chart with the image built from
 * the Dockerfile, and a plain Deployment written here (not rendered from leasehold's chart),
 * labelled for injection.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import { allReady, readPods, singleLeader, type LeaseView } from '../support/cluster-views.js';
import type { ClusterSession } from '../support/cluster-session.js';

const OPERATOR_CHART = join(REPO, 'deploy/helm/leasehold-operator');
const OPERATOR = 'leasehold-operator';
const OPERATOR_NS = 'leasehold-system';
/** The Deployment's name, hence its default lease name (docs/operator.md). */
const APP = 'injected';
const BUSYBOX = ['--image=localhost/busybox:local', '--image-pull-policy=Never'];
/** An app that exits on SIGTERM, so a deleted pod goes at once and the sidecar releases. */
const APP_COMMAND = ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"];

function deployment(name: string, inject: boolean) {
  const labels: Record<string, string> = { 'app.kubernetes.io/instance': name };
  if (inject) labels['leasehold.io/inject'] = 'true';
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: inject ? 3 : 1,
      selector: { matchLabels: { 'app.kubernetes.io/instance': name } },
      template: {
        metadata: { labels, annotations: inject ? { 'leasehold.io/pod-label': 'true' } : {} },
        spec: {
          terminationGracePeriodSeconds: 10,
          containers: [{ name: 'app', image: 'localhost/busybox:local', imagePullPolicy: 'Never', command: APP_COMMAND }],
        },
      },
    },
  };
}

interface PodJson {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { containers: { name: string }[]; initContainers?: { name: string }[]; volumes?: { name: string }[] };
}

export function operatorChecks(cluster: ClusterSession, ns: string): void {
  describe('the operator on the same node: injection into a plain Deployment', () => {
    const { kubectl, helm } = cluster;
    const apply = (manifest: object) => {
      const r = spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', ns, 'apply', '-f', '-'], {
        input: JSON.stringify(manifest),
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
    };
    const lease = (): LeaseView => JSON.parse(kubectl('get', 'lease', APP, '-o', 'jsonpath={.spec}') || '{}') as LeaseView;
    const holder = () => lease().holderIdentity ?? '';
    /** Waits until the Lease, each status file (read from the app container), /leader and the role labels agree. */
    const agreed = async (timeoutMs: number) => {
      let last = '';
      try {
        return await waitFor(
          'every view of the injected Deployment to agree on one leader',
          () => {
            let lv: LeaseView;
            try {
              lv = lease();
            } catch {
              return void (last = 'no Lease yet');
            }
            const p = readPods(kubectl, APP, { http: true });
            if (p.filter((x) => !x.deleting).length !== 3) return void (last = `${p.length} pods`);
            const v = singleLeader(p, lv, new Date(), { podLabel: true, everyViewNamesHolder: true });
            if (!v.leader) return void (last = v.problem!);
            if (!allReady(p, 3)) return void (last = 'not every pod Ready');
            return { leader: v.leader, token: v.token! };
          },
          timeoutMs,
          500,
        );
      } catch (err) {
        const events = kubectl('get', 'events', '--sort-by=.lastTimestamp', '-o', 'custom-columns=OBJ:.involvedObject.name,MSG:.message').split('\n').slice(-8);
        throw new Error(`${(err as Error).message}; last seen: ${last}; events:\n${events.join('\n')}`, { cause: err });
      }
    };

    before(() => {
      // The chart's release is done with: free the node's CPU for the operator's checks.
      helm('uninstall', 'lh', '--wait=false', '--ignore-not-found');
    });

    it('helm install of the operator: the webhook is served and its caBundle written', { timeout: 240_000 }, async () => {
      helm(
        'install',
        OPERATOR,
        OPERATOR_CHART,
        '-n',
        OPERATOR_NS,
        '--create-namespace',
        '--set',
        'image.repository=leasehold',
        '--set',
        'image.tag=dev',
        '--set',
        'image.pullPolicy=Never',
        '--wait',
        '--timeout',
        '180s',
      );
      await waitFor(
        'the caBundle in the webhook configuration',
        () => kubectl('get', 'mutatingwebhookconfiguration', OPERATOR, '-o', 'jsonpath={.webhooks[0].clientConfig.caBundle}').length > 0,
        60_000,
        500,
      );
    });

    it('a labelled Deployment of 3 replicas: injected, exactly one leader, and every view agrees', { timeout: 240_000 }, async () => {
      apply(deployment(APP, true));
      const pods = JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${APP}`, '-o', 'json')) as { items: PodJson[] };
      for (const p of pods.items)
        assert.ok(
          p.spec.containers.some((c) => c.name === 'leasehold'),
          `${p.metadata.name} has no sidecar`,
        );
      // The first candidate creates the Lease a lease duration (15 s) after it finds it absent.
      const { leader, token } = await agreed(180_000);
      console.log(`cluster/operator: ${leader} leads ${APP} with token ${token}; Lease, status files, /leader and labels agree`);
    });

    it('deleting the leader pod hands over within 2 s', { timeout: 180_000 }, async () => {
      const old = holder();
      const t0 = Date.now();
      kubectl('delete', 'pod', old, '--wait=false');
      const next = await waitFor('a new holder', () => (holder() !== '' && holder() !== old ? holder() : undefined), 60_000, 50);
      const handoverMs = Date.now() - t0;
      console.log(`cluster/operator: injected leader pod deleted, ${next} leads after ${handoverMs} ms (kubectl polling included)`);
      assert.ok(handoverMs < 2_000, `handover took ${handoverMs} ms`);
      assert.equal((await agreed(120_000)).leader, next);
    });

    it('kubectl rollout restart completes, and the new pods agree on one leader', { timeout: 300_000 }, async () => {
      kubectl('rollout', 'restart', `deployment/${APP}`);
      kubectl('rollout', 'status', `deployment/${APP}`, '--timeout=240s');
      const { leader } = await agreed(120_000);
      console.log(`cluster/operator: rollout restart done; ${leader} leads`);
    });

    it('an unlabelled Deployment is untouched', { timeout: 120_000 }, async () => {
      apply(deployment('plain', false));
      kubectl('rollout', 'status', 'deployment/plain', '--timeout=90s');
      const pods = JSON.parse(kubectl('get', 'pods', '-l', 'app.kubernetes.io/instance=plain', '-o', 'json')) as { items: PodJson[] };
      assert.equal(pods.items.length, 1);
      const p = pods.items[0]!;
      assert.deepEqual(
        p.spec.containers.map((c) => c.name),
        ['app'],
      );
      assert.equal(p.spec.initContainers, undefined);
      assert.ok(!(p.spec.volumes ?? []).some((v) => v.name === 'leasehold-status'), 'the status volume was added');
      assert.ok(!Object.keys(p.metadata.annotations ?? {}).some((k) => k.startsWith('leasehold.io/')), 'leasehold annotations were added');
    });

    it('a bad annotation is refused at admission with its message', { timeout: 60_000 }, () => {
      assert.throws(
        () =>
          kubectl(
            'run',
            'bad-annotation',
            ...BUSYBOX,
            '--restart=Never',
            '--labels=leasehold.io/inject=true',
            '--annotations=leasehold.io/renew-deadline=20s',
            '--',
            'sleep',
            '60',
          ),
        (err: Error) => {
          assert.match(err.message, /denied the request/);
          assert.match(err.message, /leasehold\.io\/renew-deadline "20s"/);
          assert.match(err.message, /leaseDuration must be greater than renewDeadline/);
          return true;
        },
      );
      assert.equal(kubectl('get', 'pods', '--field-selector=metadata.name=bad-annotation', '-o', 'name').trim(), '');
    });

    it('helm uninstall of the operator leaves no webhook configuration, and labelled pods can still be created', { timeout: 180_000 }, () => {
      helm('uninstall', OPERATOR, '-n', OPERATOR_NS, '--wait');
      assert.equal(kubectl('get', 'mutatingwebhookconfigurations', '-o', 'name').trim(), '');
      // With failurePolicy Fail (the chart's default) a dangling webhook would refuse this pod.
      kubectl('run', 'after-uninstall', ...BUSYBOX, '--restart=Never', '--labels=leasehold.io/inject=true', '--', 'sleep', '60');
      kubectl('delete', 'deployment', APP, 'plain', '--wait=false');
      kubectl('delete', 'pod', 'after-uninstall', '--wait=false');
    });
  });
}
