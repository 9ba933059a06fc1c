/**
 * An operator install switched from the webhook to the MutatingAdmissionPolicy by `helm upgrade`
 * (issue 44), on the same node: what users do once their cluster serves the policy. Installed in
 * webhook mode with a labelled Deployment of 2 leading, then upgraded to `injection.mode=policy`
 * while a labelled pod's creation is tried every 50 ms and the Deployment's Lease is read every
 * 250 ms (switch-sampler.ts): creations injected by the webhook, then refused or admitted
 * without the sidecar only in a short window (measured and bounded: docs/operator.md, "Pod
 * creation during a switch"), then injected by the policy; the pods the webhook injected keep
 * running, granted, with one leader in one term, and a pod made after the switch is the policy's
 * and joins that election. Then back to the webhook the same way. Its own release, namespaces and
 * `webhook.injectValue`, so it never meets the other installs; registered after
 * policy-mode-checks.ts, on the same bring-up.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import type { ClusterSession } from '../support/cluster-session.js';
import { grantName } from '../../src/operator/rbac.js';
import { SwitchSampler } from './switch-sampler.js';
import { judgeSwitch } from '../support/switch-judge.js';

const OPERATOR_CHART = join(REPO, 'deploy/helm/leasehold-operator');
const RELEASE = 'leasehold-operator-switch';
const OPERATOR_NS = 'leasehold-switch-system';
const INSTALLATION = `${OPERATOR_NS}.${RELEASE}`;
const INJECT_VALUE = 'switch';
const APPS_NS = 'switch-apps';
/** The Deployment (and its lease), and the gated pod whose grant shows a pass of the new operator. */
const APP = 'switch-app';
const MARKER = 'switch-marker';
const MARK = 'leasehold.io/injected-mark';
/** An app that exits on SIGTERM, so a deleted pod goes at once and the sidecar releases. */
const APP_COMMAND = ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"];
/** The longest a switch may refuse pods or admit them without the sidecar: 0.1 to 3.7 s seen on a loaded 2-core machine. */
const MAX_WINDOW_MS = 10_000;
/** Creations tried after helm returned: the API server's admission plugins follow the configurations by informers. */
const SETTLE_MS = 5_000;

interface PodJson {
  metadata: { name: string; uid: string; annotations?: Record<string, string>; deletionTimestamp?: string };
  spec: { containers: { name: string }[]; initContainers?: { name: string }[] };
  status?: { containerStatuses?: { name: string; restartCount: number }[]; conditions?: { type: string; status: string }[] };
}

