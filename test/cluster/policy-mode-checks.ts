/**
 * The operator installed with `injection.mode=policy` on the same node (issue 44): the API
 * server injects through the chart's MutatingAdmissionPolicy, so no webhook configuration, no
 * certificate and no Secret come with the install, a labelled pod is injected while no replica
 * runs (and granted once one is back), and Pod Security "restricted" admits what the policy
 * gives. Its own release, namespaces and `webhook.injectValue`, so it never meets the webhook
 * install of operator-checks.ts (the chart refuses two installs with one value); registered after
 * those checks, on the same bring-up.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import type { ClusterSession } from '../support/cluster-session.js';
import { grantName } from '../../src/operator/rbac.js';

const OPERATOR_CHART = join(REPO, 'deploy/helm/leasehold-operator');
const RELEASE = 'leasehold-operator-policy';
const OPERATOR_NS = 'leasehold-policy-system';
const INSTALLATION = `${OPERATOR_NS}.${RELEASE}`;
const INJECT_VALUE = 'policy';
/** The labelled workloads' namespace, and the one where Pod Security "restricted" is enforced. */
const APPS_NS = 'policy-apps';
const RESTRICTED_NS = 'policy-restricted';
/** The Deployment (and its lease), the bare pod made while no replica runs (and its lease), the StatefulSet. */
const APP = 'policy-app';
const LATE = 'policy-late';
const STS = 'policy-sts';
/** The chart's default `resync`: a pass of the elected replica at least this often. */
const RESYNC_MS = 30_000;
/** An app that exits on SIGTERM, so a deleted pod goes at once and the sidecar releases. */
const APP_COMMAND = ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"];
/** What Pod Security "restricted" asks of a container; the sidecar the policy adds must meet it on its own. */
const RESTRICTED_CONTAINER = {
  runAsNonRoot: true,
  runAsUser: 1000,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

interface PodJson {
  metadata: { name: string; deletionTimestamp?: string };
  spec: { containers: { name: string }[]; initContainers?: { name: string }[] };
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

const injected = (p: PodJson) => [...p.spec.containers, ...(p.spec.initContainers ?? [])].some((c) => c.name === 'leasehold');
const appContainer = (securityContext?: object) => ({
  name: 'app',
  image: 'localhost/busybox:local',
  imagePullPolicy: 'Never',
  command: APP_COMMAND,
  ...(securityContext ? { securityContext } : {}),
});

export function policyModeChecks(cluster: ClusterSession): void {
  describe('the operator in policy mode on the same node: the API server injects, no webhook', () => {
    const { helm } = cluster;
    /** kubectl that does not throw: its exit status and output. */
    const run = (args: string[], input?: string) =>
      spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, ...args], { input, encoding: 'utf8', timeout: 120_000 });
    const k = (ns: string, ...args: string[]) => {
      const r = run(['-n', ns, ...args]);
      if (r.status !== 0) throw new Error(`kubectl -n ${ns} ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const applyJson = (ns: string, manifest: object) => {
      const r = run(['-n', ns, 'apply', '-f', '-'], JSON.stringify(manifest));
      if (r.status !== 0) throw new Error(`kubectl apply in ${ns}: ${r.stderr}`);
    };
    const holderOf = (ns: string, name: string) => {
      const r = run(['-n', ns, 'get', 'lease', name, '-o', 'jsonpath={.spec.holderIdentity}']);
      return r.status === 0 ? r.stdout.trim() : '';
    };
    const podsOf = (ns: string, instance: string) =>
      (JSON.parse(k(ns, 'get', 'pods', '-l', `app.kubernetes.io/instance=${instance}`, '-o', 'json')) as { items: PodJson[] }).items.filter(
        (p) => !p.metadata.deletionTimestamp,
      );
    const isLeaderIn = (ns: string, pod: string) => {
      const r = run(['-n', ns, 'exec', pod, '-c', 'app', '--', 'cat', '/leader/status.json']);
      try {
        return r.status === 0 && (JSON.parse(r.stdout) as { isLeader: boolean }).isLeader;
      } catch {
        return false; // read while the sidecar replaced it: read again
      }
    };
    /** The grant of `lease` to the default ServiceAccount of `ns`: its Role and RoleBinding both there. */
    const granted = (ns: string, lease: string) => {
      const name = grantName(INSTALLATION, 'default', lease);
      return run(['-n', ns, 'get', `role/${name}`, `rolebinding/${name}`, '-o', 'name']).status === 0;
    };
    const operatorPods = () => k(OPERATOR_NS, 'get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'name').trim();

    // Whatever failed: the release, what it granted (its Roles outlive it) and the namespaces go.
    after(() => {
      for (const ns of [APPS_NS, RESTRICTED_NS]) run(['-n', ns, 'delete', 'deployments,statefulsets,pods', '--all', '--ignore-not-found', '--wait=false']);
      try {
        helm('uninstall', RELEASE, '-n', OPERATOR_NS, '--ignore-not-found', '--wait=false');
      } catch (err) {
        console.log(`cluster/policy: cleanup: ${(err as Error).message}`);
      }
      run(['delete', 'roles,rolebindings', '-A', '-l', `leasehold.io/installation=${INSTALLATION}`, '--ignore-not-found', '--wait=false']);
      run(['delete', 'namespace', OPERATOR_NS, APPS_NS, RESTRICTED_NS, '--ignore-not-found', '--wait=false']);
    });

    it('helm install with injection.mode=policy: the policies, and no webhook configuration, no certificate, no Secret', { timeout: 240_000 }, () => {
      helm(
        'install',
        RELEASE,
        OPERATOR_CHART,
        '-n',
        OPERATOR_NS,
        '--create-namespace',
        ...['image.repository=leasehold', 'image.tag=dev', 'image.pullPolicy=Never', 'injection.mode=policy', `webhook.injectValue=${INJECT_VALUE}`].flatMap(
          (s) => ['--set', s],
        ),
        '--wait',
        '--timeout',
        '180s',
      );
      k('default', 'create', 'namespace', APPS_NS);
      k('default', 'create', 'namespace', RESTRICTED_NS);
      k('default', 'label', 'namespace', RESTRICTED_NS, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/enforce-version=latest');
      const ofRelease = (kind: string) => k('default', 'get', kind, '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'name').trim();
      assert.equal(ofRelease('mutatingwebhookconfigurations'), '', 'a webhook configuration from the policy install');
      assert.equal(run(['get', 'mutatingwebhookconfiguration', RELEASE]).status, 1, `mutatingwebhookconfiguration/${RELEASE} exists`);
      assert.equal(
        k('default', 'get', 'mutatingadmissionpolicy', RELEASE, '-o', 'name').trim(),
        `mutatingadmissionpolicy.admissionregistration.k8s.io/${RELEASE}`,
      );
      assert.equal(
        k('default', 'get', 'mutatingadmissionpolicybinding', RELEASE, '-o', 'name').trim(),
        `mutatingadmissionpolicybinding.admissionregistration.k8s.io/${RELEASE}`,
      );
      // The replicas ran (helm waited for them Ready) and made no certificate or mark Secret:
      // the only Secrets of the namespace are helm's release records.
      const secrets = k(OPERATOR_NS, 'get', 'secrets', '-o', 'name')
        .trim()
        .split('\n')
        .filter((s) => s !== '' && !s.startsWith('secret/sh.helm.release.'));
      assert.deepEqual(secrets, [], 'Secrets of the policy install');
      assert.equal(k(OPERATOR_NS, 'get', 'services', '-o', 'name').trim(), '', 'a Service for a webhook');
    });

    it('a labelled Deployment of 2 replicas: injected by the policy, and one leader by the Lease and the status files', { timeout: 240_000 }, async () => {
      applyJson(APPS_NS, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: APP },
        spec: {
          replicas: 2,
          selector: { matchLabels: { 'app.kubernetes.io/instance': APP } },
          template: {
            metadata: { labels: { 'app.kubernetes.io/instance': APP, 'leasehold.io/inject': INJECT_VALUE } },
            spec: { terminationGracePeriodSeconds: 10, containers: [appContainer()] },
          },
        },
      });
      k(APPS_NS, 'rollout', 'status', `deployment/${APP}`, '--timeout=180s');
      const pods = podsOf(APPS_NS, APP);
      assert.equal(pods.length, 2);
      for (const p of pods) assert.ok(injected(p), `${p.metadata.name} has no sidecar`);
      const leader = await waitFor(
        'one leader of the Deployment, by the Lease and every status file',
        () => {
          const h = holderOf(APPS_NS, APP);
          if (!pods.some((p) => p.metadata.name === h)) return undefined;
          const leaders = pods.filter((p) => isLeaderIn(APPS_NS, p.metadata.name)).map((p) => p.metadata.name);
          return leaders.length === 1 && leaders[0] === h && h;
        },
        120_000,
        500,
      );
      assert.ok(granted(APPS_NS, APP), `no grant of ${APP}`);
      console.log(`cluster/policy: ${leader} leads ${APP} (2 replicas injected by the MutatingAdmissionPolicy)`);
    });

    it(
      'the operator scaled to 0: a labelled pod created meanwhile is injected and runs; once a replica leads again it is granted within a pass and elected',
      { timeout: 300_000 },
      async () => {
        k(OPERATOR_NS, 'scale', `deployment/${RELEASE}`, '--replicas=0');

        try {
          await waitFor('no operator replica left', () => operatorPods() === '', 120_000, 250);
          const r = run(
            ['-n', APPS_NS, 'create', '-f', '-', '-o', 'json'],
            JSON.stringify({
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: {
                name: LATE,
                labels: { 'app.kubernetes.io/instance': LATE, 'leasehold.io/inject': INJECT_VALUE },
                annotations: { 'leasehold.io/lease': LATE },
              },
              spec: { terminationGracePeriodSeconds: 1, containers: [appContainer()] },
            }),
          );
          assert.equal(r.status, 0, `the labelled pod was refused with no replica running: ${r.stderr}`);
          assert.ok(injected(JSON.parse(r.stdout) as PodJson), 'the pod was admitted without the sidecar while no replica ran');
          await waitFor(
            'the injected pod running',
            () => (JSON.parse(k(APPS_NS, 'get', 'pod', LATE, '-o', 'json')) as PodJson).status?.phase === 'Running',
            90_000,
            250,
          );
          assert.equal(holderOf(APPS_NS, LATE), '', 'the pod leads with no grant');
          assert.equal(granted(APPS_NS, LATE), false, 'a grant made with no replica running');
        } finally {
          k(OPERATOR_NS, 'scale', `deployment/${RELEASE}`, '--replicas=2');
        }
        const back = Date.now();
        // The operator is back once one of its replicas holds its Lease; its first pass follows.
        await waitFor(
          'an operator replica holding its Lease',
          () => {
            const h = holderOf(OPERATOR_NS, RELEASE);
            return h !== '' && operatorPods().includes(`pod/${h}`);
          },
          120_000,
          250,
        );
        const elected = Date.now();
        await waitFor(`the grant of ${LATE}`, () => granted(APPS_NS, LATE), RESYNC_MS, 250);
        const grantMs = Date.now() - elected;
        await waitFor('the pod elected', () => holderOf(APPS_NS, LATE) === LATE && isLeaderIn(APPS_NS, LATE), 60_000, 250);
        console.log(
          `cluster/policy: pod created with the operator at 0 was injected; granted ${grantMs} ms after a replica led again (${elected - back} ms after the scale back), then elected`,
        );
        k(OPERATOR_NS, 'rollout', 'status', `deployment/${RELEASE}`, '--timeout=120s');
      },
    );

    it('a StatefulSet in a namespace enforcing Pod Security "restricted": injected, admitted, running and elected', { timeout: 240_000 }, async () => {
      applyJson(RESTRICTED_NS, {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: STS },
        spec: {
          replicas: 1,
          serviceName: STS,
          selector: { matchLabels: { 'app.kubernetes.io/instance': STS } },
          template: {
            metadata: { labels: { 'app.kubernetes.io/instance': STS, 'leasehold.io/inject': INJECT_VALUE } },
            spec: { terminationGracePeriodSeconds: 1, containers: [appContainer(RESTRICTED_CONTAINER)] },
          },
        },
      });
      let pod: PodJson | undefined;
      try {
        pod = await waitFor(
          `${STS}-0 Ready`,
          () => {
            const p = podsOf(RESTRICTED_NS, STS)[0];
            return p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && p;
          },
          150_000,
          500,
        );
      } catch (err) {
        // Pod Security's refusal shows on the StatefulSet's events, not on a pod.
        const events = run(['-n', RESTRICTED_NS, 'get', 'events', '-o', 'custom-columns=OBJ:.involvedObject.name,MSG:.message']).stdout;
        throw new Error(`${(err as Error).message}; events:\n${events}`, { cause: err });
      }
      assert.ok(injected(pod), `${pod.metadata.name} has no sidecar`);
      await waitFor(`${STS}-0 elected`, () => holderOf(RESTRICTED_NS, STS) === `${STS}-0` && isLeaderIn(RESTRICTED_NS, `${STS}-0`), 90_000, 250);
      console.log(`cluster/policy: ${STS}-0 injected and elected in a namespace enforcing Pod Security "restricted"`);
    });

    it('helm uninstall leaves none of the policies or their bindings', { timeout: 180_000 }, () => {
      helm('uninstall', RELEASE, '-n', OPERATOR_NS, '--wait');
      for (const kind of [
        'mutatingadmissionpolicies',
        'mutatingadmissionpolicybindings',
        'validatingadmissionpolicies',
        'validatingadmissionpolicybindings',
        'mutatingwebhookconfigurations',
      ]) {
        const left = k('default', 'get', kind, '-o', 'name')
          .trim()
          .split('\n')
          .filter((n) => n.includes(RELEASE));
        assert.deepEqual(left, [], `${kind} left by the uninstall`);
      }
    });
  });
}
