import { realClock, type Clock, type Timer } from '../clock.js';
import { httpStatus } from '../kube/api-errors.js';
import type { KubeClient, WatchHandle } from '../kube/api-client.js';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { INJECT_LABEL } from './annotations.js';
import { claimedFields, hasValidMark } from './injection-mark.js';
import { leaseVerdicts, type LeaseVerdict } from './lease-guard.js';
import { alreadyInjected } from './mutate.js';
import { namespaceRule, type NamespaceRule } from './namespace-rule.js';
import type { OperatorMetrics } from './operator-metrics.js';
import type { Pod } from './pod-types.js';
import { MANAGED_BY, grantName, roleBindingFor, roleFor, type Grant } from './rbac.js';

interface PodItem extends Pod {
  metadata?: Pod['metadata'] & { uid?: string; deletionTimestamp?: string };
  status?: { phase?: string };
}

interface Managed {
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string> };
  rules?: unknown[];
  roleRef?: unknown;
  subjects?: unknown[];
}

export interface ReconcilerOptions {
  client: KubeClient;
  log: Logger;
  metrics: OperatorMetrics;
  /** Namespaces the webhook never sees (kube-system, the operator's own): neither granted nor reported. */
  excludedNamespaces: string[];
  /** webhook.namespaceOptIn: only namespaces labelled leasehold.io/injection=enabled are granted or reported, as the webhook sees only those. */
  namespaceOptIn: boolean;
  /** The key the webhook signs injection marks with: only a pod with a valid mark is granted. */
  markKey: Buffer;
  /** Times the gap between passes and the resync; tests pass a FakeClock. */
  clock?: Clock;
}

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const POD_SELECTOR = `${INJECT_LABEL}=true`;

/**
 * The least time between the end of one pass and the start of the next. A pass lists every
 * labelled pod, Role and RoleBinding in the cluster, on the thread that also answers admission;
 * without a floor, a steady stream of pod events (a rollout, a burst of Jobs: each pod brings
 * several events) runs passes back to back, so the leader spends its time listing while the API
 * server waits for its answers. With it, however many events arrive, the cost is at most one pass
 * per gap. The first event after a quiet gap still runs a pass at once, so a lone new pod's
 * Role comes as soon as before. A second is short beside what may wait on a pass in a burst (a
 * new pair's Role, which always follows its pod's creation; a report due within 30 s), and long
 * beside one pass.
 */
export const PASS_GAP_MS = 1_000;

/** Why a pod that looks injected gets no grant: said once per pod, in a log line and an Event. */
export interface Refusal {
  pod: PodItem;
  reason: string;
}

const live = (pod: PodItem) => pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';

/**
 * The grants the injected pods need, by Role name and namespace, and the pods that look injected
 * (a container by the sidecar's name, the injector's annotations) but carry no valid mark: a pod
 * creator wrote those, not the webhook, and they earn nothing. Pods in namespaces the webhook
 * does not see are neither.
 */
export function grantsOf(pods: PodItem[], inScope: (ns: string) => boolean, markKey: Buffer): { grants: Map<string, Grant>; refused: Refusal[] } {
  const grants = new Map<string, Grant>();
  const refused: Refusal[] = [];
  for (const pod of pods) {
    const ns = pod.metadata?.namespace;
    if (!ns || !inScope(ns) || !live(pod)) continue;
    // Without the sidecar it is an uninjected pod, reported as such (report()), whatever its annotations.
    if (!alreadyInjected(pod)) continue;
    const fields = claimedFields(pod);
    if (!fields || !hasValidMark(pod, markKey)) {
      refused.push({ pod, reason: 'it carries no valid injection mark: it was not injected by this operator' });
      continue;
    }
    const key = `${ns}/${grantName(fields.serviceAccount, fields.lease)}`;
    const prev = grants.get(key);
    grants.set(key, { namespace: ns, serviceAccount: fields.serviceAccount, lease: fields.lease, podLabel: fields.podLabel || (prev?.podLabel ?? false) });
  }
  return { grants, refused };
}

