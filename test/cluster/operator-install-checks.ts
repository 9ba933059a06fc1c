/**
 * A second install of the operator on the same node (issue 36): another release in another
 * namespace, with a value of leasehold.io/inject of its own. Refused at `helm install` with the
 * first's value; with its own, each install admits only its pods, and neither touches the
 * other's grants while its passes run, nor the other's leader's renewals. Registered inside the
 * operator's checks (operator-checks.ts), on the same bring-up, beside the first release.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../support/cli.js';
import { grantUids, renewals, type OperatorCheckContext } from './operator-context.js';
import { grantName } from '../../src/operator/rbac.js';

export const SECOND_RELEASE = 'leasehold-operator-b';
export const SECOND_NAMESPACE = 'leasehold-system-b';
const SECOND_VALUE = 'team-b';
/** The second install's Deployment (and its lease). */
const SECOND_APP = 'injected-b';

interface PodJson {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { containers: { name: string }[] };
}

export function secondInstallChecks(ctx: OperatorCheckContext): void {
  it(
    "a second install in another namespace: refused with the first's pod label value; with its own, each admits only its pods and neither touches the other's grants or leader",
    { timeout: 600_000 },
    async () => {
      const { kubectl, helm } = ctx;
      const secondInstallation = `${SECOND_NAMESPACE}.${SECOND_RELEASE}`;
      const install = (...set: string[]) =>
        ctx.tryHelm(
          'install',
          SECOND_RELEASE,
          ctx.chart,
          '-n',
          SECOND_NAMESPACE,
          '--create-namespace',
          // In webhook mode, as the first install: its marks are what keeps each install's grants its own.
          ...['image.repository=leasehold', 'image.tag=dev', 'image.pullPolicy=Never', 'replicaCount=1', 'injection.mode=webhook', ...set].flatMap((s) => [
            '--set',
            s,
          ]),
          '--wait',
          '--timeout',
          '180s',
        );
      const same = install();
      assert.notEqual(same.status, 0, 'the same value is refused');
      assert.match(
        same.stderr,
        new RegExp(`the webhook configuration ${ctx.release}, another leasehold operator install, already injects pods labelled leasehold\\.io/inject=true`),
      );
      assert.equal(kubectl('get', 'mutatingwebhookconfiguration', SECOND_RELEASE, '--ignore-not-found', '-o', 'name').trim(), '');
      const own = install(`webhook.injectValue=${SECOND_VALUE}`);
      assert.equal(own.status, 0, own.stderr);
      try {
        const { leader } = await ctx.agreed(120_000);
        const firstGrants = grantUids(ctx, ctx.installation);
        assert.ok(Object.keys(firstGrants).length >= 2, JSON.stringify(firstGrants));

        // The second install's own workload, in the same namespace: injected by it, elected.
        ctx.apply({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: SECOND_APP },
          spec: {
            replicas: 2,
            selector: { matchLabels: { 'app.kubernetes.io/instance': SECOND_APP } },
            template: {
              metadata: { labels: { 'app.kubernetes.io/instance': SECOND_APP, 'leasehold.io/inject': SECOND_VALUE } },
              spec: {
                terminationGracePeriodSeconds: 10,
                containers: [{ name: 'app', image: 'localhost/busybox:local', imagePullPolicy: 'Never', command: ctx.appCommand }],
              },
            },
          },
        });
        kubectl('rollout', 'status', `deployment/${SECOND_APP}`, '--timeout=180s');
        const secondPods = (JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${SECOND_APP}`, '-o', 'json')) as { items: PodJson[] }).items;
        for (const p of secondPods)
          assert.ok(
            p.spec.containers.some((c) => c.name === 'leasehold'),
            `${p.metadata.name} injected by the second install`,
          );
        const secondLeader = await waitFor('a leader of the second workload', () => ctx.leaseOf(SECOND_APP).holderIdentity || undefined, 120_000, 500);
        await waitFor("the second install's grant", () => Object.keys(grantUids(ctx, secondInstallation)).length >= 2, 60_000, 500);
        const secondGrants = grantUids(ctx, secondInstallation);

        // A pass of each, made with the other's grants in place: a new pod of each, whose grant
        // that pass makes. The first's pod is the attacker's symptom too: it was refused by the
        // second webhook ("no valid annotation leasehold.io/injected-mark").
        const marker = (value: string, lease: string) => ({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: `marker-${lease}`,
            labels: { 'leasehold.io/inject': value, [ctx.testLabel]: 'installs' },
            annotations: { 'leasehold.io/lease': lease },
          },
          spec: {
            schedulingGates: [{ name: 'leasehold.io/never-scheduled' }],
            containers: [{ name: 'app', image: 'localhost/busybox:local', imagePullPolicy: 'Never', command: ctx.appCommand }],
          },
        });
        for (const [value, lease, installation] of [
          ['true', 'marker-a', ctx.installation],
          [SECOND_VALUE, 'marker-b', secondInstallation],
        ] as const) {
          const r = ctx.create(marker(value, lease));
          assert.ok(r.ok, `leasehold.io/inject=${value} refused: ${r.out}`);
          assert.ok(
            (JSON.parse(r.out) as PodJson).spec.containers.some((c) => c.name === 'leasehold'),
            `leasehold.io/inject=${value} injected`,
          );
          const name = grantName(installation, 'default', lease);
          await waitFor(
            `the pass of ${installation}`,
            () => {
              const now = grantUids(ctx, installation);
              return now[`roles/${name}`] !== undefined && now[`rolebindings/${name}`] !== undefined;
            },
            60_000,
            500,
          );
        }
        const stillFirst = grantUids(ctx, ctx.installation);
        const stillSecond = grantUids(ctx, secondInstallation);
        for (const [k, uid] of Object.entries(firstGrants)) assert.equal(stillFirst[k], uid, `the first install's ${k}`);
        for (const [k, uid] of Object.entries(secondGrants)) assert.equal(stillSecond[k], uid, `the second install's ${k}`);
        // Both leaders renew in their own terms: neither lost its grant.
        const firstMs = await renewals(ctx, ctx.app, leader, 3);
        const secondMs = await renewals(ctx, SECOND_APP, secondLeader, 3);
        const reported = kubectl('get', 'events', '--field-selector=reason=LeaseholdNotGranted', '-o', 'name').trim();
        assert.equal(reported, '', "neither install reported the other's pods");
        console.log(
          `cluster/operator: two installs side by side: ${Object.keys(stillFirst).length} and ${Object.keys(stillSecond).length} grants kept by uid through a pass of each; both leaders renewed 3 times (${firstMs} ms, ${secondMs} ms)`,
        );
      } finally {
        ctx.run(['delete', 'deployment', SECOND_APP, '--ignore-not-found', '--wait=false']);
        ctx.run(['delete', 'pods', '-l', `${ctx.testLabel}=installs`, '--ignore-not-found', '--wait=false']);
        helm('uninstall', SECOND_RELEASE, '-n', SECOND_NAMESPACE, '--ignore-not-found', '--wait');
        ctx.run(['delete', 'roles,rolebindings', '-l', `leasehold.io/installation=${secondInstallation}`, '--ignore-not-found']);
        ctx.run(['delete', 'namespace', SECOND_NAMESPACE, '--ignore-not-found', '--wait=false']);
      }
    },
  );
}
