import { realClock, type Clock, type Timer } from '../clock.js';
import { httpStatus } from '../kube/api-errors.js';
import type { KubeClient, WatchHandle } from '../kube/api-client.js';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { INJECT_LABEL } from './annotations.js';
import { claimedFields, type MarkFields } from './injection-mark.js';
import type { SidecarDefaults } from './injection-settings.js';
import { FenceBindings, fenceAsksOf } from './fence-bindings.js';
import { leaseVerdicts, type LeaseVerdict } from './lease-guard.js';
import type { MarkVerifier } from './mark-key.js';
import { alreadyInjected } from './mutate.js';
import { namespaceRule, type NamespaceRule } from './namespace-rule.js';
import type { OperatorMetrics } from './operator-metrics.js';
import type { Pod } from './pod-types.js';
import { policyClaim } from './policy-grant.js';
import { INSTALLATION_LABEL, MANAGED_BY, grantName, isOwn, roleBindingFor, roleFor, roleRules, widerGroup, type Grant } from './rbac.js';

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

interface CommonOptions {
  client: KubeClient;
  log: Logger;
  metrics: OperatorMetrics;
  /** Namespaces the webhook never sees (kube-system, the operator's own): neither granted nor reported. */
  excludedNamespaces: string[];
  /** webhook.namespaceOptIn: only namespaces labelled leasehold.io/injection=enabled are granted or reported, as the webhook sees only those. */
  namespaceOptIn: boolean;
  /** This install's name (rbac.ts installationOf): on every Role and RoleBinding it makes, and in the selectors it lists them by. */
  installation: string;
  /** The value of the pod label leasehold.io/inject its webhook selects: the pods it lists, grants and reports. */
  injectValue: string;
  /**
   * The ValidatingAdmissionPolicy the bindings of leasehold.io/fence-objects name
   * (--fence-objects-policy); undefined: none are made, and the pods asking are reported.
   */
  fencePolicy?: string;
  /** Times the gap between passes and the resync; tests pass a FakeClock. */
  clock?: Clock;
}

/**
 * How a pod with a sidecar shows that this install injected it. Webhook mode: `marks`, the keys
 * the webhook signs injection marks with (only a pod with a valid mark is granted; after each
 * pass, retired keys no pod needs go). Policy mode: `policy`, the container defaults the policy
 * injects with (only a pod whose sidecar is the one the policy gives for its annotations is
 * granted: policy-grant.ts).
 */
export type ReconcilerOptions = CommonOptions & ({ marks: MarkVerifier; policy?: undefined } | { policy: SidecarDefaults; marks?: undefined });

/** What one pod with a sidecar earns: a grant (with the mark's key), a grant kept as it is (its mark's key lost), or nothing, and why. */
export type PodJudgement = { granted: MarkFields; keyId?: string } | { kept: MarkFields; reason: string } | { refused: string };

/** Webhook mode's judge: the injection mark (mark-keyring.ts checkMark) over the fields the pod's injected annotations claim. */
export function judgeByMark(marks: Pick<MarkVerifier, 'check'>): (pod: Pod) => PodJudgement {
  return (pod) => {
    const fields = claimedFields(pod);
    const mark = marks.check(pod);
    if (!fields || (!mark.valid && !mark.lostKey))
      return { refused: mark.valid ? 'it carries no valid injection mark: it was not injected by this operator' : mark.reason };
    if (!mark.valid) return { kept: fields, reason: mark.reason };
    return { granted: fields, keyId: mark.keyId };
  };
}

/** Policy mode's judge: the pod's sidecar container against what the policy injects for its annotations (policy-grant.ts). */
export function judgeByPolicy(sidecar: SidecarDefaults): (pod: Pod) => PodJudgement {
  return (pod) => {
    const claim = policyClaim(pod, sidecar);
    return 'fields' in claim ? { granted: claim.fields } : { refused: claim.reason };
  };
}

const RBAC = '/apis/rbac.authorization.k8s.io/v1';

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

/** The pods whose mark's key is lost, by the grant their ServiceAccount may keep. */
export interface KeptPair {
  grant: Grant;
  pods: PodItem[];
  reason: string;
}

/**
 * The grants the injected pods need, by Role name and namespace; the pods that look injected
 * (a container by the sidecar's name, the injector's annotations) but that `judge` refuses (no
 * valid mark; in policy mode, a sidecar the policy did not make): a pod creator wrote those, not
 * the injector, and they earn nothing; the pods older than every key the operator holds, whose
 * mark it cannot check (`kept`: their ServiceAccount keeps what it already holds, never more);
 * the retired keys the granted pods still need; and what each judged pod claims, for reports.
 * Pods in namespaces the injector does not see are none of these.
 */
