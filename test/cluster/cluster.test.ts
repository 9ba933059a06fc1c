/**
 * The cluster tier: the image built from the Dockerfile and the chart installed by `helm
 * install` on a real single-node Kubernetes (test/cluster/cluster.sh), checked the way users
 * run it. Brought up before and torn down after, even when a check fails.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, waitFor } from '../helpers/cli.js';

const RELEASE = 'lh';
const LEASE = 'lh-leasehold';
const NS = 'default';

describe('the chart on a real node', () => {
  const parent = mkdtempSync('/tmp/leasehold-cluster-');
  const dir = join(parent, 'cluster');
  let kubeconfig = '';
  let helmBin = '';
  const kubectl = (...args: string[]) => {
    const r = spawnSync(join(dir, 'bin', 'kubectl'), ['--kubeconfig', kubeconfig, '-n', NS, ...args], { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const helm = (...args: string[]) => execFileSync(helmBin, ['--kubeconfig', kubeconfig, '-n', NS, ...args], { encoding: 'utf8', timeout: 300_000 });
  const holder = () => kubectl('get', 'lease', LEASE, '-o', 'jsonpath={.spec.holderIdentity}').trim();
  const transitions = () => Number(kubectl('get', 'lease', LEASE, '-o', 'jsonpath={.spec.leaseTransitions}'));
  const pods = () =>
    (JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'json')) as {
      items: { metadata: { name: string; deletionTimestamp?: string }; status: { conditions?: { type: string; status: string }[] } }[];
    }).items.filter((p) => !p.metadata.deletionTimestamp);
  const ready = (p: ReturnType<typeof pods>[number]) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const statusOf = (pod: string) => JSON.parse(kubectl('exec', pod, '-c', 'app', '--', 'cat', '/leader/status.json')) as { isLeader: boolean; fencingToken: number | null; holder: string };

  before(() => {
    kubeconfig = execFileSync('bash', [join(REPO, 'test/cluster/cluster.sh'), 'up', dir], { stdio: ['ignore', 'pipe', 'inherit'], timeout: 1_800_000 }).toString().trim().split('\n').at(-1)!;
    helmBin = execFileSync('bash', [join(REPO, 'test/env/build-helm.sh')], { stdio: ['ignore', 'pipe', 'inherit'] }).toString().trim().split('\n').at(-1)!;
  });

  after(() => {
    try {
      execFileSync('bash', [join(REPO, 'test/cluster/cluster.sh'), 'down', dir], { stdio: 'inherit', timeout: 300_000 });
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('helm install against the version-stamped API server: exactly one leader, and every view agrees', { timeout: 240_000 }, async () => {
    assert.match(kubectl('version', '-o', 'json'), /"gitVersion": "v1\.37\.2"/);
    helm(
      'install', RELEASE, join(REPO, 'deploy/helm/leasehold'),
      '--set', 'leasehold.image.repository=leasehold', '--set', 'leasehold.image.tag=dev', '--set', 'leasehold.image.pullPolicy=Never',
      '--set', 'app.image.repository=localhost/busybox', '--set', 'app.image.tag=local', '--set', 'app.image.pullPolicy=Never',
      '--set', 'leasehold.readyWhen=leader', '--wait=false',
    );
    // A new Lease is created a lease duration (15 s) after it is first seen absent.
    const leader = await waitFor(
      'a leader',
      () => {
        try {
          return holder() || undefined;
        } catch {
          return undefined; // the Lease does not exist yet
        }
      },
      120_000,
      500,
    );
    const all = await waitFor('3 running pods, one of them Ready', () => {
      const p = pods();
      return p.length === 3 && p.filter(ready).length === 1 && p;
    }, 120_000, 500);
    assert.deepEqual(all.filter(ready).map((p) => p.metadata.name), [leader], 'only the leader is Ready (readyWhen=leader)');
    const token = transitions();
    for (const p of all) {
      const s = statusOf(p.metadata.name);
      assert.equal(s.isLeader, p.metadata.name === leader, `${p.metadata.name}'s status volume`);
      assert.equal(s.holder, leader);
      if (s.isLeader) assert.equal(s.fencingToken, token, 'the token equals leaseTransitions');
      const http = JSON.parse(kubectl('exec', p.metadata.name, '-c', 'app', '--', 'wget', '-qO-', 'http://127.0.0.1:4040/leader')) as { name: string };
      assert.equal(http.name, leader, `${p.metadata.name}'s /leader`);
    }
  });

  it('deleting the leader pod hands over within 2 s, though the example app ignores SIGTERM; the old leader steps down first', { timeout: 120_000 }, async () => {
    const old = holder();
    const tokenBefore = transitions();
    const t0 = Date.now();
    kubectl('delete', 'pod', old, '--wait=false');
    const next = await waitFor('a new holder', () => {
      const h = holder();
      return h !== '' && h !== old && h;
    }, 60_000, 50);
    const handoverMs = Date.now() - t0;
    console.log(`cluster: leader pod deleted, ${next} leads after ${handoverMs} ms (kubectl polling included)`);
    assert.ok(handoverMs < 2_000, `handover took ${handoverMs} ms`);
    assert.ok(transitions() > tokenBefore);
    // The old sidecar wrote "not leader" before it released; the new one became leader after that.
    const oldLog = kubectl('logs', old, '-c', 'leasehold');
    const newLog = kubectl('logs', next, '-c', 'leasehold');
    const at = (log: string, msg: string) => Date.parse((JSON.parse(log.split('\n').find((l) => l.includes(`"msg":"${msg}"`))!) as { time: string }).time);
    assert.ok(at(oldLog, 'stopped leading') <= at(newLog, 'became leader'), 'the old leader stepped down before the new one was elected');
  });

  it('the security context holds: non-root, read-only root filesystem, only /leader writable', { timeout: 60_000 }, () => {
    const pod = holder();
    assert.equal(kubectl('exec', pod, '-c', 'leasehold', '--', 'id', '-u').trim(), '1000');
    const root = spawnSync(join(dir, 'bin', 'kubectl'), ['--kubeconfig', kubeconfig, '-n', NS, 'exec', pod, '-c', 'leasehold', '--', 'touch', '/app/x'], { encoding: 'utf8' });
    assert.notEqual(root.status, 0);
    assert.match(root.stderr, /Read-only file system/);
    kubectl('exec', pod, '-c', 'leasehold', '--', 'touch', '/leader/.probe-by-test');
  });

  it("killing the sidecar's process: the kubelet restarts it alone, leadership returns, and the volume never claims a passed term", { timeout: 180_000 }, async () => {
    const pod = holder();
    const tokenBefore = transitions();
    const statusOfPod = JSON.parse(kubectl('get', 'pod', pod, '-o', 'json')) as { status: { containerStatuses: { name: string; containerID: string; restartCount: number }[] } };
    const sidecar = statusOfPod.status.containerStatuses.find((c) => c.name === 'leasehold')!;
    const app = statusOfPod.status.containerStatuses.find((c) => c.name === 'app')!;
    const id = sidecar.containerID.replace(/^containerd:\/\//, '');
    execFileSync('ctr', ['-a', join(dir, 'containerd', 'containerd.sock'), '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]);
    const stale: string[] = [];
    const back = await waitFor('leadership back', () => {
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
    }, 120_000, 300);
    const after = (JSON.parse(kubectl('get', 'pod', pod, '-o', 'json')) as typeof statusOfPod).status.containerStatuses;
    assert.equal(after.find((c) => c.name === 'leasehold')!.restartCount, sidecar.restartCount + 1, 'the sidecar was restarted');
    assert.equal(after.find((c) => c.name === 'app')!.restartCount, app.restartCount, 'the app was not');
    assert.deepEqual(stale, [], 'the status volume claimed leadership after its validUntil');
    console.log(`cluster: sidecar of ${pod} killed; ${back} leads (token ${tokenBefore} before, ${transitions()} after)`);
  });

  it('the sidecar fits the chart\'s memory limit with margin (working set from the pod\'s cgroup)', { timeout: 120_000 }, async () => {
    const pod = holder();
    // Let it run a while as deployed (probes, renewals), then read its memory cgroup.
    await new Promise((r) => setTimeout(r, 20_000));
    const read = (f: string) => kubectl('exec', pod, '-c', 'leasehold', '--', 'cat', f).trim();
    let workingSet: number;
    try {
      const usage = Number(read('/sys/fs/cgroup/memory/memory.usage_in_bytes'));
      const inactive = Number(/^total_inactive_file (\d+)$/m.exec(read('/sys/fs/cgroup/memory/memory.stat'))![1]);
      workingSet = usage - inactive;
    } catch {
      const usage = Number(read('/sys/fs/cgroup/memory.current'));
      const inactive = Number(/^inactive_file (\d+)$/m.exec(read('/sys/fs/cgroup/memory.stat'))![1]);
      workingSet = usage - inactive;
    }
    const limit = 160 * 1024 * 1024;
    const mb = (b: number) => (b / 1024 / 1024).toFixed(1);
    console.log(`cluster: sidecar working set ${mb(workingSet)} MB (cgroup), limit ${mb(limit)} MB`);
    assert.ok(workingSet < limit / 2, `working set ${mb(workingSet)} MB is not under half the ${mb(limit)} MB limit`);
  });

  it('helm upgrade to elected-any rolls every pod and all become Ready; helm test passes', { timeout: 300_000 }, async () => {
    helm('upgrade', RELEASE, join(REPO, 'deploy/helm/leasehold'), '--reuse-values', '--set', 'leasehold.readyWhen=elected-any', '--wait', '--timeout', '240s');
    kubectl('rollout', 'status', `deployment/${LEASE}`, '--timeout=120s');
    const all = await waitFor('3 Ready pods', () => {
      const p = pods();
      return p.length === 3 && p.every(ready) && p;
    }, 120_000, 500);
    assert.equal(all.length, 3);
    assert.notEqual(holder(), '');
    // No --logs: the chart's test pod is deleted once it succeeds (hook-delete-policy).
    const test = helm('test', RELEASE);
    assert.match(test, /Phase:\s+Succeeded/);
  });
});