const sidecars = (p: PodJson) => [...p.spec.containers, ...(p.spec.initContainers ?? [])].filter((c) => c.name === 'leasehold').length;
const ready = (p: PodJson) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export function modeSwitchChecks(cluster: ClusterSession): void {
  describe('the operator switched from webhook to policy by helm upgrade on the same node', () => {
    const run = (args: string[], input?: string) =>
      spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, ...args], { input, encoding: 'utf8', timeout: 120_000 });
    const k = (ns: string, ...args: string[]) => {
      const r = run(['-n', ns, ...args]);
      if (r.status !== 0) throw new Error(`kubectl -n ${ns} ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const exists = (ns: string, what: string) => run(['-n', ns, 'get', what, '-o', 'name']).status === 0;
    const pods = () =>
      (JSON.parse(k(APPS_NS, 'get', 'pods', '-l', `app.kubernetes.io/instance=${APP}`, '-o', 'json')) as { items: PodJson[] }).items.filter(
        (p) => !p.metadata.deletionTimestamp,
      );
    const lease = () => JSON.parse(k(APPS_NS, 'get', 'lease', APP, '-o', 'jsonpath={.spec}') || '{}') as { holderIdentity?: string; leaseTransitions?: number };
    const status = (pod: string) => {
      const r = run(['-n', APPS_NS, 'exec', pod, '-c', 'app', '--', 'cat', '/leader/status.json']);
      try {
        return r.status === 0 ? (JSON.parse(r.stdout) as { lease: string; holder: string | null; isLeader: boolean; fencingToken: number | null }) : undefined;
      } catch {
        return undefined; // read while the sidecar replaced it: read again
      }
    };
    /** Role and RoleBinding of the Deployment's grant, by uid (the same uids: never taken back and made again). */
    const grant = () => {
      const name = grantName(INSTALLATION, 'default', APP);
      const r = run(['-n', APPS_NS, 'get', `role/${name}`, `rolebinding/${name}`, '-o', 'jsonpath={.items[*].metadata.uid}']);
      return r.status === 0 ? r.stdout.trim() : '';
    };
    /** The helm of a switch while it runs: the cleanup ends it (by its PID) if a check timed out. */
    let helmChild: ChildProcess | undefined;
    /** helm without blocking this process, so the sampler keeps running while it does. */
    const helmAsync = (...args: string[]) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(cluster.helmPath, ['--kubeconfig', cluster.kubeconfig, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
        helmChild = child;
        let err = '';
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.once('error', reject);
        child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`helm ${args.join(' ')}: ${err}`))));
      });
    let sampler: SwitchSampler | undefined;
    /** The pod the policy injected after the switch. */
    let policyPod: string | undefined;
    /** What the first check saw: the leader, its term, and each pod's uid and restarts. */
    let before: { leader: string; transitions: number; pods: string; grant: string } | undefined;
    const podIdentities = (ps: PodJson[]) =>
      ps
        .map((p) => `${p.metadata.name}/${p.metadata.uid}/${(p.status?.containerStatuses ?? []).map((c) => `${c.name}:${c.restartCount}`).join(',')}`)
        .sort()
        .join(' ');

    /** The Lease as the sampler read it: one holder, one term, renewed all along. */
    const keptTerm = (sm: SwitchSampler, t0: number) => {
      assert.ok(before);
      assert.ok(sm.leases.length >= 10, `only ${sm.leases.length} reads of the Lease`);
      for (const l of sm.leases) {
        assert.equal(l.holder, before.leader, `the Lease's holder at +${l.at - t0} ms`);
        assert.equal(l.transitions, before.transitions, `a new term at +${l.at - t0} ms`);
      }
      assert.ok(new Set(sm.leases.map((l) => l.renewTime)).size >= 3, 'the leader did not renew during the switch');
    };
    /** `helm upgrade` to `mode` with the sampler running, and a few seconds more after helm returned. */
    const switchTo = async (mode: 'policy' | 'webhook') => {
      const sm = new SwitchSampler(cluster.kubeconfig, APPS_NS, { 'leasehold.io/inject': INJECT_VALUE }, APP);
      sampler = sm;
      sm.start();
      const t0 = Date.now();
      try {
        // The values as the user keeps them, only the mode changed.
        await helmAsync(
          'upgrade',
          RELEASE,
          OPERATOR_CHART,
          '-n',
          OPERATOR_NS,
          '--reuse-values',
          '--set',
          `injection.mode=${mode}`,
          '--wait',
          '--timeout',
          '180s',
        );
        const helmMs = Date.now() - t0;
        await new Promise((r) => setTimeout(r, SETTLE_MS));
        return { sm, t0, helmMs };
      } finally {
        await sm.stop();
      }
    };

    // Whatever failed: the sampler, the release, its grants (they outlive it), its Secrets (made by
    // the operator, not by helm) and the namespaces go.
    after(async () => {
      if (helmChild?.pid !== undefined && helmChild.exitCode === null && helmChild.signalCode === null) process.kill(helmChild.pid);
      await sampler?.stop();
      run(['-n', APPS_NS, 'delete', 'deployments,pods', '--all', '--ignore-not-found', '--wait=false']);
      run(['-n', OPERATOR_NS, 'delete', 'secrets', `${RELEASE}-tls`, `${RELEASE}-mark`, '--ignore-not-found', '--wait=false']);
      try {
        cluster.helm('uninstall', RELEASE, '-n', OPERATOR_NS, '--ignore-not-found', '--wait=false');
      } catch (err) {
        console.log(`cluster/switch: cleanup: ${(err as Error).message}`);
      }
      run(['delete', 'roles,rolebindings', '-A', '-l', `leasehold.io/installation=${INSTALLATION}`, '--ignore-not-found', '--wait=false']);
      run(['delete', 'namespace', OPERATOR_NS, APPS_NS, '--ignore-not-found', '--wait=false']);
    });

    it('installed with injection.mode=webhook: a labelled Deployment of 2 injected by the webhook, one leader by the Lease', { timeout: 300_000 }, async () => {
      const t0 = Date.now();
      cluster.helm(
        'install',
        RELEASE,
        OPERATOR_CHART,
        '-n',
        OPERATOR_NS,
        '--create-namespace',
        // One replica: what is checked is the switch, not the webhook's availability (operator-checks.ts).
        ...[
          'image.repository=leasehold',
          'image.tag=dev',
          'image.pullPolicy=Never',
          'replicaCount=1',
          'injection.mode=webhook',
          `webhook.injectValue=${INJECT_VALUE}`,
        ].flatMap((s) => ['--set', s]),
        '--wait',
        '--timeout',
        '180s',
      );
      assert.ok(exists('default', `mutatingwebhookconfiguration/${RELEASE}`), 'no webhook configuration in webhook mode');
      k('default', 'create', 'namespace', APPS_NS);
      const r = run(
        ['-n', APPS_NS, 'apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: APP },
          spec: {
            replicas: 2,
            selector: { matchLabels: { 'app.kubernetes.io/instance': APP } },
            template: {
              metadata: { labels: { 'app.kubernetes.io/instance': APP, 'leasehold.io/inject': INJECT_VALUE } },
              spec: {
                terminationGracePeriodSeconds: 10,
                containers: [{ name: 'app', image: 'localhost/busybox:local', imagePullPolicy: 'Never', command: APP_COMMAND }],
              },
            },
          },
        }),
      );
      assert.equal(r.status, 0, r.stderr);
      k(APPS_NS, 'rollout', 'status', `deployment/${APP}`, '--timeout=180s');
      const ps = pods();
      assert.equal(ps.length, 2);
      for (const p of ps) {
        assert.equal(sidecars(p), 1, `${p.metadata.name}: sidecars`);
        assert.ok(p.metadata.annotations?.[MARK], `${p.metadata.name} has no mark: not the webhook's injection`);
      }
      const leader = await waitFor(
        'one leader of the Deployment, by the Lease and every status file',
        () => {
          const h = lease().holderIdentity ?? '';
          const leaders = ps.filter((p) => status(p.metadata.name)?.isLeader).map((p) => p.metadata.name);
          return leaders.length === 1 && leaders[0] === h && h;
        },
        120_000,
        500,
      );
      const g = await waitFor('the grant of the Deployment', () => grant() || undefined, 60_000, 500);
      before = { leader, transitions: lease().leaseTransitions ?? 0, pods: podIdentities(ps), grant: g };
      console.log(`cluster/switch: webhook install ready; ${leader} leads ${APP} (2 pods marked by the webhook) after ${Date.now() - t0} ms`);
    });

    it(
      'helm upgrade to injection.mode=policy: pods refused or uninjected only for a moment, then the policy injects; the webhook, its Service and Role gone; the pods run on, granted, one leader in one term',
      { timeout: 300_000 },
      async () => {
        assert.ok(before, 'the webhook install did not come up');
        const { sm, t0, helmMs } = await switchTo('policy');
        const { admissions } = sm;
        // Helm creates the policies before it deletes the webhook and its Service, but the API
        // server loads a new policy up to a second later (and drops a webhook and a Service as its
        // informers see them): a short window refuses pods or admits them without the sidecar
        // (docs/operator.md, "Pod creation during a switch"). It must end, the policy injecting every pod.
        const j = judgeSwitch(admissions, 'webhook', 'policy', ['refused', 'none']);
        console.log(
          `cluster/switch: helm upgrade took ${helmMs} ms; ${admissions.length} creations tried meanwhile (${sm.tally()}); window ${j.windowMs} ms (${j.inWindow})`,
        );
        assert.equal(j.problem, null);
        assert.ok(j.windowMs <= MAX_WINDOW_MS, `labelled pods refused or admitted without the sidecar for ${j.windowMs} ms`);
        assert.ok(admissions.length >= 20, `only ${admissions.length} creations tried during the switch`);
        keptTerm(sm, t0);

        // What the chart keeps and drops (docs/operator.md, "Which injection to pick").
        assert.equal(exists('default', `mutatingwebhookconfiguration/${RELEASE}`), false, 'the webhook configuration stayed');
        assert.equal(exists(OPERATOR_NS, `service/${RELEASE}`), false, "the webhook's Service stayed");
        assert.equal(exists(OPERATOR_NS, `role/${RELEASE}`), false, 'the Role on the Secrets stayed');
        assert.ok(exists('default', `mutatingadmissionpolicy/${RELEASE}`), 'no MutatingAdmissionPolicy');
        assert.ok(exists('default', `mutatingadmissionpolicybinding/${RELEASE}`), 'no MutatingAdmissionPolicyBinding');
        // The operator made these at its first start, so they are no resource of the chart: they
        // stay, unused in policy mode, for a switch back (the documented behaviour; the cleanup
        // deletes them).
        assert.ok(exists(OPERATOR_NS, `secret/${RELEASE}-tls`), `secret/${RELEASE}-tls was deleted`);
        assert.ok(exists(OPERATOR_NS, `secret/${RELEASE}-mark`), `secret/${RELEASE}-mark was deleted`);
        const args = k(OPERATOR_NS, 'get', `deployment/${RELEASE}`, '-o', 'jsonpath={.spec.template.spec.containers[0].args}');
        assert.match(args, /--injection-mode=policy/);

        // A pass of the new operator (the marker's grant) finds the webhook's pods and keeps their grant.
        const m = run(
          ['-n', APPS_NS, 'create', '-f', '-', '-o', 'json'],
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: MARKER, labels: { 'leasehold.io/inject': INJECT_VALUE }, annotations: { 'leasehold.io/lease': MARKER } },
            spec: {
              schedulingGates: [{ name: 'leasehold.io/never-scheduled' }],
              containers: [{ name: 'app', image: 'localhost/busybox:local', imagePullPolicy: 'Never', command: APP_COMMAND }],
            },
          }),
        );
        assert.equal(m.status, 0, m.stderr);
        const markerGrant = grantName(INSTALLATION, 'default', MARKER);
        await waitFor(
          'a pass of the policy-mode operator',
          () => exists(APPS_NS, `role/${markerGrant}`) && exists(APPS_NS, `rolebinding/${markerGrant}`),
          60_000,
          500,
        );
        assert.equal(grant(), before.grant, "the Deployment's grant was taken back or made again");
        const notGranted = k(APPS_NS, 'get', 'events', '--field-selector=reason=LeaseholdNotGranted', '-o', 'name').trim();
        assert.equal(notGranted, '', 'pods reported not granted after the switch');
        assert.equal(podIdentities(pods()), before.pods, 'a pod the webhook injected was replaced or restarted');
        const l = lease();
        assert.equal(l.holderIdentity, before.leader);
        assert.equal(l.leaseTransitions, before.transitions);
        console.log(`cluster/switch: ${before.leader} led ${APP} in one term through the switch; grant kept through a pass (${Date.now() - t0} ms in all)`);
      },
    );

    it('a pod made after the switch: injected by the policy, Ready, and a follower of the same leader in the same term', { timeout: 180_000 }, async () => {
      assert.ok(before, 'the webhook install did not come up');
      const t0 = Date.now();
      k(APPS_NS, 'scale', `deployment/${APP}`, '--replicas=3');
      const known = new Set(before.pods.split(' ').map((s) => s.split('/')[0]));
      const fresh = await waitFor(
        'the third pod Ready',
        () => {
          const p = pods().find((x) => !known.has(x.metadata.name));
          return p && ready(p) && p;
        },
        120_000,
        500,
      );
      assert.equal(sidecars(fresh), 1, 'sidecars of the new pod');
      assert.equal(fresh.metadata.annotations?.[MARK], undefined, 'the new pod has a mark: the webhook injected it');
      const s = await waitFor(
        "the new pod's status file naming the leader",
        () => {
          const v = status(fresh.metadata.name);
          return v?.holder ? v : undefined;
        },
        60_000,
        500,
      );
      assert.equal(s.lease, APP);
      assert.equal(s.holder, before.leader);
      assert.equal(s.isLeader, false);
      const l = lease();
      assert.equal(l.holderIdentity, before.leader);
      assert.equal(l.leaseTransitions, before.transitions, 'a new term when the pod joined');
      policyPod = fresh.metadata.name;
      console.log(`cluster/switch: ${fresh.metadata.name} injected by the policy, follows ${before.leader} (${Date.now() - t0} ms)`);
    });

    it(
      "back to injection.mode=webhook: pods refused only until a replica serves, never admitted without the sidecar; the webhook's pods keep their grant, the policy's is reported",
      { timeout: 300_000 },
      async () => {
        assert.ok(before && policyPod, 'the switch to the policy did not complete');
        const { sm, t0, helmMs } = await switchTo('webhook');
        // The webhook configuration comes with the chart before a replica serves it and writes its
        // caBundle: refusals (failurePolicy Fail) until then, but no pod without the sidecar.
        const j = judgeSwitch(sm.admissions, 'policy', 'webhook', ['refused']);
        console.log(
          `cluster/switch: back to the webhook: helm upgrade took ${helmMs} ms; ${sm.admissions.length} creations (${sm.tally()}); window ${j.windowMs} ms (${j.inWindow})`,
        );
        assert.equal(j.problem, null);
        assert.ok(j.windowMs <= MAX_WINDOW_MS, `labelled pods refused for ${j.windowMs} ms`);
        keptTerm(sm, t0);
        assert.ok(exists('default', `mutatingwebhookconfiguration/${RELEASE}`), 'no webhook configuration');
        assert.equal(exists('default', `mutatingadmissionpolicybinding/${RELEASE}`), false, 'the MutatingAdmissionPolicyBinding stayed');
        // The mark key was kept (secret/<release>-mark), so the webhook's first pods still verify
        // and keep the grant they share; the pods the policy injected carry no mark: reported, and
        // the marker's grant, which only it earned, taken back (docs/operator.md, "Which injection to pick").
        const policyPodName = policyPod;
        const markerGrant = grantName(INSTALLATION, 'default', MARKER);
        await waitFor(
          `LeaseholdNotGranted for ${policyPodName}, and the grant of ${MARKER} gone`,
          () =>
            k(APPS_NS, 'get', 'events', '--field-selector', `reason=LeaseholdNotGranted,involvedObject.name=${policyPodName}`, '-o', 'name').trim() !== '' &&
            !exists(APPS_NS, `role/${markerGrant}`),
          60_000,
          500,
        );
        const reported = k(APPS_NS, 'get', 'events', '--field-selector=reason=LeaseholdNotGranted', '-o', 'jsonpath={.items[*].involvedObject.name}')
          .trim()
          .split(/\s+/);
        assert.deepEqual([...new Set(reported)].sort(), [policyPodName, MARKER].sort(), 'pods reported not granted after the switch back');
        assert.equal(grant(), before.grant, "the webhook's pods' grant was taken back or made again");
        const l = lease();
        assert.equal(l.holderIdentity, before.leader);
        assert.equal(l.leaseTransitions, before.transitions);
        console.log(
          `cluster/switch: back to the webhook, ${before.leader} still leads in its term; ${policyPodName} reported LeaseholdNotGranted (${Date.now() - t0} ms in all)`,
        );
      },
    );
  });
}
