/**
 * The operator's checks on the cluster tier, run in the same session as the chart's (one
 * bring-up): the operator installed by `helm install` from its chart with the image built from
 * the Dockerfile, and a plain Deployment written here (not rendered from leasehold's chart),
 * labelled for injection.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import { comparablePod, notKept } from '../support/admitted-pod.js';
import { allReady, readPods, releasedBeforeExpiry, singleLeader, type LeaseView } from '../support/cluster-views.js';
import type { ClusterSession } from '../support/cluster-session.js';
import { metricValue, readyReplicas, servedFingerprint } from './operator-replicas.js';
import type { OperatorCheckContext } from './operator-context.js';
import { markKeyChecks } from './operator-key-checks.js';
import { SECOND_NAMESPACE, SECOND_RELEASE, secondInstallChecks } from './operator-install-checks.js';

const OPERATOR_CHART = join(REPO, 'deploy/helm/leasehold-operator');
const OPERATOR = 'leasehold-operator';
const OPERATOR_NS = 'leasehold-system';
/** The Deployment's name, hence its default lease name (docs/operator.md). */
const APP = 'injected';
/** The unlabelled Deployment: its first pod is made before the operator exists, its second after. */
const PLAIN = 'plain';
/** Every bare pod the checks create carries this label, so one selector removes them all. */
const TEST_LABEL = 'leasehold-test';
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
        metadata: { labels, ...(inject ? { annotations: { 'leasehold.io/pod-label': 'true' } } : {}) },
        spec: {
          terminationGracePeriodSeconds: 10,
          containers: [{ name: 'app', image: 'localhost/busybox:local', imagePullPolicy: 'Never', command: APP_COMMAND }],
        },
      },
    },
  };
}

interface PodJson {
  metadata: { name: string; uid: string; annotations?: Record<string, string>; deletionTimestamp?: string };
  spec: { serviceAccountName?: string; containers: { name: string }[]; initContainers?: { name: string }[]; volumes?: { name: string }[] };
  status?: { phase?: string };
}

const injected = (p: PodJson) => [...p.spec.containers, ...(p.spec.initContainers ?? [])].some((c) => c.name === 'leasehold');

