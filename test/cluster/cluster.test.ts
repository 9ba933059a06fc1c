/**
 * The cluster tier: the image built from the Dockerfile and the chart installed by `helm
 * install` on a real single-node Kubernetes (test/cluster/cluster.sh), checked the way users
 * run it. Brought up before and torn down after, even when a check fails.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { REPO, waitFor } from '../support/cli.js';
import { API_SERVER_ADDRESSES, CHART, ClusterSession, LOCAL_IMAGES, chartMemory } from '../support/cluster-session.js';
import {
  allReady,
  onlyEndpointIs,
  onlyLeaderReady,
  readPods,
  releasedBeforeExpiry,
  readServiceEndpoints,
  singleLeader,
  type LeaseView,
} from '../support/cluster-views.js';
import { HostPrometheus } from './host-prometheus.js';
import { loadAll } from 'js-yaml';
import { operatorChecks } from './operator-checks.js';
import { healthChecks } from './health-checks.js';
import { shardChecks } from './shard-checks.js';
import { fencingChecks } from './fencing-checks.js';
import { policyModeChecks } from './policy-mode-checks.js';
import { modeSwitchChecks } from './mode-switch-checks.js';

const RELEASE = 'lh';
const LEASE = 'lh-leasehold';
const NS = 'default';
const LEADER_SERVICE = `${LEASE}-leader`;
/** Where a pod of someone else's lives: it reaches every pod's IP, nothing of their volumes. */
const NEIGHBOUR_NS = 'neighbour';
/**
 * The neighbour's program (node, in the leasehold image, as any image would do): it reads the
 * leader's token from `/leader` on the pod's IP, like anyone on the pod network may, then posts
 * `/leader/stopped?token=N` every 50 ms without a key, with a made-up one and with the token as
 * the key, and prints each answer with the time.
 */
const INTRUDER = `
const base = process.env.TARGET;
const say = (o) => console.log(JSON.stringify(o));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  let token = null;
  while (token === null) {
    try {
      const s = await (await fetch(base + '/leader')).json();
      if (s.isLeader) token = s.fencingToken;
    } catch {}
    if (token === null) await sleep(200);
  }
  say({ following: token });
  const tries = [['none', {}], ['forged', { authorization: 'Bearer ' + '0'.repeat(64) }], ['token', { authorization: 'Bearer ' + token }]];
  for (;;) {
    for (const [auth, headers] of tries) {
      try {
        const r = await fetch(base + '/leader/stopped?token=' + token, { method: 'POST', headers });
        say({ auth, code: r.status, at: Date.now() });
      } catch {
        say({ auth, code: 0, at: Date.now() });
      }
    }
    await sleep(50);
  }
})();
`;
/** A pod made with the leader pod's labels, by someone who may create pods in the namespace. */
const COPYCAT = 'copycat';
/**
 * The example app (the chart's files/example-app.sh) ignores SIGTERM; this variant exits on it.
 * As a command of your own it gets no drain (`app.drainTimeout: auto`): it does not post.
 */
const APP_EXITING_ON_SIGTERM = [
  'sh',
  '-c',
  "trap 'exit 0' TERM; httpd -p 8080 -h /leader; while true; do cat /leader/status.json; echo; sleep 10 & wait $!; done",
];

