/**
 * The pod labeller (src/sidecar/pod-labeler.ts) against a real API server: Pod objects are
 * created directly (no kubelet needed, they stay Pending) and labelled as sidecars would,
 * including a former leader that can no longer relabel itself (cut off from the API server).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../support/cli.js';
import { env, freshNamespace, kubectl } from '../support/kube.js';
import { connect } from '../../src/kube/connect.js';
import type { KubeClient } from '../../src/kube/api-client.js';
import { createLogger } from '../../src/log.js';
import { LEASE_LABEL, PodLabeler, TOKEN_ANNOTATION, leaseLabelValue } from '../../src/sidecar/pod-labeler.js';

describe('the pod labeller on a real API server', () => {
  const { client } = connect({ kubeconfig: env().admin });
  after(() => client.close());
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', write: (line) => lines.push(line) });

  async function podsIn(prefix: string, pods: string[]): Promise<string> {
    const ns = await freshNamespace(prefix);
    // No controller-manager here: create the default ServiceAccount the Pod admission needs.
    kubectl(['create', 'serviceaccount', 'default', '-n', ns]);
    for (const pod of pods) kubectl(['run', pod, '-n', ns, '--image', 'busybox:1.36', '--restart', 'Never', '--command', '--', 'sleep', '3600']);
    return ns;
  }
  const labels = (ns: string, pod: string) => {
    const meta = (
      JSON.parse(kubectl(['get', 'pod', pod, '-n', ns, '-o', 'json'])) as { metadata: { labels: Record<string, string>; annotations?: Record<string, string> } }
    ).metadata;
    return { role: meta.labels['leasehold.io/role'], lease: meta.labels[LEASE_LABEL], token: meta.annotations?.[TOKEN_ANNOTATION] };
  };
  /**
   * Labels `pod` leader of `lease` for a term as its own sidecar does, through kubectl: not
   * through a PodLabeler, which as leader would demote the others itself.
   */
  const labelled = (ns: string, pod: string, lease: string, token: number) => {
    const metadata = { labels: { 'leasehold.io/role': 'leader', [LEASE_LABEL]: lease }, annotations: { [TOKEN_ANNOTATION]: String(token) } };
    kubectl(['patch', 'pod', pod, '-n', ns, '--type', 'merge', '-p', JSON.stringify({ metadata })]);
  };

  it('a new leader relabels follower the pods of its lease still labelled leader for an older term, and no others', { timeout: 60_000 }, async () => {
    const ns = await podsIn('demote', ['former', 'newer', 'elsewhere', 'next']);
    // `former` led term 3 and was then cut off: it can no longer relabel itself.
    labelled(ns, 'former', 'billing', 3);
    // `newer` leads a later term (5) than the new leader's (4): it must be left alone.
    labelled(ns, 'newer', 'billing', 5);
    // `elsewhere` leads another lease in the same namespace.
    labelled(ns, 'elsewhere', 'reports', 1);
    const next = new PodLabeler(client, ns, 'next', 'billing', log, 200);
    lines.length = 0;
    const t0 = Date.now();
    next.set('leader', 4);
    await waitFor('the former leader relabelled follower', () => labels(ns, 'former').role === 'follower', 10_000, 50);
    const ms = Date.now() - t0;
    console.log(`pod labeller: the former leader pod relabelled follower ${ms} ms after the takeover`);
    assert.ok(ms < 2_000, `relabelling took ${ms} ms`);
    await waitFor('the new leader labelled', () => labels(ns, 'next').role === 'leader', 10_000, 50);
    assert.deepEqual(labels(ns, 'next'), { role: 'leader', lease: 'billing', token: '4' });
    await waitFor('the demotion to end', () => lines.some((l) => l.includes('no other pod of the lease is labelled leader')), 10_000, 50);
    assert.equal(lines.filter((l) => l.includes('relabelled a former leader pod')).length, 1);
    assert.deepEqual(labels(ns, 'newer'), { role: 'leader', lease: 'billing', token: '5' });
    assert.deepEqual(labels(ns, 'elsewhere'), { role: 'leader', lease: 'reports', token: '1' });
    next.set('follower');
    await next.flush(10_000);
  });

  /** The client, but the first list of pods returns only after `hook` ran (a race, made certain). */
  const listThen = (hook: () => Promise<void>): KubeClient => {
    let first = true;
    return new Proxy(client, {
      get(target, prop, receiver) {
        if (prop !== 'request') return Reflect.get(target, prop, receiver) as unknown;
        return async (method: string, path: string, opts?: object) => {
          const answer: unknown = await target.request(method, path, opts);
          if (first && method === 'GET' && path.includes('labelSelector=')) {
            first = false;
            await hook();
          }
          return answer;
        };
      },
    });
  };

  /**
   * Pods `former` (labelled leader of billing for term 3) and `next` in a fresh namespace, and
   * `next`'s labeller made leader for term 4, whose first list returns only after `between` ran.
   */
  const takeOver = async (prefix: string, between: (ns: string, next: PodLabeler) => Promise<void>) => {
    const ns = await podsIn(prefix, ['former', 'next']);
    labelled(ns, 'former', 'billing', 3);
    const next: PodLabeler = new PodLabeler(
      listThen(async () => between(ns, next)),
      ns,
      'next',
      'billing',
      log,
      200,
    );
    lines.length = 0;
    next.set('leader', 4);
    return { ns, next };
  };

  it('a pod relabelled leader for a newer term after the list is not demoted by the stale list', { timeout: 60_000 }, async () => {
    // Between the new leader's list and its patch, `former` leads again, for term 5.
    const { ns, next } = await takeOver('stale', async (ns) => labelled(ns, 'former', 'billing', 5));
    await waitFor('the new leader labelled', () => labels(ns, 'next').role === 'leader', 10_000, 50);
    // The patch, sent with the listed resourceVersion, is refused; the list read again shows term 5.
    await waitFor('the demotion to end', () => lines.some((l) => l.includes('no other pod of the lease is labelled leader')), 10_000, 50);
    assert.deepEqual(labels(ns, 'former'), { role: 'leader', lease: 'billing', token: '5' });
    assert.ok(!lines.some((l) => l.includes('relabelled a former leader pod')), lines.join('\n'));
    next.set('follower');
    await next.flush(10_000);
  });

  it('a leader that steps down before its patches are sent demotes nobody', { timeout: 60_000 }, async () => {
    // Between the list and the patch it would send, the new leader steps down.
    const { ns, next } = await takeOver('stepdown', async (_ns, next) => next.set('follower'));
    await waitFor('the list read', () => labels(ns, 'next').role === 'follower', 10_000, 50);
    await next.flush(10_000);
    assert.equal(labels(ns, 'next').role, 'follower');
    assert.equal(labels(ns, 'former').role, 'leader');
    assert.ok(!lines.some((l) => l.includes('relabelled a former leader pod')), lines.join('\n'));
  });

  it('a patch whose answer was lost counts as unknown: going back to the role before it is sent again', { timeout: 60_000 }, async () => {
    const ns = await podsIn('lost', ['self']);
    let labeller: PodLabeler | null = null;
    let lose = true;
    // The leader patch lands on the server, its answer is lost, and meanwhile the term ends.
    const lossy = new Proxy(client, {
      get(target, prop, receiver) {
        if (prop !== 'request') return Reflect.get(target, prop, receiver) as unknown;
        return async (method: string, path: string, opts?: { body?: { metadata?: { labels?: Record<string, string> } } }) => {
          const answer: unknown = await target.request(method, path, opts);
          if (lose && method === 'PATCH' && opts?.body?.metadata?.labels?.['leasehold.io/role'] === 'leader') {
            lose = false;
            labeller!.set('follower');
            throw new Error('the answer was lost');
          }
          return answer;
        };
      },
    });
    labeller = new PodLabeler(lossy, ns, 'self', 'billing', log, 60_000);
    labeller.set('follower');
    await labeller.flush(10_000);
    assert.equal(labels(ns, 'self').role, 'follower');
    labeller.set('leader', 4);
    // Wanted is "follower" again, the role last known applied: it must be sent all the same (the
    // retry is a minute away, so only that send can relabel the pod in time).
    await waitFor('the pod relabelled follower', () => !lose && labels(ns, 'self').role === 'follower', 10_000, 50);
    await labeller.flush(10_000);
    assert.equal(labels(ns, 'self').role, 'follower');
  });

  it('labels a pod with the lease name, or a prefix and a hash when it is longer than a label value may be', async () => {
    assert.equal(leaseLabelValue('billing'), 'billing');
    const long = `${'a'.repeat(60)}.example.com`;
    const value = leaseLabelValue(long);
    assert.equal(value.length, 63);
    assert.match(value, /^a{46}-[0-9a-f]{16}$/);
    assert.notEqual(leaseLabelValue(`${long}x`), value);
    const ns = await podsIn('longname', ['pod']);
    const own = new PodLabeler(client, ns, 'pod', long, log);
    own.set('follower');
    await own.flush(10_000);
    assert.equal(labels(ns, 'pod').lease, value, 'the API server accepts it as a label value');
  });
});