export function grantsOf(
  pods: PodItem[],
  inScope: (ns: string) => boolean,
  judge: (pod: Pod) => PodJudgement,
  installation: string,
): { grants: Map<string, Grant>; kept: Map<string, KeptPair>; refused: Refusal[]; needed: Set<string>; claims: Map<PodItem, MarkFields> } {
  const grants = new Map<string, Grant>();
  const kept = new Map<string, KeptPair>();
  const refused: Refusal[] = [];
  const needed = new Set<string>();
  const claims = new Map<PodItem, MarkFields>();
  for (const pod of pods) {
    const ns = pod.metadata?.namespace;
    if (!ns || !inScope(ns) || !live(pod)) continue;
    // Without the sidecar it is an uninjected pod, reported as such (report()), whatever its annotations.
    if (!alreadyInjected(pod)) continue;
    const judged = judge(pod);
    if ('refused' in judged) {
      refused.push({ pod, reason: judged.refused });
      continue;
    }
    const fields = 'kept' in judged ? judged.kept : judged.granted;
    claims.set(pod, fields);
    const key = `${ns}/${grantName(installation, fields.serviceAccount, fields.lease)}`;
    const grant: Grant = { namespace: ns, serviceAccount: fields.serviceAccount, lease: fields.lease, podLabel: fields.podLabel };
    if (fields.group) grant.group = fields.group;
    if ('kept' in judged) {
      const k = kept.get(key) ?? { grant, pods: [], reason: judged.reason };
      merge(k.grant, fields);
      k.pods.push(pod);
      kept.set(key, k);
      continue;
    }
    if (judged.keyId !== undefined) needed.add(judged.keyId);
    const prev = grants.get(key);
    if (prev) merge(grant, prev);
    grants.set(key, grant);
  }
  return { grants, kept, refused, needed, claims };
}

/** Widens `g` to cover what `other` needs too (pod labels, a group's counts): several pods of one pair share one grant. */
function merge(g: Grant, other: Pick<Grant, 'podLabel' | 'group'>): void {
  g.podLabel ||= other.podLabel;
  const group = widerGroup(g.group, other.group);
  if (group) g.group = group;
}

/**
 * `w` widened to what kept pods of its pair claim, when the Role already holds exactly that: the
 * rules were granted before, and stay while such a pod lives; else `w` as it is (a kept claim
 * never adds what the Role did not have).
 */