describe('the chart on a real node', () => {
  const cluster = new ClusterSession(NS);
  const { kubectl, helm } = cluster;
  const lease = (): LeaseView => JSON.parse(kubectl('get', 'lease', LEASE, '-o', 'jsonpath={.spec}') || '{}') as LeaseView;
  const holder = () => lease().holderIdentity ?? '';
  const transitions = () => lease().leaseTransitions ?? 0;
  /**
   * Waits until every view agrees on one leader: the Lease, each pod's status file and /leader,
   * the role labels, and the leader Service's only endpoint; with readyWhen=leader also that only
   * the leader is Ready, else that all 3 are. Fails with the last disagreement.
   */
  const agreed = async (readyWhen: 'leader' | 'elected-any', timeoutMs = 60_000) => {
    let last = '';
    try {
      return await waitFor(
        'every view to agree on one leader',
        () => {
          let lv: LeaseView;
          try {
            lv = lease();
          } catch {
            last = 'no Lease yet';
            return undefined;
          }
          const p = readPods(kubectl, RELEASE, { http: true });
          if (p.filter((x) => !x.deleting).length !== 3) return void (last = `${p.length} pods`);
          const v = singleLeader(p, lv, new Date(), { podLabel: true, everyViewNamesHolder: true });
          if (!v.leader) return void (last = v.problem!);
          if (readyWhen === 'leader' ? !onlyLeaderReady(p, v.leader) : !allReady(p, 3)) return void (last = `readiness (${readyWhen}) not yet as expected`);
          const ep = onlyEndpointIs(readServiceEndpoints(kubectl, LEADER_SERVICE), v.leader);
          if (!ep.ok) return void (last = `leader Service: ${ep.problem!}`);
          return { leader: v.leader, token: v.token! };
        },
        timeoutMs,
        500,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; last seen: ${last}`, { cause: err });
    }
  };
  /** The sidecar's log of a pod, followed from now until the container ends (the pod may vanish). */
  const followLog = (pod: string) => {
    const child = spawn(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', NS, 'logs', '-f', pod, '-c', 'leasehold'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const ended = new Promise<string>((res) => child.once('close', () => res(out)));
    return { ended, stop: () => child.kill() };
  };
  const at = (log: string, msg: string) => {
    const line = log.split('\n').find((l) => l.includes(`"msg":"${msg}"`));
    assert.ok(line, `no "${msg}" in the log`);
    return Date.parse((JSON.parse(line) as { time: string }).time);
  };

  /** Undoes whatever a check did to a pod's network; run again in teardown, whatever happened. */
  const undo: (() => void)[] = [];
  const runUndo = () => {
    for (const u of undo.splice(0).reverse()) u();
  };

  before(() => cluster.up());
  after(() => {
    try {
      runUndo();
    } finally {
      cluster.down();
    }
  });

  it('helm install against the version-stamped API server: exactly one leader, and every view agrees', { timeout: 240_000 }, async () => {
    assert.match(kubectl('version', '-o', 'json'), /"gitVersion": "v1\.37\.2"/);
    helm(
      'install',
      RELEASE,
      CHART,
      ...LOCAL_IMAGES,
      '--set',
      'leasehold.readyWhen=leader',
      '--set',
      'podLabel.enabled=true',
      '--set',
      'leaderService.enabled=true',
      '--wait=false',
    );
    // A new Lease is created a lease duration (15 s) after it is first seen absent; then the
    // Lease, every status file and /leader, the labels, readiness and the leader Service agree.
    const { leader, token } = await agreed('leader', 180_000);
    console.log(`cluster: ${leader} leads with token ${token}; labels, readiness and the leader Service agree`);
  });

  it('a pod that copies every label of the leader pod is never an endpoint of the leader Service', { timeout: 180_000 }, async () => {
    const { leader } = await agreed('leader', 120_000);
    const meta = (
      JSON.parse(kubectl('get', 'pod', leader, '-o', 'json')) as { metadata: { labels: Record<string, string>; annotations?: Record<string, string> } }
    ).metadata;
    // Every label but the ReplicaSet's pod-template-hash (with it, the ReplicaSet would adopt the
    // copy and delete a pod to keep 3): the release's, leasehold.io/role=leader and the lease's.
    const labels = Object.fromEntries(Object.entries(meta.labels).filter(([k]) => k !== 'pod-template-hash'));
    assert.equal(labels['leasehold.io/role'], 'leader');
    cluster.apply(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: COPYCAT, labels, annotations: { 'leasehold.io/token': meta.annotations?.['leasehold.io/token'] ?? '999' } },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'app',
              image: 'localhost/busybox:local',
              imagePullPolicy: 'Never',
              command: ['httpd', '-f', '-p', '8080', '-h', '/'],
              ports: [{ name: 'http', containerPort: 8080 }],
              readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
            },
          ],
        },
      }),
    );
    undo.push(
      () => void spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', NS, 'delete', 'pod', COPYCAT, '--ignore-not-found', '--wait=false']),
    );
    try {
      await waitFor(
        'the copy to be Ready',
        () => kubectl('get', 'pod', COPYCAT, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') === 'True',
        90_000,
        250,
      );
      // Ready, labelled leader, serving the app's port: a Service selecting the labels would
      // route to it now. The leader Service keeps the one endpoint the leader wrote.
      const until = Date.now() + 10_000;
      while (Date.now() < until) {
        const ep = onlyEndpointIs(readServiceEndpoints(kubectl, LEADER_SERVICE), leader);
        assert.ok(ep.ok, `with a Ready copy of the leader's labels: ${ep.problem}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      console.log(`cluster: a Ready pod with every label of ${leader} stayed out of the leader Service for 10 s`);
    } finally {
      kubectl('delete', 'pod', COPYCAT, '--wait=true', '--timeout=60s');
    }
  });

  /**
   * Deletes the leader pod and measures the handover; the old sidecar must say "stopped
   * leading" (and write not-leader) before the new one says "became leader". `by` is how the
   * new term must begin: by the old leader's release, or (its app never said its work stopped)
   * only once the old lease could have expired.
   */
  const deleteLeader = async (by: 'release' | 'expiry') => {
    const before = lease();
    const old = before.holderIdentity ?? '';
    const tokenBefore = before.leaseTransitions ?? 0;
    const oldLog = followLog(old);
    const t0 = Date.now();
    kubectl('delete', 'pod', old, '--wait=false');
    const next = await waitFor(
      'a new holder',
      () => {
        const h = holder();
        return h !== '' && h !== old && h;
      },
      60_000,
      50,
    );
    const handoverMs = Date.now() - t0;
    const after = lease();
    assert.ok((after.leaseTransitions ?? 0) > tokenBefore, 'the new term has a higher token');
    // The time taken is a figure (logged, and the bench's); what is asserted is how it happened.
    // `before` may predate a last renewal, so its expiry is a lower bound: a term begun before
    // it was released, and one begun after it, with no release in the log, waited it out.
    const early = releasedBeforeExpiry(before, after);
    if (by === 'release') assert.equal(early, null);
    else assert.match(early ?? 'began before the old lease could expire', /a takeover by expiry/);
    return { old, next, handoverMs, t0, oldLog, tokenBefore, tokenAfter: after.leaseTransitions ?? 0 };
  };

  it("a second cluster's bring-up on this machine fails at once, and its teardown leaves this cluster's network alone", { timeout: 120_000 }, () => {
    const other = mkdtempSync('/tmp/leasehold-cluster-other-');
    const script = join(REPO, 'test/cluster/cluster.sh');
    try {
      const up = spawnSync('bash', [script, 'up', join(other, 'cluster')], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(up.status, 1, up.stderr);
      // The refusal names the running cluster's folder (the bridge's alias): nothing of it was touched.
      assert.ok(up.stderr.includes(`another cluster is up on this machine (bridge lh-br0 exists, folder ${cluster.dir})`), up.stderr);
    } finally {
      execFileSync('bash', [script, 'down', join(other, 'cluster')], { stdio: 'inherit', timeout: 120_000 });
      rmSync(other, { recursive: true, force: true });
    }
    assert.equal(spawnSync('ip', ['link', 'show', 'lh-br0']).status, 0, 'the bridge is still there');
    assert.equal(spawnSync('iptables', ['-t', 'nat', '-S', 'LEASEHOLD-CLUSTER']).status, 0, 'the DNAT chain is still there');
    assert.equal(kubectl('get', '--raw', '/readyz'), 'ok');
    assert.ok(holder() !== '', 'the release still has a leader');
  });

  it(
    'deleting the leader pod hands over by a release, though the example app ignores SIGTERM; the old leader steps down first',
    { timeout: 180_000 },
    async () => {
      const { old, next, handoverMs, oldLog, tokenBefore, tokenAfter } = await deleteLeader('release');
      console.log(`cluster: leader pod deleted (app ignores SIGTERM), ${next} leads after ${handoverMs} ms (kubectl polling included)`);
      // The old pod lingers for its grace period (the app ignores SIGTERM): read its log while it does.
      await waitFor(
        "the old sidecar's log to show its step-down",
        () => kubectl('logs', old, '-c', 'leasehold').includes('"msg":"stopped leading"'),
        10_000,
        200,
      );
      oldLog.stop();
      // The example app said its leader work stopped, and the release went out on its word.
      assert.match(kubectl('logs', old, '-c', 'leasehold'), /"msg":"the app stopped its leader work: releasing"/);
      // Its busybox wget calls worked in the real pod: the stream it follows, and the post with
      // the drain key (busybox 1.35's wget crashes with -T, which the example app does not use).
      const oldApp = kubectl('logs', old, '-c', 'app');
      assert.ok(oldApp.includes(`app: told the sidecar that token ${tokenBefore} stopped`), `the old app's log:\n${oldApp}`);
      assert.doesNotMatch(oldApp, /could not tell the sidecar|Segmentation fault/);
      await waitFor(
        "the new leader's app to start its leader work",
        () => kubectl('logs', next, '-c', 'app').includes(`app: leader work started (token ${tokenAfter})`),
        10_000,
        250,
      );
      const newLog = kubectl('logs', next, '-c', 'leasehold');
      assert.ok(
        at(kubectl('logs', old, '-c', 'leasehold'), 'stopped leading') <= at(newLog, 'became leader'),
        'the old leader stepped down before the new one was elected',
      );
      // The replacement pod joins; the label and the leader Service follow the new leader.
      const now = await agreed('leader', 120_000);
      assert.equal(now.leader, next);
    },
  );

  it(
    "a pod in another namespace reads the leader's token and posts it while the leader drains: refused, and with no word from the app the lease is left to expire",
    { timeout: 240_000 },
    async () => {
      const { leader, token } = await agreed('leader', 120_000);
      const ip = kubectl('get', 'pod', leader, '-o', 'jsonpath={.status.podIP}').trim();
      kubectl('create', 'namespace', NEIGHBOUR_NS);
      undo.push(() => void spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, 'delete', 'namespace', NEIGHBOUR_NS, '--wait=false']));
      cluster.apply(
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'intruder', namespace: NEIGHBOUR_NS },
          spec: {
            terminationGracePeriodSeconds: 0,
            containers: [
              {
                name: 'intruder',
                image: 'leasehold:dev',
                imagePullPolicy: 'Never',
                command: ['node', '-e', INTRUDER],
                env: [{ name: 'TARGET', value: `http://${ip}:4040` }],
              },
            ],
          },
        }),
        NEIGHBOUR_NS,
      );
      const intruderLog = () => {
        try {
          return kubectl('logs', '-n', NEIGHBOUR_NS, 'intruder');
        } catch {
          return ''; // not started yet
        }
      };
      await waitFor('the neighbour to read the leader token', () => intruderLog().includes(`{"following":${token}}`), 90_000, 500);
      // The leader's app is still at its work and has not said it stopped: frozen, as an app
      // busy with a last batch is. Only its own post may end the drain.
      const ctr = (...args: string[]) => execFileSync('ctr', ['-a', join(cluster.dir, 'containerd', 'containerd.sock'), '-n', 'k8s.io', 'tasks', ...args]);
      const app = cluster.containerId(leader, 'app');
      ctr('pause', app);
      const resume = () => void spawnSync('ctr', ['-a', join(cluster.dir, 'containerd', 'containerd.sock'), '-n', 'k8s.io', 'tasks', 'resume', app]);
      undo.push(resume);
      let log = '';
      try {
        const { old } = await deleteLeader('expiry');
        await waitFor(
          'the old sidecar to end its drain',
          () => /"msg":"released lease"|within drainTimeoutMs/.test((log = kubectl('logs', old, '-c', 'leasehold'))),
          20_000,
          200,
        );
      } finally {
        resume();
      }
      const drained = log.split('\n').find((l) => l.includes('"msg":"draining: waiting for the app to say its leader work stopped"'));
      const timedOut = log
        .split('\n')
        .find((l) => l.includes('"msg":"the work did not finish within drainTimeoutMs: the lease is left to expire, not released"'));
      assert.ok(drained, `no drain in the old sidecar's log:\n${log}`);
      assert.ok(timedOut, `the drain did not wait out its timeout: someone ended it\n${log}`);
      assert.doesNotMatch(log, /"msg":"the app stopped its leader work: releasing"|"msg":"released lease"/);
      const from = Date.parse((JSON.parse(drained) as { time: string }).time);
      const until = Date.parse((JSON.parse(timedOut) as { time: string }).time);
      const tries = intruderLog()
        .split('\n')
        .filter((l) => l.startsWith('{"auth"'))
        .map((l) => JSON.parse(l) as { auth: string; code: number; at: number });
      const during = tries.filter((t) => t.at >= from && t.at <= until);
      console.log(
        `cluster: a pod in namespace ${NEIGHBOUR_NS} posted token ${token} ${during.length} times during the ${until - from} ms drain: answered ${[...new Set(during.map((t) => t.code))].join(', ')}`,
      );
      assert.ok(during.length >= 10, `the neighbour posted ${during.length} times during the drain`);
      assert.deepEqual([...new Set(tries.filter((t) => t.code !== 0).map((t) => `${t.auth} ${t.code}`))].sort(), ['forged 403', 'none 401', 'token 403']);
      kubectl('delete', 'namespace', NEIGHBOUR_NS, '--wait=false');
      await agreed('leader', 120_000);
    },
  );

  it('the security context holds: non-root, read-only root filesystem, only /leader writable', { timeout: 60_000 }, () => {
    const pod = holder();
    assert.equal(kubectl('exec', pod, '-c', 'leasehold', '--', 'id', '-u').trim(), '1000');
    const root = spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', NS, 'exec', pod, '-c', 'leasehold', '--', 'touch', '/app/x'], {
      encoding: 'utf8',
    });
    assert.notEqual(root.status, 0);
    assert.match(root.stderr, /Read-only file system/);
    kubectl('exec', pod, '-c', 'leasehold', '--', 'touch', '/leader/.probe-by-test');
  });

  it(
    "killing the sidecar's process: the kubelet restarts it alone, leadership returns, and the volume never claims a passed term",
    { timeout: 180_000 },
    async () => {
      const pod = holder();
      const tokenBefore = transitions();
      const statusOfPod = JSON.parse(kubectl('get', 'pod', pod, '-o', 'json')) as {
        status: { containerStatuses: { name: string; containerID: string; restartCount: number }[] };
      };
      const sidecar = statusOfPod.status.containerStatuses.find((c) => c.name === 'leasehold')!;
      const app = statusOfPod.status.containerStatuses.find((c) => c.name === 'app')!;
      const id = sidecar.containerID.replace(/^containerd:\/\//, '');
      execFileSync('ctr', ['-a', join(cluster.dir, 'containerd', 'containerd.sock'), '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]);
      const stale: string[] = [];
      const back = await waitFor(
        'leadership back',
        () => {
          try {
            const s = JSON.parse(kubectl('exec', pod, '-c', 'app', '--', 'cat', '/leader/status.json')) as { isLeader: boolean; validUntil: string | null };
            if (s.isLeader && s.validUntil && Date.parse(s.validUntil) < Date.now() - 1_000) stale.push(s.validUntil);
          } catch {
            // the file is being replaced: read again
          }
          // The restarted sidecar does not trust a record it did not write itself, even under its
          // own identity: leadership returns as a new term, by it or by another pod.
          const h = holder();
          return h !== '' && transitions() > tokenBefore && h;
        },
        120_000,
        300,
      );
      const after = (JSON.parse(kubectl('get', 'pod', pod, '-o', 'json')) as typeof statusOfPod).status.containerStatuses;
      assert.equal(after.find((c) => c.name === 'leasehold')!.restartCount, sidecar.restartCount + 1, 'the sidecar was restarted');
      assert.equal(after.find((c) => c.name === 'app')!.restartCount, app.restartCount, 'the app was not');
      assert.deepEqual(stale, [], 'the status volume claimed leadership after its validUntil');
      console.log(`cluster: sidecar of ${pod} killed; ${back} leads (token ${tokenBefore} before, ${transitions()} after)`);
    },
  );

  it("the sidecar fits the chart's memory limit with margin (working set from the pod's cgroup)", { timeout: 120_000 }, async () => {
    const pod = holder();
    // Read its memory cgroup once the sidecar has run 60 s as deployed (probes, renewals).
    const started = cluster.containerStartedAt(pod, 'leasehold');
    const waitMs = started + 60_000 - Date.now();
    if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
    const workingSet = cluster.workingSetBytes(pod, 'leasehold');
    const limit = chartMemory().limitMB * 1024 * 1024;
    const mib = (b: number) => (b / 1024 / 1024).toFixed(1);
    console.log(
      `cluster: sidecar working set ${mib(workingSet)} MiB (cgroup, ${Math.round((Date.now() - started) / 1000)} s after it started), limit ${mib(limit)} MiB`,
    );
    assert.ok(workingSet < limit / 2, `working set ${mib(workingSet)} MiB is not under half the ${mib(limit)} MiB limit`);
  });

  it(
    'helm upgrade to elected-any and an app that exits on SIGTERM: the rollout completes, helm test passes, the leader Service follows',
    { timeout: 360_000 },
    async () => {
      helm(
        'upgrade',
        RELEASE,
        CHART,
        '--reuse-values',
        '--set',
        'leasehold.readyWhen=elected-any',
        '--set-json',
        `app.command=${JSON.stringify(APP_EXITING_ON_SIGTERM)}`,
        '--wait',
        '--timeout',
        '240s',
      );
      kubectl('rollout', 'status', `deployment/${LEASE}`, '--timeout=120s');
      // Every pod Ready now, so only the role label keeps followers out of the leader Service.
      const { leader } = await agreed('elected-any', 120_000);
      const spec = JSON.parse(kubectl('get', 'pod', leader, '-o', 'json')) as { spec: { containers: { name: string; command: string[] }[] } };
      assert.deepEqual(spec.spec.containers.find((c) => c.name === 'app')!.command, APP_EXITING_ON_SIGTERM);
      // No --logs: the chart's test pod is deleted once it succeeds (hook-delete-policy).
      const test = helm('test', RELEASE);
      assert.match(test, /Phase:\s+Succeeded/);
    },
  );

  it(
    'deleting the leader pod hands over by a release with the app that exits on SIGTERM too; the pod is gone long before its grace period',
    { timeout: 180_000 },
    async () => {
      const { old, next, handoverMs, t0, oldLog } = await deleteLeader('release');
      console.log(`cluster: leader pod deleted (app exits on SIGTERM), ${next} leads after ${handoverMs} ms (kubectl polling included)`);
      // Both containers exit at SIGTERM, so the pod goes at once, not after 30 s; its log is read
      // from the stream followed before the deletion.
      await waitFor('the old pod to be gone', () => !kubectl('get', 'pods', '-o', 'name').includes(`pod/${old}\n`), 20_000, 200);
      const goneMs = Date.now() - t0;
      console.log(`cluster: the old pod was gone ${goneMs} ms after its deletion`);
      assert.ok(goneMs < 15_000, `the pod took ${goneMs} ms to go: the app did not exit on SIGTERM`);
      const log = await oldLog.ended;
      assert.ok(
        at(log, 'stopped leading') <= at(kubectl('logs', next, '-c', 'leasehold'), 'became leader'),
        'the old leader stepped down before the new one was elected',
      );
      const now = await agreed('elected-any', 120_000);
      assert.equal(now.leader, next);
    },
  );

  it(
    'a leader pod cut off from the API server: within 2 s of the takeover the leader Service has only the new leader, while the cut lasts; after it, every view agrees',
    { timeout: 300_000 },
    async () => {
      // The chart's default readiness (elected-any), podLabel.enabled and leaderService, 3 replicas:
      // every pod stays Ready, so only the leader Service's EndpointSlice, which the cut-off pod
      // can no longer write, keeps it out once the new leader has written it.
      const { leader: old } = await agreed('elected-any', 120_000);
      const pid = cluster.containerPid(old, 'leasehold');
      const iptables = (op: '-I' | '-D', rule: string[]) =>
        execFileSync('nsenter', [`--net=/proc/${pid}/ns/net`, 'iptables', op, 'OUTPUT', ...rule, '-j', 'DROP'], { stdio: ['ignore', 'ignore', 'pipe'] });
      for (const rule of API_SERVER_ADDRESSES) {
        iptables('-I', rule);
        undo.push(() => {
          try {
            iptables('-D', rule);
          } catch {
            // the pod (and its network namespace) is gone
          }
        });
      }
      const t0 = Date.now();
      try {
        const next = await waitFor(
          'another pod to take over',
          () => {
            const h = holder();
            return h !== '' && h !== old && h;
          },
          60_000,
          100,
        );
        const takeover = Date.parse((lease() as LeaseView & { acquireTime: string }).acquireTime);
        console.log(`cluster: ${old} cut off from the API server; ${next} took over ${takeover - t0} ms after the cut`);
        await waitFor(
          'the leader Service to route to the new leader only',
          () => onlyEndpointIs(readServiceEndpoints(kubectl, LEADER_SERVICE), next).ok,
          30_000,
          100,
        );
        const routedMs = Date.now() - takeover;
        console.log(`cluster: the leader Service had only ${next}'s endpoint ${routedMs} ms after the takeover (kubectl polling included)`);
        assert.ok(routedMs < 2_000, `the leader Service routed to ${old} as well for ${routedMs} ms after the takeover`);
        // The cut lasts: the old sidecar stepped down on its own, but stays Ready (elected-any);
        // it is out of the Service because the new leader replaced its endpoint with its own, and stays out.
        const [o] = readPods(kubectl, RELEASE).filter((p) => p.name === old);
        assert.equal(o?.status?.isLeader, false, `${old}'s status file still says leader`);
        assert.equal(o?.ready, true, `${old} is not Ready: the Service would drop it anyway, the case is not reproduced`);
        assert.equal(o?.role, 'follower');
        const until = Date.now() + 5_000;
        while (Date.now() < until) {
          const ep = onlyEndpointIs(readServiceEndpoints(kubectl, LEADER_SERVICE), next);
          assert.ok(ep.ok, `while ${old} is still cut off: ${ep.problem}`);
          await new Promise((r) => setTimeout(r, 500));
        }
        assert.equal(holder(), next);
      } finally {
        runUndo();
      }
      const healed = await agreed('elected-any', 120_000);
      console.log(`cluster: network healed; ${healed.leader} leads with token ${healed.token}, and every view agrees`);
    },
  );
  it(
    "a real Prometheus scraping the pods evaluates the chart's rules: silent while healthy, the dashboard has data, renewals failing and no leader fire",
    { timeout: 420_000 },
    async () => {
      const SCRAPE_S = 2;
      // The installed release's timings (15s/10s/2s) with a 2 s scrape: LeaseholdNoLeader's for is 15 + 2 × 2 + 2 = 21 s.
      const NO_LEADER_FOR_S = 21;
      const rendered = loadAll(
        helm(
          'template',
          RELEASE,
          CHART,
          '--kube-version',
          '1.37.2',
          '--set',
          'metrics.prometheusRule.enabled=true',
          '--set',
          'metrics.grafanaDashboard.enabled=true',
          '--set',
          `metrics.serviceMonitor.interval=${SCRAPE_S}s`,
        ),
      ) as ({ kind: string; spec?: { groups: unknown }; data?: Record<string, string> } | null)[];
      const groups = rendered.find((d) => d?.kind === 'PrometheusRule')!.spec!.groups;
      const dashboard = JSON.parse(rendered.find((d) => d?.kind === 'ConfigMap' && d.data?.[`leasehold-${LEASE}.json`])!.data![`leasehold-${LEASE}.json`]!) as {
        panels: { title: string; targets: { expr: string }[] }[];
      };
      const prom = new HostPrometheus();
      undo.push(() => void prom.stop());
      await agreed('elected-any', 120_000);
      await prom.start({ kubeconfig: cluster.kubeconfig, namespace: NS, release: RELEASE, job: LEASE, scrapeSeconds: SCRAPE_S, groups });
      await waitFor(
        '3 sidecars scraped and one leader',
        async () => (await prom.query(`sum(up{job="${LEASE}"}) == 3 and sum(leader_election_master_status{name="${LEASE}"}) == 1`)).result.length === 1,
        60_000,
        500,
      );
      const healthySince = Date.now() / 1000;
      await waitFor('the rules evaluated past the longest for', () => prom.evaluatedAfter(healthySince + NO_LEADER_FOR_S + SCRAPE_S), 60_000, 500);
      assert.deepEqual(await prom.alerts(), [], 'healthy: no alert pending or firing');

      // A handoff gives the takeover histogram a rate; then every dashboard query returns data:
      // every panel of a lease (these pods are its candidates; the shard group's panel has data
      // with a member of a group, test/kubernetes/chart-prometheus.test.ts).
      await deleteLeader('release');
      await agreed('elected-any', 120_000);
      for (const p of dashboard.panels.filter((panel) => !panel.targets.some((t) => /\bgroup="/.test(t.expr)))) {
        for (const t of p.targets) {
          await waitFor(
            `data for "${p.title}": ${t.expr}`,
            async () => (await prom.query(t.expr)).result.some((s) => !Number.isNaN(Number(s.value[1]))),
            60_000,
            1_000,
          );
        }
      }
      console.log('cluster: Prometheus silent while healthy; every lease panel of the dashboard has data');

      // The leader cut off from the API server: its renewals fail, then it steps down.
      const { leader: cut } = await agreed('elected-any', 120_000);
      const pid = cluster.containerPid(cut, 'leasehold');
      const iptables = (op: '-I' | '-D', rule: string[]) =>
        execFileSync('nsenter', [`--net=/proc/${pid}/ns/net`, 'iptables', op, 'OUTPUT', ...rule, '-j', 'DROP'], { stdio: ['ignore', 'ignore', 'pipe'] });
      for (const rule of API_SERVER_ADDRESSES) {
        iptables('-I', rule);
        undo.push(() => {
          try {
            iptables('-D', rule);
          } catch {
            // the pod (and its network namespace) is gone
          }
        });
      }
      const renewal = await waitFor('LeaseholdRenewalsFailing', async () => (await prom.firing('LeaseholdRenewalsFailing'))[0], 90_000, 500);
      assert.equal(renewal.labels.pod, cut);
      for (const rule of API_SERVER_ADDRESSES) iptables('-D', rule);
      console.log(`cluster: ${cut} cut off from the API server: LeaseholdRenewalsFailing fired for it`);
      await agreed('elected-any', 120_000);

      // Every sidecar's process stopped: no leader, and every target down.
      const pods = readPods(kubectl, RELEASE)
        .filter((p) => !p.deleting)
        .map((p) => p.name);
      const pids = pods.map((pod) => cluster.containerPid(pod, 'leasehold'));
      const resume = () => {
        for (const p of pids) spawnSync('kill', ['-CONT', String(p)]);
      };
      undo.push(resume);
      const stoppedAt = Date.now();
      for (const p of pids) execFileSync('kill', ['-STOP', String(p)]);
      try {
        await waitFor('LeaseholdNoLeader', async () => (await prom.firing('LeaseholdNoLeader'))[0], 90_000, 500);
        const tookS = (Date.now() - stoppedAt) / 1000;
        console.log(`cluster: every sidecar stopped; LeaseholdNoLeader fired after ${tookS.toFixed(1)} s (for ${NO_LEADER_FOR_S} s)`);
        // Its for, plus one scrape (the last good sample), plus one evaluation and this poll.
        assert.ok(tookS <= NO_LEADER_FOR_S + SCRAPE_S + 3, `LeaseholdNoLeader fired ${tookS} s after the stop`);
        assert.equal((await prom.firing('LeaseholdSidecarDown')).length, pods.length);
      } finally {
        resume();
      }
      runUndo();
      await agreed('elected-any', 180_000);
    },
  );

  // On the same node (one bring-up): a second release whose app can be made unhealthy.
  healthChecks(cluster);

  // On the same node (one bring-up): a release in shard mode, scaled up and down.
  shardChecks(cluster);

  // On the same node (one bring-up): a release whose fencing policy the API server enforces;
  // after the shard checks, whose timings its pods (terminating for 30 s) would load.
  fencingChecks(cluster);

  // Last, on the same node (one bring-up): the chart's release is uninstalled first.
  operatorChecks(cluster, NS);

  // After the webhook install is gone (one bring-up): an install in policy mode, its own value.
  policyModeChecks(cluster);

  // After the policy install is gone (one bring-up): an install switched webhook -> policy -> webhook.
  modeSwitchChecks(cluster);
});
