/**
 * The app's health on the cluster tier, in the same session as the chart's checks (one
 * bring-up): a second release of the chart whose app can be made unhealthy on demand. Its
 * readinessProbe is the chart's example (a TCP connect to the app's httpd, every 2 s, 2 failures),
 * which `health.source: auto` gives the sidecar as --health-tcp. Checks, with real pods:
 *   - the leader's app made unhealthy: another pod leads within the probe's failure time + 1 s,
 *     the old pod's status says why, there are never two claimants; healthy again, it rejoins as
 *     a standby;
 *   - a rollout where each new pod's app takes 5 s to become healthy: no term begins on a pod
 *     whose app was not yet serving;
 *   - one pod whose app flaps (serving one second, not the next) for a minute: at most the first
 *     step-down, and no term after it (the hold-down).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../support/cli.js';
import { CHART, LOCAL_IMAGES, type ClusterSession } from '../support/cluster-session.js';
import { readPods } from '../support/cluster-views.js';

const RELEASE = 'hc';
const LEASE = 'hc-leasehold';
/** The chart's example readinessProbe: period 2 s, failureThreshold 2, so unhealthy within 4 s of the app failing. */
const PROBE_FAILURE_MS = 2 * 2_000;
/** How late the kubelet's timestamp of an app's log line may be. */
const SLACK_MS = 250;
/** Short, so the recovered pod is eligible again within the check. */
const HOLD_DOWN = '5s';

/**
 * The app: httpd on the probed port. SIGUSR1 stops it (the probe
 * fails), SIGUSR2 lets it serve again, SIGHUP makes it flap (httpd stopped one second, started
 * the next, for ever); it exits on SIGTERM. `delay` seconds pass before it first serves. It
 * prints "app: serving" each time it starts httpd and "app: stopped" once httpd is gone: the
 * kubelet timestamps each line.
 */
function appCommand(delay: number): string[] {
  return [
    'sh',
    '-c',
    [
      'trap \'[ -n "$pid" ] && kill $pid; exit 0\' TERM',
      // An empty pid means not serving: the loop starts httpd again once up is 1.
      'trap \'up=0; kill $pid; wait $pid; pid=; echo "app: stopped"\' USR1',
      "trap 'up=1' USR2",
      "trap 'flap=1' HUP",
      `sleep ${delay} & wait $!`,
      'up=1',
      'pid=',
      'while true; do',
      '  if [ "$flap" = 1 ] && [ -n "$pid" ]; then kill $pid; wait $pid; pid=; echo "app: stopped"',
      '  elif [ "$up" = 1 ] && [ -z "$pid" ]; then httpd -f -p 8080 -h /leader & pid=$!; echo "app: serving"; fi',
      '  sleep 1 & wait $!',
      'done',
    ].join('\n'),
  ];
}

interface Status {
  isLeader: boolean;
  fencingToken: number | null;
  standingAside?: { reason: string; since: string } | null;
}
interface LeaseJson {
  spec: { holderIdentity?: string; acquireTime?: string; leaseTransitions?: number };
}