/**
 * The leader's loop: for every (ServiceAccount, lease) pair of the injected pods, a Role limited
 * to that Lease and its RoleBinding; each removed when no pod uses it any more; and every pod
 * labelled for injection that runs without the sidecar reported once (an Event on the pod, a
 * warning log line) and counted in leasehold_operator_uninjected_pods. It runs on a watch of the
 * labelled pods, and every `resyncMs`, until stop().
 *
 * Every pass is a full one, and events only say when to run it: a pass starts at once when the
 * last one ended at least PASS_GAP_MS ago, else when that gap has passed, and the events meanwhile
 * are folded into it. Handling each event by itself (ensure that pod's pair) would save the lists
 * on a quiet cluster, but removing a pair needs to know that no other pod uses it, which only a
 * list (or a cache of every labelled pod, with its own staleness to get right) tells; one pass
 * type, rate-bounded, keeps every guarantee in one place.
 */
export class Reconciler {
  private watch: WatchHandle | undefined;
  private resync: Timer | undefined;
  /** The pass waiting for the gap to pass. */
  private waiting: Timer | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private lastEnd = -Infinity;
  private stopped = false;
  private readonly reported = new Set<string>();
  /** The reason each refused pod was last reported with, by uid: a pod is reported again only for a new reason. */
  private readonly refusedReported = new Map<string, string>();
  private readonly clock: Clock;

  constructor(private readonly o: ReconcilerOptions) {
    this.clock = o.clock ?? realClock;
  }

  start(resyncMs: number): void {
    const every = () => {
      this.resync = this.clock.setTimer(() => {
        this.trigger();
        every();
      }, resyncMs);
    };
    every();
    this.trigger();
    void this.openWatch();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.resync?.cancel();
    this.waiting?.cancel();
    this.watch?.abort();
    await this.running;
  }