function withKeptClaims(w: Grant, k: Grant, role: Managed | undefined): Grant {
  const wider: Grant = { ...w };
  merge(wider, k);
  return role !== undefined && JSON.stringify(role.rules) === JSON.stringify(roleRules(wider)) ? wider : w;
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
  /** The reason each refused (or kept) pod was last reported with, by uid: a pod is reported again only for a new reason. */
  private readonly refusedReported = new Map<string, string>();
  /** Whether this term's passes have removed the grants of operators older than install labels (once per term). */
  private legacyRemoved = false;
  private readonly clock: Clock;
  private readonly fences: FenceBindings;

  constructor(private readonly o: ReconcilerOptions) {
    this.clock = o.clock ?? realClock;
    this.fences = new FenceBindings({
      client: o.client,
      log: o.log,
      installation: o.installation,
      policy: o.fencePolicy,
      event: (pod, reason, message) => this.event(pod, reason, message),
    });
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
        { labelSelector: this.podSelector, allowWatchBookmarks: 'false' },
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

  /** The pods this install's webhook is called for: labelled leasehold.io/inject=<its value>. */
  private get podSelector(): string {
    return `${INJECT_LABEL}=${this.o.injectValue}`;
  }

  /** One full pass; exported through trigger() and for tests. */
  async reconcile(): Promise<void> {
    const { client, installation } = this.o;
    // Taken before the list: a retired key goes only when no pod listed after its grace needs it.
    const listedAt = this.clock.now().getTime();
    const pods = (await client.request<{ items: PodItem[] }>('GET', `/api/v1/pods?labelSelector=${encodeURIComponent(this.podSelector)}`)).items;
    const rule = await namespaceRule(client, { excluded: this.o.excludedNamespaces, optIn: this.o.namespaceOptIn });
    const judge = this.o.policy ? judgeByPolicy(this.o.policy) : judgeByMark(this.o.marks);
    const { grants: marked, kept, refused, needed, claims } = grantsOf(pods, (ns) => rule.inScope(ns), judge, installation);
    const podsOf = (g: Grant) => podsClaiming(pods, g, claims);
    // A Lease that exists without leasehold's label is another's: granted only where the
    // namespace's owner allows it by name. An absent one is made now, labelled, so the pods never
    // need the right to create Leases.
    const verdicts = await leaseVerdicts(client, this.o.log, [...marked.values(), ...[...kept.values()].map((k) => k.grant)], rule, installation);
    const verdictOf = (g: Grant) => verdicts.get(`${g.namespace}/${g.lease}`);
    const wanted = new Map<string, Grant>();
    for (const [key, grant] of marked) {
      const verdict = verdictOf(grant);
      if (verdict?.granted) wanted.set(key, grant);
      else refused.push(...podsOf(grant).map((pod) => ({ pod, reason: reasonOf(grant, verdict) })));
    }
    // This install's own only: another install's grants are its own to keep (issue 36).
    const selector = encodeURIComponent(`${MANAGED_BY.key}=${MANAGED_BY.value},${INSTALLATION_LABEL}=${installation}`);
    const roles = (await client.request<{ items: Managed[] }>('GET', `${RBAC}/roles?labelSelector=${selector}`)).items;
    const bindings = (await client.request<{ items: Managed[] }>('GET', `${RBAC}/rolebindings?labelSelector=${selector}`)).items;
    const byKey = (items: Managed[]) => new Map(items.map((i) => [`${i.metadata.namespace}/${i.metadata.name}`, i]));
    const haveRoles = byKey(roles);
    const haveBindings = byKey(bindings);

    // Pods whose mark's key is lost: what their ServiceAccount holds is kept as it is, never
    // made and never widened; and nothing is kept for a Lease that may not be granted now.
    const keptOnly = new Set<string>();
    const keptPods: Refusal[] = [];
    for (const [key, k] of kept) {
      const verdict = verdictOf(k.grant);
      const role = haveRoles.get(key);
      if (!verdict?.granted || (role === undefined && !haveBindings.has(key))) {
        // Pods of the pair with a valid mark still earn it: theirs is the grant then.
        if (wanted.has(key)) continue;
        const reason = verdict?.granted ? `${k.reason}, and its ServiceAccount holds no grant for it to keep` : reasonOf(k.grant, verdict);
        refused.push(...k.pods.map((pod) => ({ pod, reason })));
        continue;
      }
      keptPods.push(...k.pods.map((pod) => ({ pod, reason: k.reason })));
      const w = wanted.get(key);
      // The Role's pod rules (or a group's wider counts) stay while a kept pod claims them: they were granted before.
      if (w) wanted.set(key, withKeptClaims(w, k.grant, role));
      else keptOnly.add(key);
    }

    for (const [key, grant] of wanted) {
      const role = await this.ensure(
        'roles',
        haveRoles.get(key),
        roleFor(grant, installation),
        (have, want) => JSON.stringify(have.rules) === JSON.stringify(want.rules),
      );
      // Never a binding to a Role leasehold did not write: its rules could be anything.
      const foreign =
        role === 'foreign'
          ? 'Role'
          : (await this.ensure(
                'rolebindings',
                haveBindings.get(key),
                roleBindingFor(grant, installation),
                (have, want) => JSON.stringify([have.roleRef, have.subjects]) === JSON.stringify([want.roleRef, want.subjects]),
              )) === 'foreign'
            ? 'RoleBinding'
            : null;
      if (foreign) {
        const reason = `a ${foreign} ${grant.namespace}/${grantName(installation, grant.serviceAccount, grant.lease)} exists and was not made by leasehold-operator (install ${installation}): it binds nothing to it and grants nothing until it is removed`;
        refused.push(...podsOf(grant).map((pod) => ({ pod, reason })));
      }
    }
    const keep = (key: string) => wanted.has(key) || keptOnly.has(key);
    // The binding first: a Role without its binding grants nothing.
    for (const [key, b] of haveBindings) if (!keep(key)) await this.remove('rolebindings', b);
    for (const [key, r] of haveRoles) if (!keep(key)) await this.remove('roles', r);
    // A kept pod's Lease keeps its binding as it is, as its Role. A failure here (the right to
    // bindings missing, the API server refusing one) leaves the rest of the pass to run: the
    // grants, the reports and the marks' keys do not wait on the fence, which the next pass retries.
    const granted = (key: string) => wanted.has(key) || keptOnly.has(key);
    try {
      await this.fences.pass(fenceAsksOf(pods, (ns) => rule.inScope(ns), judge, installation, granted));
    } catch (err) {
      this.o.log.warn('fence bindings not kept', { error: describeError(err) });
    }
    if (!this.legacyRemoved) await this.removeLegacy();
    this.o.metrics.managedRoles.set(wanted.size + keptOnly.size);
    await this.reportRefused(refused, keptPods);
    await this.report(pods, rule);
    await this.o.marks?.keepOnly(needed, listedAt);
  }

  /**
   * The grants of operators older than install labels (labelled managed-by only): every grant of
   * this install has its own now, made above, so those only widen what is meant, and go, binding
   * first. Once per term: only an older operator makes them, and while it does it leads, not this one.
   */
  private async removeLegacy(): Promise<void> {
    const selector = encodeURIComponent(`${MANAGED_BY.key}=${MANAGED_BY.value},!${INSTALLATION_LABEL}`);
    for (const kind of ['rolebindings', 'roles'] as const) {
      const items = (await this.o.client.request<{ items: Managed[] }>('GET', `${RBAC}/${kind}?labelSelector=${selector}`)).items;
      for (const item of items) await this.remove(kind, item, 'made by an operator older than install labels');
    }
    this.legacyRemoved = true;
  }

  /**
   * Each refused pod once per reason: a log line and a Warning Event LeaseholdNotGranted; and each
   * pod whose grant is kept though its mark's key is lost, once: a log line and a Warning Event
   * LeaseholdGrantKept.
   */
  private async reportRefused(refused: Refusal[], kept: Refusal[]): Promise<void> {
    const now = new Set([...refused, ...kept].map((r) => r.pod.metadata?.uid ?? ''));
    for (const uid of this.refusedReported.keys()) if (!now.has(uid)) this.refusedReported.delete(uid);
    const said = [
      ...refused.map((r) => ({ ...r, event: 'LeaseholdNotGranted', line: 'pod not granted' })),
      ...kept.map((r) => ({ ...r, event: 'LeaseholdGrantKept', line: 'pod grant kept: its injection mark key is lost' })),
    ];
    for (const { pod, reason, event, line } of said) {
      const uid = pod.metadata?.uid ?? '';
      const key = `${event}: ${reason}`;
      if (this.refusedReported.get(uid) === key) continue;
      const ns = pod.metadata!.namespace!;
      const name = pod.metadata?.name ?? '';
      this.o.log.warn(line, { namespace: ns, pod: name, reason });
      const message =
        event === 'LeaseholdGrantKept'
          ? `leasehold-operator keeps what this pod's ServiceAccount already holds, as it is and never more, while such a pod lives: ${reason}; delete the pod to have it made again with a mark of the current key`
          : `leasehold-operator grants this pod's ServiceAccount nothing: ${reason}`;
      if (await this.event(pod, event, message)) this.refusedReported.set(uid, key);
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
      return isOwn(found.metadata.labels, this.o.installation) ? 'ours' : 'foreign';
    } catch (err) {
      if (httpStatus(err) === 404) return 'ours';
      throw err;
    }
  }

  private async remove(kind: 'roles' | 'rolebindings', item: Managed, why = 'no injected pod uses it') {
    try {
      await this.o.client.request('DELETE', `${RBAC}/namespaces/${item.metadata.namespace}/${kind}/${item.metadata.name}`);
      this.o.log.info(`rbac removed: ${why}`, { kind, namespace: item.metadata.namespace, name: item.metadata.name });
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
    }
  }

  /**
   * Why a labelled pod can run without the sidecar. In policy mode nothing calls the operator at
   * admission, so this report is where the policy's own failures show: a binding missing or not
   * matching, a CEL error under failurePolicy Ignore, a pod created before the policy existed.
   */
  private get whyNotInjected(): string {
    return this.o.policy
      ? 'the MutatingAdmissionPolicy did not inject it (its binding missing or not matching, a CEL error under failurePolicy Ignore, or the pod created before the policy)'
      : 'it was created while the webhook was not called (failurePolicy Ignore)';
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
      const message = `pod is labelled ${this.podSelector} but runs without the leasehold sidecar: ${this.whyNotInjected}; delete it to have it recreated with the sidecar`;
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

/** The live pods of one grant: those the judge gave its fields. */
function podsClaiming(pods: PodItem[], g: Grant, claims: ReadonlyMap<PodItem, MarkFields>): PodItem[] {
  return pods.filter((p) => {
    const f = claims.get(p);
    return live(p) && f?.namespace === g.namespace && f.serviceAccount === g.serviceAccount && f.lease === g.lease;
  });
}

function reasonOf(g: Grant, verdict: LeaseVerdict | undefined): string {
  return verdict?.reason ?? `Lease ${g.namespace}/${g.lease} could not be checked`;
}
