/**
 * Kubernetes objects fenced by the API server, on the cluster tier (issue 42, item 5), in the
 * same session as the chart's checks (one bring-up): a release with `fencing.resources:
 * [configmaps]` and 2 replicas, whose policy takes the release's Lease as its parameter. The
 * app's writes are made by this test with kubectl, as the app would make them: each writer
 * first reads the token from its own pod's `/leader/status.json` (in its app container), then
 * writes the ConfigMap labelled `leasehold.io/fenced-by` with that token in its
 * `leasehold.io/fencing-token` annotation. The leader's pod is frozen (SIGSTOP of its sidecar's
 * and its app's processes) between its read and its write, the pause the fence exists for;
 * another pod takes over and writes with its own token; the frozen pod is thawed and its write,
 * with the token it read before the pause, goes out: the API server answers 403 naming the
 * token, and the ConfigMap keeps the new leader's data. Uninstalled at the end, the policy and
 * its binding with it, whatever happened.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { waitFor } from '../support/cli.js';
import { CHART, LOCAL_IMAGES, type ClusterSession } from '../support/cluster-session.js';

const RELEASE = 'fc';
const LEASE = 'fc-leasehold';
const CONFIGMAP = 'fenced-data';
const CONFIGMAPS = [{ apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }];
const POLICY_KINDS = 'validatingadmissionpolicies,validatingadmissionpolicybindings';

interface PodStatus {
  isLeader: boolean;
  fencingToken: number | null;
}

export function fencingChecks(cluster: ClusterSession): void {
  describe("the chart's fencing policy on the same node: a frozen former leader's ConfigMap update is refused by the API server", () => {
    const { kubectl, helm } = cluster;
    const frozen: number[] = [];
    const thaw = () => {
      // A process the kubelet has killed meanwhile is gone: nothing to resume.
      for (const pid of frozen.splice(0)) spawnSync('kill', ['-CONT', String(pid)]);
    };
    const policyObjects = () => kubectl('get', POLICY_KINDS, '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'name').split('\n').filter(Boolean);

    after(() => {
      thaw();
      try {
        helm('uninstall', RELEASE, '--ignore-not-found', '--wait', '--timeout', '120s');
      } catch (err) {
        console.log(`cluster: fencing: uninstall failed: ${(err as Error).message}`);
      }
      // Once the policy is gone nothing fences them: the ConfigMap and the Lease the sidecars made.
      spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', cluster.namespace, 'delete', 'configmap', CONFIGMAP, '--ignore-not-found']);
      spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', cluster.namespace, 'delete', 'lease', LEASE, '--ignore-not-found']);
    });

    /** The pod's status file as its app reads it, from the app container. */
    const statusOf = (pod: string): PodStatus | null => {
      try {
        return JSON.parse(kubectl('exec', pod, '-c', 'app', '--', 'cat', '/leader/status.json')) as PodStatus;
      } catch {
        return null; // the file is being replaced, or the pod is not running yet
      }
    };
    const livePods = () =>
      (
        JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'json')) as {
          items: { metadata: { name: string; deletionTimestamp?: string } }[];
        }
      ).items
        .filter((p) => !p.metadata.deletionTimestamp)
        .map((p) => p.metadata.name);
    /** The pod whose own status file says it leads, with its token. */
    const leaderOtherThan = (not: string | null) => {
      for (const pod of livePods()) {
        if (pod === not) continue;
        const s = statusOf(pod);
        if (s?.isLeader && s.fencingToken !== null) return { pod, token: s.fencingToken };
      }
      return undefined;
    };
    /**
     * The app's write: a PUT of the whole ConfigMap (no resourceVersion: an unconditional
     * update, the worst a late writer can send), labelled and stamped with `token`. Returns the
     * HTTP status the API server answered (kubectl -v=6 logs it) and kubectl's error.
     */
    const write = (verb: 'create' | 'replace', writer: string, token: number) => {
      const body = JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: CONFIGMAP, labels: { 'leasehold.io/fenced-by': LEASE }, annotations: { 'leasehold.io/fencing-token': String(token) } },
        data: { writer, token: String(token) },
      });
      const r = spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', cluster.namespace, verb, '-v=6', '-f', '-'], {
        input: body,
        encoding: 'utf8',
        timeout: 60_000,
      });
      // kubectl's -v=6 line: "Response" verb="PUT" url="https://.../configmaps/fenced-data" status="403 Forbidden"
      const status = /"Response" verb="(?:POST|PUT)" url="[^"]*\/configmaps[^"]*" status="(\d{3})/.exec(r.stderr)?.[1];
      // Its one line of error (-v=6 also logs the requests and the response's body).
      const error = r.status === 0 ? '' : (r.stderr.split('\n').find((l) => /^(Error from server|error:)/.test(l)) ?? r.stderr);
      return { code: Number(status ?? 0), error };
    };
    /** Whether the ConfigMap exists yet (the first write creates it). */
    const configMapExists = () =>
      spawnSync(cluster.kubectlPath, ['--kubeconfig', cluster.kubeconfig, '-n', cluster.namespace, 'get', 'configmap', CONFIGMAP]).status === 0;
    const stored = () =>
      JSON.parse(kubectl('get', 'configmap', CONFIGMAP, '-o', 'json')) as {
        metadata: { resourceVersion: string; annotations?: Record<string, string> };
        data: { writer: string; token: string };
      };

    it(
      "helm install with fencing.resources [configmaps] and 2 replicas; the leader's pod frozen between reading its token and writing; its late write refused with 403 naming the token",
      { timeout: 300_000 },
      async () => {
        helm(
          'install',
          RELEASE,
          CHART,
          ...LOCAL_IMAGES,
          '--set',
          'replicaCount=2',
          '--set-json',
          `fencing.resources=${JSON.stringify(CONFIGMAPS)}`,
          '--wait=false',
        );
        assert.equal(policyObjects().length, 2, `the policy and its binding: ${policyObjects().join(' ')}`);

        const first = await waitFor('a pod whose status file says it leads', () => leaderOtherThan(null), 180_000, 500);
        // The policy reads the Lease from the API server's cache: the first write may come before
        // that cache has the term, and is refused then; the leader's app writes again.
        await waitFor(
          `${first.pod}'s write with its token ${first.token}`,
          () => {
            const r = write(configMapExists() ? 'replace' : 'create', first.pod, first.token);
            return r.code === 201 || r.code === 200;
          },
          30_000,
          500,
        );
        assert.equal(stored().data.writer, first.pod);

        // The leader's app reads its token for its next write: from its own status file, now.
        const read = statusOf(first.pod);
        assert.equal(read?.isLeader, true, `${first.pod} still leads as its app reads`);
        const staleToken = read?.fencingToken;
        assert.ok(typeof staleToken === 'number', `${first.pod}'s status file has a token: ${JSON.stringify(read)}`);
        // Paused before it writes: its sidecar and its app, as a GC pause or a stopped VM would.
        for (const container of ['leasehold', 'app']) {
          const pid = cluster.containerPid(first.pod, container);
          frozen.push(pid);
          execFileSync('kill', ['-STOP', String(pid)]);
        }
        const t0 = Date.now();
        try {
          const next = await waitFor('another pod to lead', () => leaderOtherThan(first.pod), 90_000, 500);
          assert.ok(next.token > staleToken, `the new leader's token ${next.token} is above ${staleToken}`);
          console.log(`cluster: fencing: ${first.pod} frozen with token ${staleToken}; ${next.pod} leads with ${next.token} after ${Date.now() - t0} ms`);
          await waitFor(
            `${next.pod}'s write with its token ${next.token}`,
            () => {
              const r = write('replace', next.pod, next.token);
              return r.code === 200;
            },
            30_000,
            500,
          );
          const kept = stored();
          assert.equal(kept.data.writer, next.pod);

          // Thawed: its app carries on with the write it was making, with the token it read.
          thaw();
          const late = write('replace', first.pod, staleToken);
          console.log(`cluster: fencing: ${first.pod}'s late write: ${late.code} ${late.error.trim()}`);
          assert.equal(late.code, 403, `the late write was answered ${late.code}: ${late.error}`);
          assert.match(
            late.error,
            new RegExp(`the leasehold.io/fencing-token annotation is ${staleToken}, but the current fencing token of Lease ${LEASE} is ${next.token}`),
          );
          const after = stored();
          assert.equal(after.data.writer, next.pod, "the ConfigMap keeps the new leader's data");
          assert.equal(after.metadata.annotations?.['leasehold.io/fencing-token'], String(next.token));
          assert.equal(after.metadata.resourceVersion, kept.metadata.resourceVersion, 'nothing of the late write landed');
        } finally {
          thaw();
        }
      },
    );

    it('helm uninstall takes the policy and its binding away: the ConfigMap can be written without a token again', { timeout: 180_000 }, async () => {
      helm('uninstall', RELEASE, '--wait', '--timeout', '120s');
      assert.deepEqual(policyObjects(), [], 'no policy or binding of the release is left');
      // The API server drops the policy from its cache shortly after: then an unstamped write lands.
      await waitFor('a write without the current token to land', () => write('replace', 'anyone', 1).code === 200, 30_000, 500);
    });
  });
}