/** A bare pod labelled for injection; `gated` ones are never scheduled (only their admission matters). */
function labelledPod(name: string, purpose: string, opts: { lease?: string; gated?: boolean } = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { 'leasehold.io/inject': 'true', [TEST_LABEL]: purpose },
      annotations: opts.lease ? { 'leasehold.io/lease': opts.lease } : {},
    },
    spec: {
      ...(opts.gated ? { schedulingGates: [{ name: 'leasehold.io/never-scheduled' }] } : {}),
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: 'localhost/busybox:local', imagePullPolicy: 'Never', command: APP_COMMAND }],
    },
  };
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
    const leaseOf = (name: string): LeaseView => JSON.parse(kubectl('get', 'lease', name, '-o', 'jsonpath={.spec}') || '{}') as LeaseView;
    const lease = () => leaseOf(APP);
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

    /** kubectl that does not throw: its exit status and output, for answers such as can-i's "no". */
    const run = (args: string[], input?: string) =>
      spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', ns, ...args], { input, encoding: 'utf8', timeout: 120_000 });
    /** Creates a manifest as a user would; the admitted object (JSON) or kubectl's error. */
    const create = (manifest: object): { ok: boolean; out: string } => {
      const r = run(['create', '-f', '-', '-o', 'json'], JSON.stringify(manifest));
      return { ok: r.status === 0, out: r.status === 0 ? r.stdout : r.stderr };
    };
    const op = (...args: string[]) => kubectl('-n', OPERATOR_NS, ...args);
    const caBundle = () => kubectl('get', 'mutatingwebhookconfiguration', OPERATOR, '-o', 'jsonpath={.webhooks[0].clientConfig.caBundle}');
    const failurePolicy = (policy: 'Fail' | 'Ignore') =>
      helm('upgrade', OPERATOR, OPERATOR_CHART, '-n', OPERATOR_NS, '--reuse-values', '--set', `webhook.failurePolicy=${policy}`, '--wait', '--timeout', '120s');
    const plainPods = () =>
      (JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${PLAIN}`, '-o', 'json')) as { items: PodJson[] }).items.filter(
        (p) => !p.metadata.deletionTimestamp,
      );
    /** The unlabelled Deployment's pod made with no webhook in the cluster: what the API server alone makes of the manifest. */
    let reference: PodJson | undefined;
    const context: OperatorCheckContext = {
      kubectl,
      helm,
      tryHelm: (...args) => {
        try {
          helm(...args);
          return { status: 0, stderr: '' };
        } catch (err) {
          const e = err as { status?: number; stderr?: string };
          return { status: e.status ?? 1, stderr: String(e.stderr ?? err) };
        }
      },
      op,
      run,
      create,
      apply,
      agreed,
      leaseOf,
      chart: OPERATOR_CHART,
      release: OPERATOR,
      operatorNamespace: OPERATOR_NS,
      installation: `${OPERATOR_NS}.${OPERATOR}`,
      app: APP,
      appCommand: APP_COMMAND,
      testLabel: TEST_LABEL,
    };

    before(() => {
      // The chart's release is done with: free the node's CPU for the operator's checks.
      helm('uninstall', 'lh', '--wait=false', '--ignore-not-found');
    });

    // Whatever failed: every object the checks made goes (the operator's Roles outlive its release).
    after(() => {
      const quiet = (...args: string[]) => run(args);
      quiet('delete', 'deployment', APP, PLAIN, '--ignore-not-found', '--wait=false');
      quiet('delete', 'pods', '-l', TEST_LABEL, '--ignore-not-found', '--wait=false');
      quiet('delete', 'pod', 'bad-annotation', '--ignore-not-found', '--wait=false');
      quiet('delete', 'deployment', 'injected-b', '--ignore-not-found', '--wait=false');
      for (const [release, namespace] of [
        [OPERATOR, OPERATOR_NS],
        [SECOND_RELEASE, SECOND_NAMESPACE],
      ] as const) {
        try {
          helm('uninstall', release, '-n', namespace, '--ignore-not-found', '--wait=false');
        } catch (err) {
          console.log(`cluster/operator: cleanup: ${(err as Error).message}`);
        }
      }
      quiet('delete', 'roles,rolebindings', '-A', '-l', 'app.kubernetes.io/managed-by=leasehold-operator', '--ignore-not-found', '--wait=false');
      quiet('delete', 'namespace', OPERATOR_NS, SECOND_NAMESPACE, '--ignore-not-found', '--wait=false');
    });

    it("before the operator exists: an unlabelled Deployment's pod, as the API server alone admits it", { timeout: 120_000 }, () => {
      const sent = deployment(PLAIN, false);
      apply(sent);
      kubectl('rollout', 'status', `deployment/${PLAIN}`, '--timeout=90s');
      const pods = plainPods();
      assert.equal(pods.length, 1);
      reference = pods[0]!;
      // What was sent is there, as sent; the rest is the API server's defaults.
      assert.deepEqual(notKept(sent.spec.template, reference), []);
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
        // The webhook's checks: this node's API server (1.36+) would have the default, auto, install the policies.
        '--set',
        'injection.mode=webhook',
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
      // The operator makes the Lease, with no holder, before it grants it: the first candidate
      // to read it then takes it without waiting a lease duration.
      const { leader, token } = await agreed(180_000);
      console.log(`cluster/operator: ${leader} leads ${APP} with token ${token}; Lease, status files, /leader and labels agree`);
    });

    it("the injected pods' ServiceAccount can touch only its Lease (kubectl auth can-i)", { timeout: 60_000 }, () => {
      const pod = (JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${APP}`, '-o', 'json')) as { items: PodJson[] }).items[0]!;
      const as = `system:serviceaccount:${ns}:${pod.spec.serviceAccountName ?? 'default'}`;
      const canI = (verb: string, resource: string, inNs = ns) => {
        const r = run(['auth', 'can-i', verb, resource, '-n', inNs, `--as=${as}`]);
        return `${verb} ${resource} in ${inNs}: ${r.stdout.trim() || r.stderr.trim()}`;
      };
      const asked = [
        canI('get', `leases/${APP}`),
        canI('update', `leases/${APP}`),
        canI('get', 'leases/another-lease'),
        canI('update', 'leases/another-lease'),
        canI('delete', `leases/${APP}`),
        canI('get', `leases/${APP}`, 'kube-public'),
        canI('update', `leases/${APP}`, 'kube-public'),
      ];
      assert.deepEqual(asked, [
        `get leases/${APP} in ${ns}: yes`,
        `update leases/${APP} in ${ns}: yes`,
        `get leases/another-lease in ${ns}: no`,
        `update leases/another-lease in ${ns}: no`,
        `delete leases/${APP} in ${ns}: no`,
        `get leases/${APP} in kube-public: no`,
        `update leases/${APP} in kube-public: no`,
      ]);
      console.log(`cluster/operator: ${as} may get and update leases/${APP} only (another Lease, delete, another namespace: no)`);
    });

    it('deleting the leader pod hands over by a release, before the old term could expire', { timeout: 180_000 }, async () => {
      const before = lease();
      const old = before.holderIdentity ?? '';
      const t0 = Date.now();
      kubectl('delete', 'pod', old, '--wait=false');
      const next = await waitFor('a new holder', () => (holder() !== '' && holder() !== old ? holder() : undefined), 60_000, 50);
      const handoverMs = Date.now() - t0;
      console.log(`cluster/operator: injected leader pod deleted, ${next} leads after ${handoverMs} ms (kubectl polling included)`);
      // The time is a figure (kubectl's polling and the kubelet's pace are in it); what is
      // asserted is that the old leader released: the new term began before the old could expire.
      assert.equal(releasedBeforeExpiry(before, lease()), null);
      assert.equal((await agreed(120_000)).leader, next);
    });

    it('kubectl rollout restart completes, and the new pods agree on one leader', { timeout: 300_000 }, async () => {
      kubectl('rollout', 'restart', `deployment/${APP}`);
      kubectl('rollout', 'status', `deployment/${APP}`, '--timeout=240s');
      const { leader } = await agreed(120_000);
      console.log(`cluster/operator: rollout restart done; ${leader} leads`);
    });

    // The attacker's round of issue 36: the mark key lost, and a second install beside this one.
    markKeyChecks(context);
    secondInstallChecks(context);

    it('an unlabelled Deployment is untouched: a pod made with the webhook in place equals the one made before it existed', { timeout: 120_000 }, () => {
      assert.ok(reference, 'no pod from before the operator to compare with');
      kubectl('scale', `deployment/${PLAIN}`, '--replicas=2');
      kubectl('rollout', 'status', `deployment/${PLAIN}`, '--timeout=90s');
      const pods = plainPods();
      assert.equal(pods.length, 2);
      const made = pods.find((p) => p.metadata.name !== reference!.metadata.name)!;
      // Same ReplicaSet, same template: all but the pod's identity, its status and its token
      // volume's random suffix must be equal, metadata and spec, byte for byte once serialized.
      assert.deepEqual(comparablePod(made), comparablePod(reference));
      console.log(`cluster/operator: ${made.metadata.name} (webhook in place) equals ${reference.metadata.name} (no webhook) but for its identity`);
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

    it(
      "operator scaled to 0 under the chart's failurePolicy Ignore: a labelled pod starts uninjected, and is reported within 30 s of the operator's return",
      { timeout: 360_000 },
      async () => {
        failurePolicy('Ignore');
        let back = 0;
        try {
          op('scale', `deployment/${OPERATOR}`, '--replicas=0');
          try {
            await waitFor(
              'no operator replica left',
              () => op('get', 'pods', '-l', 'app.kubernetes.io/name=leasehold-operator', '-o', 'name').trim() === '',
              120_000,
              250,
            );
            // Until the API server's cache of the configuration has Ignore, the pod is refused: retry.
            let refused = '';
            await waitFor(
              'the labelled pod created with no webhook answering',
              () => {
                const r = create(labelledPod('missed', 'missed'));
                return r.ok || void (refused = r.out);
              },
              60_000,
              500,
            ).catch((err: Error) => {
              throw new Error(`${err.message}; last refusal: ${refused}`, { cause: err });
            });
            const missed = await waitFor(
              'the uninjected pod running',
              () => {
                const p = JSON.parse(kubectl('get', 'pod', 'missed', '-o', 'json')) as PodJson;
                return p.status?.phase === 'Running' && p;
              },
              90_000,
              250,
            );
            assert.ok(!injected(missed), 'the pod was injected although no replica ran');
          } finally {
            op('scale', `deployment/${OPERATOR}`, '--replicas=2');
            back = Date.now();
          }
          const uid = (JSON.parse(kubectl('get', 'pod', 'missed', '-o', 'json')) as PodJson).metadata.uid;
          // The operator's return is the scale back (its pods start, elect, reconcile after it).
          const deadline = back + 30_000;
          const within = (what: string, check: () => boolean | Promise<boolean>) =>
            waitFor(what, check, Math.max(0, deadline - Date.now()), 250).then(() => Date.now() - back);
          const leader = () =>
            readyReplicas(kubectl, OPERATOR_NS, OPERATOR).find((r) => r.name === op('get', 'lease', OPERATOR, '-o', 'jsonpath={.spec.holderIdentity}'));
          const eventMs = await within(
            'the LeaseholdNotInjected Event on the pod',
            () => kubectl('get', 'events', `--field-selector=involvedObject.uid=${uid},reason=LeaseholdNotInjected`, '-o', 'name').trim() !== '',
          );
          const metricMs = await within('leasehold_operator_uninjected_pods 1 on the elected replica', async () => {
            const l = leader();
            return l !== undefined && (await metricValue(l.ip, 'leasehold_operator_uninjected_pods').catch(() => undefined)) === 1;
          });
          const logMs = await within('the log line on the elected replica', () => {
            const l = leader();
            const lines = l ? run(['-n', OPERATOR_NS, 'logs', l.name]).stdout.split('\n') : [];
            return lines.some((line) => line.includes('"msg":"labelled pod not injected"') && line.includes('"pod":"missed"'));
          });
          console.log(
            `cluster/operator: uninjected pod reported after the scale back to 2 replicas: Event ${eventMs} ms, metric ${metricMs} ms, log line ${logMs} ms`,
          );
        } finally {
          run(['delete', 'pod', 'missed', '--ignore-not-found', '--wait=false']);
          op('rollout', 'status', `deployment/${OPERATOR}`, '--timeout=120s');
          failurePolicy('Fail');
        }
      },
    );

    it(
      'a forced early certificate rotation while labelled pods are created one after another: every admission succeeds and injects, every replica trusted by the bundle throughout',
      { timeout: 240_000 },
      async () => {
        op('rollout', 'status', `deployment/${OPERATOR}`, '--timeout=120s');
        const replicas = readyReplicas(kubectl, OPERATOR_NS, OPERATOR);
        assert.equal(replicas.length, 2);
        const bundle = caBundle();
        // The API server keeps its connections to the webhook open, so admissions alone may never
        // meet a new certificate: each pass also opens a new connection to every replica, verified
        // against the bundle for the Service's name as the API server verifies one.
        const served = () =>
          Promise.all(replicas.map((r) => servedFingerprint(r.ip, Buffer.from(bundle, 'base64').toString(), `${OPERATOR}.${OPERATOR_NS}.svc`)));
        const before = new Set(await served());
        let created = 0;
        const admit = () => {
          const r = create(labelledPod(`rotation-${created}`, 'rotation', { lease: 'rotation', gated: true }));
          assert.ok(r.ok, `pod ${created} refused during the rotation: ${r.out}`);
          assert.ok(injected(JSON.parse(r.out) as PodJson), `pod ${created} admitted without the sidecar during the rotation`);
          created++;
        };
        admit();
        const t0 = Date.now();
        op('annotate', 'secret', `${OPERATOR}-tls`, 'leasehold.io/renew=true');
        // Until every replica serves the new certificate, then a few more creations after it.
        let renewedMs = 0;
        for (let after = 0; after < 5;) {
          admit();
          if (renewedMs) after++;
          else if ((await served()).every((f) => !before.has(f))) renewedMs = Date.now() - t0;
          assert.ok(renewedMs || Date.now() - t0 < 90_000, `the replicas still serve the old certificate ${Date.now() - t0} ms after the renewal was asked`);
        }
        assert.equal(caBundle(), bundle, 'same CA: the bundle is unchanged');
        const secret = JSON.parse(op('get', 'secret', `${OPERATOR}-tls`, '-o', 'json')) as {
          metadata: { annotations?: Record<string, string> };
          data: Record<string, string>;
        };
        const cert = new X509Certificate(Buffer.from(secret.data['tls.crt']!, 'base64'));
        assert.ok(cert.verify(new X509Certificate(Buffer.from(bundle, 'base64')).publicKey), 'the new certificate is signed by the CA in the bundle');
        assert.deepEqual(await served(), [cert.fingerprint256, cert.fingerprint256], "each replica serves the Secret's certificate");
        assert.equal(secret.metadata.annotations?.['leasehold.io/renew'], undefined, 'the annotation is removed');
        console.log(
          `cluster/operator: both replicas served the renewed certificate ${renewedMs} ms after the annotation; ${created} pods admitted, all injected`,
        );
        run(['delete', 'pods', '-l', `${TEST_LABEL}=rotation`, '--wait=false']);
      },
    );

    it('helm uninstall of the operator leaves no webhook configuration, and labelled pods can still be created', { timeout: 180_000 }, async () => {
      helm('uninstall', OPERATOR, '-n', OPERATOR_NS, '--wait');
      const uninstalledAt = Date.now();
      assert.equal(kubectl('get', 'mutatingwebhookconfigurations', '-o', 'name').trim(), '');
      // With failurePolicy Fail (the chart's default) a dangling webhook would refuse this pod, and
      // a sidecar guard left behind would refuse it for ever. The API server drops a deleted
      // admission policy up to about a second after helm deleted it (as it applies a new one
      // late: docs/operator.md "Pod creation during a switch"), so a pod made meanwhile may be
      // refused by the guard, which a workload's controller retries: so does this check, for a
      // few seconds, the guard's refusal only.
      const refusals: number[] = [];
      await waitFor(
        'a labelled pod admitted after the uninstall',
        () => {
          try {
            kubectl('run', 'after-uninstall', ...BUSYBOX, '--restart=Never', `--labels=leasehold.io/inject=true,${TEST_LABEL}=uninstall`, '--', 'sleep', '60');
            return true;
          } catch (err) {
            if (!/sidecar-guard/.test(String(err))) throw err;
            refusals.push(Date.now() - uninstalledAt);
            return false;
          }
        },
        15_000,
        200,
      );
      console.log(
        `cluster/operator: a labelled pod admitted ${Date.now() - uninstalledAt} ms after the uninstall; refused by the guard still in effect before: ${refusals.join(', ') || 'never'} ms`,
      );
    });
  });
}