  /** Asks for a pass: now if the gap since the last one has passed, else once it has; one pass answers every ask made before it starts. */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.waiting) return;
    const wait = this.lastEnd + PASS_GAP_MS - this.clock.monotonic();
    if (wait > 0) {
      this.waiting = this.clock.setTimer(() => {
        this.waiting = undefined;
        this.run();
      }, wait);
      return;
    }
    this.run();
  }

  private run(): void {
    if (this.stopped) return;
    this.running = this.reconcile()
      .catch((err: unknown) => this.o.log.warn('reconcile failed', { error: describeError(err) }))
      .finally(() => {
        this.running = undefined;
        this.lastEnd = this.clock.monotonic();
        if (this.again) {
          this.again = false;
          this.trigger();
        }
      });
  }

  private async openWatch(): Promise<void> {
    if (this.stopped) return;
    try {
      this.watch = await this.o.client.watch(
        '/api/v1/pods',
        { labelSelector: POD_SELECTOR, allowWatchBookmarks: 'false' },
        () => this.trigger(),
        () => {
          if (!this.stopped) setTimeout(() => void this.openWatch(), 1_000).unref();
        },
      );
      if (this.stopped) this.watch.abort();
    } catch (err) {
      this.o.log.warn('pod watch failed', { error: describeError(err) });
      if (!this.stopped) setTimeout(() => void this.openWatch(), 5_000).unref();
    }
  }

  /** One full pass; exported through trigger() and for tests. */
  async reconcile(): Promise<void> {
    const { client } = this.o;
    const pods = (await client.request<{ items: PodItem[] }>('GET', `/api/v1/pods?labelSelector=${encodeURIComponent(POD_SELECTOR)}`)).items;
    const rule = await namespaceRule(client, { excluded: this.o.excludedNamespaces, optIn: this.o.namespaceOptIn });
    const { grants: marked, refused } = grantsOf(pods, (ns) => rule.inScope(ns), this.o.markKey);
    // A Lease that exists without leasehold's label is another's: granted only where the
    // namespace's owner allows it by name. An absent one is made now, labelled, so the pods never
    // need the right to create Leases.
    const verdicts = await leaseVerdicts(client, this.o.log, [...marked.values()], rule);
    const wanted = new Map<string, Grant>();
    for (const [key, grant] of marked) {
      const verdict = verdicts.get(`${grant.namespace}/${grant.lease}`);
      if (verdict?.granted) wanted.set(key, grant);
      else refused.push(...podsOf(pods, grant).map((pod) => ({ pod, reason: reasonOf(grant, verdict) })));
    }
    const selector = encodeURIComponent(`${MANAGED_BY.key}=${MANAGED_BY.value}`);
    const roles = (await client.request<{ items: Managed[] }>('GET', `${RBAC}/roles?labelSelector=${selector}`)).items;
    const bindings = (await client.request<{ items: Managed[] }>('GET', `${RBAC}/rolebindings?labelSelector=${selector}`)).items;
    const byKey = (items: Managed[]) => new Map(items.map((i) => [`${i.metadata.namespace}/${i.metadata.name}`, i]));
    const haveRoles = byKey(roles);
    const haveBindings = byKey(bindings);

    for (const [key, grant] of wanted) {
      const role = await this.ensure('roles', haveRoles.get(key), roleFor(grant), (have, want) => JSON.stringify(have.rules) === JSON.stringify(want.rules));
      // Never a binding to a Role leasehold did not write: its rules could be anything.
      const foreign =
        role === 'foreign'
          ? 'Role'
          : (await this.ensure(
                'rolebindings',
                haveBindings.get(key),
                roleBindingFor(grant),
                (have, want) => JSON.stringify([have.roleRef, have.subjects]) === JSON.stringify([want.roleRef, want.subjects]),
              )) === 'foreign'
            ? 'RoleBinding'
            : null;
      if (foreign) {
        const reason = `a ${foreign} ${grant.namespace}/${grantName(grant.serviceAccount, grant.lease)} exists and was not made by leasehold-operator: it binds nothing to it and grants nothing until it is removed`;
        refused.push(...podsOf(pods, grant).map((pod) => ({ pod, reason })));
      }
    }
    // The binding first: a Role without its binding grants nothing.
    for (const [key, b] of haveBindings) if (!wanted.has(key)) await this.remove('rolebindings', b);
    for (const [key, r] of haveRoles) if (!wanted.has(key)) await this.remove('roles', r);
    this.o.metrics.managedRoles.set(wanted.size);
    await this.reportRefused(refused);
    await this.report(pods, rule);
  }

  /** Each refused pod once per reason: a log line and a Warning Event LeaseholdNotGranted. */
  private async reportRefused(refused: Refusal[]): Promise<void> {
    const now = new Set(refused.map((r) => r.pod.metadata?.uid ?? ''));
    for (const uid of this.refusedReported.keys()) if (!now.has(uid)) this.refusedReported.delete(uid);
    for (const { pod, reason } of refused) {
      const uid = pod.metadata?.uid ?? '';
      if (this.refusedReported.get(uid) === reason) continue;
      const ns = pod.metadata!.namespace!;
      const name = pod.metadata?.name ?? '';
      this.o.log.warn('pod not granted', { namespace: ns, pod: name, reason });
      if (await this.event(pod, 'LeaseholdNotGranted', `leasehold-operator grants this pod's ServiceAccount nothing: ${reason}`))
        this.refusedReported.set(uid, reason);
    }
  }

  /**
   * Creates or corrects one Role or RoleBinding of leasehold's. 'foreign' when one of that name
   * exists without leasehold's label (someone else's, or a squatter's): it is left as it is.
   */
  private async ensure<T extends Managed>(
    kind: 'roles' | 'rolebindings',
    have: Managed | undefined,
    want: T,
    same: (have: Managed, want: T) => boolean,
  ): Promise<'ours' | 'foreign'> {
    const ns = want.metadata.namespace;
    if (have && same(have, want)) return 'ours';
    const base = `${RBAC}/namespaces/${ns}/${kind}`;
    try {
      if (have)
        await this.o.client.request('PUT', `${base}/${want.metadata.name}`, {
          body: { ...want, metadata: { ...want.metadata, resourceVersion: have.metadata.resourceVersion } },
        });
      else await this.o.client.request('POST', base, { body: want });
      this.o.log.info(have ? 'rbac updated' : 'rbac created', { kind, namespace: ns, name: want.metadata.name });
      return 'ours';
    } catch (err) {
      // The namespace is going away, or a write raced ours: the next pass sees it.
      if (httpStatus(err) === 404 || (httpStatus(err) === 409 && have)) return 'ours';
      if (httpStatus(err) !== 409) throw err;
    }
    // It exists, and it was not in our labelled list: ours only if it carries our label now.
    try {
      const found = await this.o.client.request<Managed>('GET', `${base}/${want.metadata.name}`);
      return found.metadata.labels?.[MANAGED_BY.key] === MANAGED_BY.value ? 'ours' : 'foreign';
    } catch (err) {
      if (httpStatus(err) === 404) return 'ours';
      throw err;
    }
  }

  private async remove(kind: 'roles' | 'rolebindings', item: Managed) {
    try {
      await this.o.client.request('DELETE', `${RBAC}/namespaces/${item.metadata.namespace}/${kind}/${item.metadata.name}`);
      this.o.log.info('rbac removed: no injected pod uses it', { kind, namespace: item.metadata.namespace, name: item.metadata.name });
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
    }
  }

  /** Labelled pods without the sidecar: each reported once, all counted. */
  private async report(pods: PodItem[], rule: NamespaceRule): Promise<void> {
    const bare = pods.filter(
      (p) =>
        p.metadata?.namespace &&
        rule.inScope(p.metadata.namespace) &&
        !alreadyInjected(p) &&
        !p.metadata.deletionTimestamp &&
        p.status?.phase !== 'Succeeded' &&
        p.status?.phase !== 'Failed',
    );
    this.o.metrics.uninjectedPods.set(bare.length);
    const seen = new Set(bare.map((p) => p.metadata?.uid ?? ''));
    for (const uid of this.reported) if (!seen.has(uid)) this.reported.delete(uid);
    for (const pod of bare) {
      const uid = pod.metadata?.uid ?? '';
      if (this.reported.has(uid)) continue;
      const ns = pod.metadata!.namespace!;
      const name = pod.metadata!.name ?? '';
      const message = `pod is labelled ${INJECT_LABEL}=true but runs without the leasehold sidecar: it was created while the webhook was not called (failurePolicy Ignore); delete it to have it recreated with the sidecar`;
      this.o.log.warn('labelled pod not injected', { namespace: ns, pod: name });
      if (await this.event(pod, 'LeaseholdNotInjected', message)) this.reported.add(uid);
    }
  }

  /** A Warning Event on the pod; false (logged) when it could not be recorded, so it is tried again next pass. */
  private async event(pod: PodItem, reason: string, message: string): Promise<boolean> {
    const ns = pod.metadata!.namespace!;
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    try {
      await this.o.client.request('POST', `/api/v1/namespaces/${ns}/events`, {
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { generateName: `${name}.leasehold-`, namespace: ns },
          involvedObject: { apiVersion: 'v1', kind: 'Pod', name, namespace: ns, uid },
          reason,
          message,
          type: 'Warning',
          source: { component: 'leasehold-operator' },
          firstTimestamp: new Date().toISOString(),
          lastTimestamp: new Date().toISOString(),
          count: 1,
        },
      });
      return true;
    } catch (err) {
      this.o.log.warn('could not record the event', { namespace: ns, pod: name, error: describeError(err) });
      return false;
    }
  }
}

/** The live pods of one grant. */
function podsOf(pods: PodItem[], g: Grant): PodItem[] {
  return pods.filter((p) => {
    const f = claimedFields(p);
    return live(p) && f?.namespace === g.namespace && f.serviceAccount === g.serviceAccount && f.lease === g.lease;
  });
}

function reasonOf(g: Grant, verdict: LeaseVerdict | undefined): string {
  return verdict?.reason ?? `Lease ${g.namespace}/${g.lease} could not be checked`;
}
