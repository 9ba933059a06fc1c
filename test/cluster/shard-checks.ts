/**
 * The chart in shard mode on the cluster tier, in the same session as the chart's checks (one
 * bring-up): a release with `shards.count=64` and the example app, its Deployment going 1 -> 4
 * -> 3 (a scale-down: a graceful stop) -> 4 (then a `helm upgrade` to another `shards.count`,
 * refused by the chart with the Role, the Leases and the members unchanged; then one member cut
 * off from the API server by DROP rules in its pod's network namespace until its own session is
 * over, and healed: its shards owned again within a graceful move of its return, issue 43) -> 3
 * (a crash: one pod's sidecar stopped with
 * SIGSTOP, the Deployment scaled down with that pod first, and the sidecar SIGKILLed with `ctr
 * tasks kill` once its pod is terminating, so the kubelet does not restart it; its shards are
 * taken only once its session could have expired). After each step settles, every member owns 64, 16, or
 * 21 or 22 shards (test/support/cluster-views.ts, shardsSettled), and the time it took is
 * printed. All along, a sampler (test/cluster/shard-sampler.ts, a process of its own) reads every
 * member's shards.json every 10 ms from the host, where the kubelet keeps each pod's status
 * volume (an emptyDir under its root directory): no shard may be owned twice within the files'
 * validUntil, and no shard's token may go back. `kubectl get leases -l leasehold.io/group=G`
 * shows the group's Leases.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import { API_SERVER_ADDRESSES, CHART, LOCAL_IMAGES, type ClusterSession } from '../support/cluster-session.js';
import { shardsSettled, type MemberView } from '../support/cluster-views.js';
import type { SamplerSummary } from './shard-sampler.js';

const RELEASE = 'sh';
const GROUP = 'sh-leasehold';
const SHARDS = 64;

interface PodJson {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  status: { conditions?: { type: string; status: string }[]; containerStatuses?: { name: string; restartCount: number }[] };
}

export function shardChecks(cluster: ClusterSession): void {
  describe('the chart in shard mode on the same node: 64 shards over 1, 4, 3, 4 and 3 replicas, never one shard owned twice', () => {
    const { kubectl, helm } = cluster;
    const podsDir = join(cluster.dir, 'kubelet', 'pods');
    let sampler: ChildProcess | undefined;
    let summary: Promise<SamplerSummary> | undefined;
    const settleTimes: string[] = [];

    const pods = (): PodJson[] =>
      (JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${RELEASE}`, '-o', 'json')) as { items: PodJson[] }).items;
    /** A pod's shards.json as its app reads it, from the host: the kubelet's emptyDir of the pod's status volume. */
    const shardsOf = (uid: string): MemberView['shards'] => {
      try {
        const s = JSON.parse(readFileSync(join(podsDir, uid, 'volumes/kubernetes.io~empty-dir/leader/shards.json'), 'utf8')) as {
          members: number;
          owned: { shard: number }[];
          validUntil: string | null;
        };
        return { members: s.members, owned: s.owned.map((o) => o.shard), validUntil: s.validUntil };
      } catch {
        return null;
      }
    };
    const members = (): MemberView[] =>
      pods().map((p) => ({
        name: p.metadata.name,
        ready: p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
        deleting: Boolean(p.metadata.deletionTimestamp),
        shards: shardsOf(p.metadata.uid),
      }));
    /** Waits until `m` members own their share each; prints and returns how long after `t0` that was first seen. */
    const settled = async (step: string, m: number, t0: number, timeoutMs = 180_000) => {
      let last = '';
      // What kept it from settling, each time that changed, with when: printed with the time.
      const trace: string[] = [];
      const shape = (p: string) => p.replace(/\(.*\)/g, '');
      try {
        await waitFor(
          `${m} members sharing ${SHARDS} shards`,
          () => {
            const problem = shardsSettled(members(), SHARDS, m, new Date());
            if (problem && shape(problem) !== shape(last)) trace.push(`+${((Date.now() - t0) / 1000).toFixed(1)} s ${problem}`);
            if (problem) last = problem;
            return problem === null;
          },
          timeoutMs,
          100,
        );
      } catch (err) {
        throw new Error(`${step}: ${(err as Error).message}; last seen: ${last}; before: ${trace.join('; ')}`, { cause: err });
      }
      const ms = Date.now() - t0;
      const line = `${step}: settled in ${(ms / 1000).toFixed(1)} s`;
      settleTimes.push(line);
      console.log(`cluster: shards: ${line} (kubectl polling every 100 ms included); until then: ${trace.slice(-12).join('; ') || 'nothing'}`);
      return ms;
    };
    const scale = (replicas: number) => kubectl('scale', `deployment/${GROUP}`, `--replicas=${replicas}`);
    const live = () => pods().filter((p) => !p.metadata.deletionTimestamp);

    before(() => {
      // Started before the install, so it sees every file the group's members ever write.
      sampler = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'test/cluster/shard-sampler.ts'), podsDir, GROUP], {
        cwd: REPO,
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let out = '';
      sampler.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      summary = new Promise((resolve, reject) =>
        sampler!.once('close', (code) => (code === 0 ? resolve(JSON.parse(out) as SamplerSummary) : reject(new Error(`the sampler exited ${code}: ${out}`)))),
      );
      // Never left unawaited: the last check awaits it; a failure before then is reported there, or dropped in after().
      summary.catch(() => undefined);
    });
    after(() => {
      sampler?.stdin?.end();
      try {
        helm('uninstall', RELEASE, '--wait', '--timeout', '120s');
      } catch (err) {
        console.log(`cluster: shards: uninstall failed: ${(err as Error).message}`);
      }
    });

    it('helm install with shards.count=64 and 1 replica: the member owns all 64; kubectl lists the group by its label', { timeout: 240_000 }, async () => {
      const t0 = Date.now();
      helm('install', RELEASE, CHART, ...LOCAL_IMAGES, '--set', `shards.count=${SHARDS}`, '--set', 'replicaCount=1', '--wait=false');
      // A new group's shards are created a lease duration (15 s) after they are first seen absent.
      await settled('1 replica (install)', 1, t0);
      const names = kubectl('get', 'leases', '-l', `leasehold.io/group=${GROUP}`, '-o', 'jsonpath={.items[*].metadata.name}').trim().split(' ');
      const shardNames = Array.from({ length: SHARDS }, (_, i) => `${GROUP}-shard-${String(i).padStart(4, '0')}`);
      assert.deepEqual(names.filter((n) => !/-member-\d{4}$/.test(n)).sort(), [GROUP, ...shardNames].sort(), 'the header and the 64 shards');
      const slots = names.filter((n) => new RegExp(`^${GROUP}-member-\\d{4}$`).test(n));
      assert.equal(slots.length, 1, `one member slot: ${slots.join(' ')}`);
      // The example app prints the shards it owns.
      const [pod] = live();
      await waitFor(
        'the app to print its 64 shards',
        () => kubectl('logs', pod!.metadata.name, '-c', 'app').includes(`app: owns 64 shards: ${shardNames.map((_, i) => i).join(' ')}\n`),
        30_000,
        500,
      );
    });

    it("4 replicas: 16 each, the first member's apps stopping what moved before its release", { timeout: 240_000 }, async () => {
      const first = live()[0]!.metadata.name;
      const t0 = Date.now();
      scale(4);
      await settled('1 -> 4 replicas', 4, t0);
      // Each moved shard went through the first member's drain: released on its app's word, or,
      // where the app (a shell loop posting one shard at a time) was slower than the drain
      // timeout, kept until it could have expired. Never released without either: that is the
      // safety this shows. How many go each way depends on the machine's load (36 of 48 on the
      // app's word in one run at load 30, its log lost with the node), so it is printed.
      // Counted by ownership (shard and token), not by line: while the replicas come up one at a
      // time (1, 2, 3, 4 members) a shard can move away, come back and move away again, each
      // loss through the drain (50 lines for 48 shards in one run at load 14).
      const lines = kubectl('logs', first, '-c', 'leasehold').split('\n');
      const losses = (msg: string) =>
        lines
          .filter((l) => l.includes(`"msg":"${msg}`))
          .map((l) => JSON.parse(l) as { shard: number; token: number })
          .map((l) => ({ shard: l.shard, token: l.token }));
      const onWord = losses("the app stopped the shard's work: releasing");
      const kept = losses('the work of a shard did not finish within drainTimeoutMs');
      const drained = [...onWord, ...kept];
      console.log(
        `cluster: 1 -> 4 replicas: the first member released ${onWord.length} lost ownerships on its app's word and kept ${kept.length} until they could expire`,
      );
      const ownerships = drained.map((d) => `${d.shard}@${d.token}`);
      assert.equal(new Set(ownerships).size, ownerships.length, `an ownership drained twice: ${ownerships.join(' ')}`);
      const stillOwned = new Set(shardsOf(live().find((p) => p.metadata.name === first)!.metadata.uid)?.owned ?? []);
      const moved = Array.from({ length: SHARDS }, (_, s) => s).filter((s) => !stillOwned.has(s));
      assert.equal(moved.length, SHARDS - 16, `the first member still owns ${stillOwned.size} shards`);
      const drainedShards = new Set(drained.map((d) => d.shard));
      assert.deepEqual(
        moved.filter((s) => !drainedShards.has(s)),
        [],
        `shards the first member gave up without its app's word or a wait for their expiry (${onWord.length} on its app's word, ${kept.length} kept)`,
      );
      assert.ok(onWord.length > 0, "no moved shard was released on the app's word");
      assert.doesNotMatch(kubectl('logs', first, '-c', 'app'), /could not tell the sidecar|Segmentation fault/);
    });

    it('3 replicas by a scale-down: the stopped pod gives its shards up through its app, and 21 or 22 each', { timeout: 240_000 }, async () => {
      const before = new Set(live().map((p) => p.metadata.name));
      const t0 = Date.now();
      scale(3);
      const gone = await waitFor(
        'the pod the scale-down stops',
        () => pods().find((p) => p.metadata.deletionTimestamp && before.has(p.metadata.name)),
        30_000,
        100,
      );
      await settled('4 -> 3 replicas (graceful)', 3, t0);
      // The example app ignores SIGTERM: the pod lingers for its grace period, its logs readable.
      const name = gone.metadata.name;
      const sidecarLog = kubectl('logs', name, '-c', 'leasehold');
      const appLog = kubectl('logs', name, '-c', 'app');
      const told = appLog.split('\n').filter((l) => /^app: told the sidecar that shard \d+ \(token \d+\) stopped$/.test(l)).length;
      assert.ok(told >= 16, `${name}'s app told its sidecar of ${told} shards`);
      assert.match(sidecarLog, /"msg":"left the shard group"/);
      assert.doesNotMatch(sidecarLog, /did not finish within drainTimeoutMs/);
      assert.doesNotMatch(appLog, /could not tell the sidecar|Segmentation fault/);
    });

    it('4 replicas again: 16 each', { timeout: 240_000 }, async () => {
      const t0 = Date.now();
      scale(4);
      await settled('3 -> 4 replicas', 4, t0);
    });

    it(
      'helm upgrade with another shards.count is refused: the Role, the Leases and the release unchanged, the 4 members still own all 64',
      { timeout: 240_000 },
      async () => {
        const role = () => (JSON.parse(kubectl('get', 'role', GROUP, '-o', 'json')) as { rules: unknown }).rules;
        const leases = () => kubectl('get', 'leases', '-l', `leasehold.io/group=${GROUP}`, '-o', 'jsonpath={.items[*].metadata.name}').trim().split(' ').sort();
        const header = () => kubectl('get', 'lease', GROUP, '-o', 'jsonpath={.metadata.annotations.leasehold\\.io/shards}');
        const revision = () => (JSON.parse(helm('status', RELEASE, '-o', 'json')) as { version: number }).version;
        const generation = () => kubectl('get', `deployment/${GROUP}`, '-o', 'jsonpath={.metadata.generation}');
        const before = { role: role(), leases: leases(), header: header(), revision: revision(), generation: generation() };
        assert.equal(before.header, String(SHARDS));
        // As a user would: an upgrade of the running release with another count (issue 41, D).
        const t0 = Date.now();
        let refusal = '';
        try {
          helm('upgrade', RELEASE, CHART, '--reuse-values', '--set', 'shards.count=32', '--wait=false');
        } catch (err) {
          refusal = String((err as { stderr?: string }).stderr ?? (err as Error).message);
        }
        assert.notEqual(refusal, '', 'helm upgrade to shards.count=32 went through');
        console.log(`cluster: shards: helm upgrade to shards.count=32: ${refusal.trim()}`);
        assert.match(refusal, new RegExp(`shards.count 32, but the shard group "${GROUP}" in namespace ${cluster.namespace} has ${SHARDS} shards`));
        assert.match(refusal, new RegExp(`keep shards.count ${SHARDS}`));
        assert.deepEqual(
          { role: role(), leases: leases(), header: header(), revision: revision(), generation: generation() },
          before,
          'the Role, the Leases, the release and the Deployment as they were',
        );
        // Nothing rolled: the running members still own every shard, 16 each.
        await settled('after the refused upgrade', 4, t0, 30_000);
      },
    );

    it(
      'a member cut off from the API server until its own session is over, then healed: its shards owned again within a graceful move of its return, no wait for an expiry',
      { timeout: 240_000 },
      async () => {
        // Issue 43. The cut: DROP rules in the pod's network namespace (nsenter from the host),
        // as the leader check's; the bridge CNI here enforces no NetworkPolicy. The sidecar ends
        // its session at renewDeadline (10 s) and its app drains its shards, while the others
        // count that session live until a lease (15 s) after its last heartbeat: healed in
        // between, its shards must not wait for that expiry.
        const [v] = live();
        const victim = v!.metadata.name;
        const uid = v!.metadata.uid;
        const before = shardsOf(uid)?.owned ?? [];
        assert.equal(before.length, SHARDS / 4, `${victim} owns its share before the cut`);
        const pid = cluster.containerPid(victim, 'leasehold');
        const iptables = (op: '-I' | '-D', rule: string[]) =>
          execFileSync('nsenter', [`--net=/proc/${pid}/ns/net`, 'iptables', op, 'OUTPUT', ...rule, '-j', 'DROP'], { stdio: ['ignore', 'ignore', 'pipe'] });
        const inserted: string[][] = [];
        const heal = () => {
          for (const rule of inserted.splice(0)) {
            try {
              iptables('-D', rule);
            } catch {
              // the pod (and its network namespace) is gone
            }
          }
        };
        const joinedLines = () =>
          kubectl('logs', victim, '-c', 'leasehold')
            .split('\n')
            .filter((l) => l.includes('"msg":"joined the shard group"'));
        const joinedBefore = joinedLines().length;
        const cutAt = Date.now();
        try {
          for (const rule of API_SERVER_ADDRESSES) {
            iptables('-I', rule);
            inserted.push(rule);
          }
          await waitFor(`${victim} to give its shards up (its session over)`, () => shardsOf(uid)?.owned.length === 0, 30_000, 50);
        } finally {
          heal();
        }
        const healAt = Date.now();
        const lostS = (healAt - cutAt) / 1000;
        // Its return: the join of its next session, once its connections to the API server recover.
        const joined = await waitFor(`${victim} to join again`, () => joinedLines()[joinedBefore], 60_000, 100);
        const joinedAt = Date.parse((JSON.parse(joined) as { time: string }).time);
        const ms = await settled('a member cut off and healed', 4, joinedAt);
        const after = shardsOf(uid)?.owned ?? [];
        console.log(
          `cluster: shards: ${victim} cut off, gave its ${before.length} shards up ${lostS.toFixed(1)} s in, healed then; ` +
            `joined again ${((joinedAt - healAt) / 1000).toFixed(1)} s after the heal; every shard owned again ${(ms / 1000).toFixed(1)} s after that (kubectl polling included); ` +
            `it owns ${after.join() === before.join() ? 'the same shards' : `${after.length} shards, not all the same`}`,
        );
        // A wait for the old session's expiry would be 15 s after its last heartbeat, about 5 s after its shards were given up.
        assert.ok(ms < 2_500, `its shards were owned again ${ms} ms after it joined again: a wait for its old session to expire`);
      },
    );

    it(
      "3 replicas by a crash: one pod's sidecar stopped dead (SIGSTOP, then ctr tasks kill -s SIGKILL once its pod is terminating), its shards moved once its session could have expired",
      { timeout: 300_000 },
      async () => {
        const [v] = live();
        const victim = v!.metadata.name;
        const owned = shardsOf(v!.metadata.uid)?.owned ?? [];
        // The ReplicaSet deletes the pod of the lowest deletion cost first.
        kubectl('annotate', 'pod', victim, 'controller.kubernetes.io/pod-deletion-cost=-1000');
        const id = cluster.containerId(victim, 'leasehold');
        const pid = cluster.containerPid(victim, 'leasehold');
        // Stopped first, so it never handles the pod's SIGTERM (it would give its shards up), and
        // killed only once the pod is terminating: the kubelet restarts a dead container of a
        // running pod at once (a member of its own, under a new session), never one of a
        // terminating pod. From the group's view it died at the stop, its last heartbeat before.
        execFileSync('kill', ['-STOP', String(pid)]);
        // The graceful step's pod may still be terminating (its app ignores SIGTERM: 30 s of
        // grace): the pod this scale-down stops is the one newly deleting.
        const terminating = new Set(
          pods()
            .filter((p) => p.metadata.deletionTimestamp)
            .map((p) => p.metadata.name),
        );
        const t0 = Date.now();
        scale(3);
        const deleting = await waitFor(
          'the scale-down to stop a pod',
          () => pods().find((p) => p.metadata.deletionTimestamp && !terminating.has(p.metadata.name)),
          30_000,
          100,
        );
        assert.equal(deleting.metadata.name, victim, 'the scale-down stopped the pod whose sidecar was stopped');
        execFileSync('ctr', ['-a', join(cluster.dir, 'containerd', 'containerd.sock'), '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]);
        const killedS = (Date.now() - t0) / 1000;
        const ms = await settled('4 -> 3 replicas (a sidecar killed)', 3, t0);
        // The example app ignores SIGTERM: the pod lingers for its 30 s grace period, its sidecar dead.
        const after = pods().find((p) => p.metadata.name === victim);
        const restarts = after?.status.containerStatuses?.find((c) => c.name === 'leasehold')?.restartCount;
        console.log(
          `cluster: shards: the killed sidecar owned ${owned.length} shards; stopped at +0 s, killed at +${killedS.toFixed(1)} s, ${restarts === undefined ? 'its pod gone by the settle' : `restarted ${restarts} times`}`,
        );
        assert.equal(restarts ?? 0, 0, 'the kubelet did not restart the sidecar of a terminating pod');
        // Its shards waited for its session to expire (a lease duration, 15 s, after its last
        // heartbeat): nobody released them.
        assert.ok(ms >= 10_000, `its shards moved ${ms} ms after it stopped: before its session could have expired`);
      },
    );

    it('all along: no shard owned twice within validUntil, no token went back', { timeout: 60_000 }, async () => {
      sampler!.stdin!.end();
      const s = await summary!;
      console.log(
        `cluster: shards: sampler read ${s.reads} shards.json files in ${s.rounds} rounds (every 10 ms; longest gap ${s.longestGapMs} ms), ` +
          `members ${s.members.length}, ${s.movesBetweenReads} moves seen between two reads of one round, ${s.violationCount} violations`,
      );
      console.log(`cluster: shards: settle times: ${settleTimes.join('; ')}`);
      assert.deepEqual(s.violations, []);
      assert.ok(s.rounds > 1000, `only ${s.rounds} rounds`);
      assert.equal(Object.keys(s.tokens).length, SHARDS, 'every shard was seen owned');
      // 1 pod, 3 more, one of them stopped, 1 more: 5 pods were members.
      assert.ok(s.members.length >= 5, `members seen: ${s.members.join(' ')}`);
    });
  });
}