export function healthChecks(cluster: ClusterSession): void {
  describe("the app's health on the same node: a leader whose app fails steps down; no term on an app not yet serving", () => {
    const { kubectl, helm } = cluster;
    const lease = (): LeaseJson['spec'] => {
      try {
        return (JSON.parse(kubectl('get', 'lease', LEASE, '-o', 'json')) as LeaseJson).spec;
      } catch {
        return {};
      }
    };
    const statusOf = (pod: string): Status | null => {
      try {
        return JSON.parse(kubectl('exec', pod, '-c', 'app', '--', 'cat', '/leader/status.json')) as Status;
      } catch {
        return null;
      }
    };
    const live = () => readPods(kubectl, RELEASE).filter((p) => !p.deleting);
    const signalApp = (pod: string, signal: 'USR1' | 'USR2') => kubectl('exec', pod, '-c', 'app', '--', 'sh', '-c', `kill -${signal} 1`);
    /** The times (epoch ms) of a sidecar's log lines with this msg, oldest first. */
    const logTimes = (pod: string, msg: string): number[] =>
      kubectl('logs', pod, '-c', 'leasehold')
        .split('\n')
        .filter((l) => l.includes(`"msg":"${msg}"`))
        .map((l) => Date.parse((JSON.parse(l) as { time: string }).time));
    /** When the app printed this line (first or last time), from the kubelet's timestamp of it. */
    const appSaid = (pod: string, text: string, which: 'first' | 'last'): number | undefined => {
      const lines = kubectl('logs', pod, '-c', 'app', '--timestamps')
        .split('\n')
        .filter((l) => l.endsWith(text));
      const line = which === 'first' ? lines[0] : lines.at(-1);
      return line ? Date.parse(line.split(' ')[0]!.replace(/(\.\d{3})\d+/, '$1')) : undefined;
    };
    const servingAt = (pod: string) => appSaid(pod, 'app: serving', 'first');
    /** One leader by the Lease and every status file, every pod's app eligible (no standingAside). */
    const settled = (timeoutMs = 120_000, replicas = 3) =>
      waitFor(
        'one leader and every app eligible',
        () => {
          const pods = live();
          if (pods.length !== replicas) return undefined;
          const holder = lease().holderIdentity;
          const statuses = pods.map((p) => ({ name: p.name, s: statusOf(p.name) }));
          if (statuses.some((x) => x.s === null || x.s.standingAside !== null)) return undefined;
          const leaders = statuses.filter((x) => x.s!.isLeader).map((x) => x.name);
          return leaders.length === 1 && leaders[0] === holder && holder;
        },
        timeoutMs,
        500,
      );

    before(() => {
      helm(
        'install',
        RELEASE,
        CHART,
        ...LOCAL_IMAGES,
        '--set-json',
        `app.command=${JSON.stringify(appCommand(0))}`,
        '--set-json',
        `leasehold.extraArgs=${JSON.stringify([`--health-hold-down=${HOLD_DOWN}`])}`,
        '--wait=false',
      );
    });
    after(() => {
      try {
        helm('uninstall', RELEASE, '--wait', '--timeout', '120s');
      } catch {
        // already gone, or the cluster is being torn down anyway
      }
    });

    it(
      "the leader's app made unhealthy: another pod leads within the probe's failure time + 1 s, never two claimants; the old pod says why, then rejoins as a standby",
      { timeout: 300_000 },
      async () => {
        const old = await settled(180_000);
        const before = lease();
        const others = live()
          .map((p) => p.name)
          .filter((n) => n !== old);
        const t0 = Date.now();
        signalApp(old, 'USR1');
        // Sampled while the handoff runs: never two pods whose status files both say leader.
        let sampled = 0;
        const next = await waitFor(
          'another pod to lead',
          () => {
            // The others first, then the old leader: a leader only ever stops and a standby only ever
            // starts here, so two seen in this order were both leaders at the first read.
            const claimants = [...others, old].filter((p) => statusOf(p)?.isLeader === true);
            sampled++;
            assert.ok(claimants.length <= 1, `two claimants at once: ${claimants.join(', ')}`);
            // A released Lease says "" (or nothing): that is no one leading yet, not another pod.
            const h = lease().holderIdentity;
            return h !== undefined && h !== '' && h !== old && h;
          },
          30_000,
          50,
        );
        // From when the app's port closed (its own log line), not from the kubectl exec that asked it to.
        const stoppedAt = appSaid(old, 'app: stopped', 'last')!;
        assert.ok(stoppedAt >= t0 - 1_000, `the app says it stopped at ${new Date(stoppedAt).toISOString()}`);
        const acquired = Date.parse(lease().acquireTime!);
        const tookMs = acquired - stoppedAt;
        console.log(`cluster: ${old}'s app stopped; ${next} acquired the lease ${tookMs} ms later (${sampled} samples, never two claimants)`);
        assert.ok(tookMs <= PROBE_FAILURE_MS + 1_000, `${next} led ${tookMs} ms after the app failed (bound ${PROBE_FAILURE_MS + 1_000} ms)`);
        assert.ok((lease().leaseTransitions ?? 0) > (before.leaseTransitions ?? 0), 'the new term has a higher token');
        // The old sidecar wrote "not leader" before the new one was elected.
        const stopped = logTimes(old, 'stopped leading').at(-1);
        const became = logTimes(next, 'became leader').at(-1);
        assert.ok(stopped !== undefined && became !== undefined && stopped <= became, `stopped leading ${stopped}, became leader ${became}`);

        const aside = statusOf(old)!;
        assert.equal(aside.isLeader, false);
        assert.match(aside.standingAside?.reason ?? '', /app unhealthy: .*8080/, JSON.stringify(aside));
        assert.ok(Date.parse(aside.standingAside!.since) >= t0 - 1_000, `since ${aside.standingAside!.since}`);

        // Healthy again: after the hold-down it stands aside no more, and is a standby (the new leader keeps the lease).
        signalApp(old, 'USR2');
        await waitFor('the old pod eligible again', () => statusOf(old)?.standingAside === null, 60_000, 500);
        const again = statusOf(old)!;
        assert.equal(again.isLeader, false);
        assert.equal(lease().holderIdentity, next);
        assert.equal(await settled(), next);
      },
    );

    it('a rollout where each new pod takes 5 s to serve: no term begins on a pod whose app was not serving', { timeout: 480_000 }, async () => {
      // Every pod replaced at once, so the new pods' sidecars start while the lease is free: without
      // health one of them would lead within a second, long before its app serves.
      kubectl(
        'patch',
        'deployment',
        LEASE,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { strategy: { rollingUpdate: { maxSurge: '100%', maxUnavailable: '100%' } } } }),
      );
      helm('upgrade', RELEASE, CHART, '--reuse-values', '--set-json', `app.command=${JSON.stringify(appCommand(5))}`, '--wait=false');
      kubectl('rollout', 'status', `deployment/${LEASE}`, '--timeout=240s');
      await settled(180_000);
      const beforeRestart = new Set(live().map((p) => p.name));
      kubectl('rollout', 'restart', `deployment/${LEASE}`);
      kubectl('rollout', 'status', `deployment/${LEASE}`, '--timeout=240s');
      const holder = await settled(180_000);
      const fresh = live()
        .map((p) => p.name)
        .filter((n) => !beforeRestart.has(n));
      assert.equal(fresh.length, 3, 'the rollout replaced every pod');
      assert.ok(fresh.includes(holder), `${holder} leads, a pod of the rollout`);
      let terms = 0;
      for (const pod of fresh) {
        const serving = servingAt(pod);
        assert.ok(serving !== undefined, `${pod}'s app never printed that it serves`);
        for (const t of logTimes(pod, 'became leader')) {
          terms++;
          // The kubelet stamps the app's line when it reads it, a few ms late; a term begun without
          // health would be about 5 s early.
          assert.ok(
            t >= serving - SLACK_MS,
            `${pod} began a term at ${new Date(t).toISOString()}, before its app served at ${new Date(serving).toISOString()}`,
          );
        }
      }
      const acquired = Date.parse(lease().acquireTime!);
      assert.ok(acquired >= servingAt(holder)! - SLACK_MS, "the Lease was acquired after the holder's app served");
      console.log(`cluster: rollout restart with apps serving after 5 s: ${terms} term(s) on new pods, each after its app served`);
      assert.ok(terms >= 1);
    });

    it('one app flapping every second for a minute: at most the first step-down, and the lease does not come back to it', { timeout: 480_000 }, async () => {
      // One replica, so nothing but the hold-down keeps the flapping pod from leading again as soon
      // as its app serves; the sidecar probes every second and one failure counts, so it sees the flaps.
      helm(
        'upgrade',
        RELEASE,
        CHART,
        '--reuse-values',
        '--set',
        'replicaCount=1',
        '--set',
        'health.probe.periodSeconds=1',
        '--set',
        'health.probe.failureThreshold=1',
        '--set-json',
        `app.command=${JSON.stringify(appCommand(0))}`,
        '--wait=false',
      );
      kubectl('rollout', 'status', `deployment/${LEASE}`, '--timeout=240s');
      const pod = await settled(180_000, 1);
      const transitions = lease().leaseTransitions ?? 0;
      const stops = () =>
        kubectl('logs', pod, '-c', 'app')
          .split('\n')
          .filter((l) => l === 'app: stopped').length;
      const stoppedBefore = stops();
      kubectl('exec', pod, '-c', 'app', '--', 'sh', '-c', 'kill -HUP 1');
      // Thirty times down and thirty times up: a minute of flapping.
      await waitFor('the app to flap for a minute', () => stops() >= stoppedBefore + 30, 180_000, 2_000);
      const stepDowns = logTimes(pod, 'stopped leading');
      const terms = logTimes(pod, 'became leader');
      const s = statusOf(pod)!;
      console.log(
        `cluster: ${pod}'s app flapped ${stops() - stoppedBefore} times: ${stepDowns.length} step-down(s), ${terms.length} term(s), standing aside: ${s.standingAside?.reason}`,
      );
      assert.ok(stepDowns.length <= 1, `at most the first step-down, got ${stepDowns.length}`);
      assert.equal(terms.length, 1, 'no term after the step-down');
      assert.equal(lease().leaseTransitions ?? 0, transitions, 'the Lease was not taken again');
      // The sidecar saw the flapping: it stands aside, unhealthy or held down.
      assert.equal(s.isLeader, false);
      assert.match(s.standingAside?.reason ?? '', /^app (unhealthy|healthy again, held down)/, JSON.stringify(s));
    });
  });
}
