import { httpStatus } from '../kube/api-errors.js';
import type { KubeClient } from '../kube/api-client.js';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { ANNOTATION } from './annotations.js';
import { FENCED_BY_LABEL, FENCE_NAMESPACE_ANNOTATION, fenceBindingFor, fenceOf, parseFencedKinds, unionOfKinds, type FencedKind } from './fence-objects.js';
import type { MarkFields } from './injection-mark.js';
import { alreadyInjected } from './mutate.js';
import type { Pod } from './pod-types.js';
import { INSTALLATION_LABEL, LEASE_ANNOTATION, MANAGED_BY, grantName, isOwn } from './rbac.js';

const BINDINGS = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';
const POLICIES = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies';

type PodItem = Pod & { metadata?: Pod['metadata'] & { uid?: string } };

/**
 * One pod with leasehold.io/fence-objects, as the reconciler's pass found it: `granted` when its
 * mark is valid and its grant made (it may have a binding made or corrected); `kept` when its
 * mark's key is lost but its ServiceAccount keeps its grant (an existing binding stays as it is,
 * never made nor widened, as for its Role); `refused` with the reason for a pod that asks
 * something this install will not do (a shard group's member).
 */
export type FenceAsk = { pod: PodItem; namespace: string; lease: string; standing: 'granted' | 'kept' } | { pod: PodItem; standing: 'refused'; reason: string };

/**
 * The asks of one pass: the live injected pods of the namespaces in scope that carry the annotation,
 * each with its standing. Only what the webhook signed decides: the namespace and Lease come from
 * the pod's mark, and a pod's ask counts only while its grant (`granted`, by grantName key) stands,
 * so a pod creator earns no binding for a Lease it was not granted. `judge` is the reconciler's
 * (the mark in webhook mode, the sidecar the policy makes in policy mode): the same judgement
 * that grants the pod decides its ask.
 */
export function fenceAsksOf(
  pods: (PodItem & { status?: { phase?: string } })[],
  inScope: (ns: string) => boolean,
  judge: (pod: Pod) => { granted: MarkFields } | { kept: MarkFields } | { refused: string },
  installation: string,
  granted: (key: string) => boolean,
): FenceAsk[] {
  const asks: FenceAsk[] = [];
  for (const pod of pods) {
    const ns = pod.metadata?.namespace;
    if (pod.metadata?.annotations?.[ANNOTATION.fenceObjects] === undefined || !ns || !inScope(ns)) continue;
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' || !alreadyInjected(pod)) continue;
    const judged = judge(pod);
    // Not granted: reported as such by the reconciler (LeaseholdNotGranted), nothing more here.
    if ('refused' in judged) continue;
    const fields = 'kept' in judged ? judged.kept : judged.granted;
    if (!granted(`${ns}/${grantName(installation, fields.serviceAccount, fields.lease)}`)) continue;
    if (fields.group) {
      asks.push({
        pod,
        standing: 'refused',
        reason: `it applies to a lease, not to a shard group (${ANNOTATION.shards}): each shard is its own Lease and token`,
      });
      continue;
    }
    // The webhook refuses this at admission; policy mode grants such a pod (its sidecar is right) and refuses the ask here.
    if (fields.lease.length > 63) {
      asks.push({
        pod,
        standing: 'refused',
        reason: `the lease name is ${fields.lease.length} characters long: it is the value of the ${FENCED_BY_LABEL} label, at most 63`,
      });
      continue;
    }
    asks.push({ pod, namespace: ns, lease: fields.lease, standing: 'kept' in judged ? 'kept' : 'granted' });
  }
  return asks;
}

interface Binding {
  metadata: { name: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Parameters<typeof fenceOf>[0]['spec'];
}

export interface FenceBindingsOptions {
  client: KubeClient;
  log: Logger;
  installation: string;
  /** The ValidatingAdmissionPolicy the bindings name (--fence-objects-policy); undefined: this install makes none. */
  policy: string | undefined;
  /** A Warning Event on the pod; false when it could not be recorded (it is tried again next pass). */
  event: (pod: PodItem, reason: string, message: string) => Promise<boolean>;
}

/**
 * The operator's ValidatingAdmissionPolicyBindings, one per Lease whose injected pods ask for it
 * (leasehold.io/fence-objects), each removed by the pass that finds no pod of that Lease asking
 * any more: a cluster-scoped binding cannot be owned by a namespaced pod, so no garbage collector
 * would. Pods whose ask is not met are reported once per reason (a log line and a Warning Event
 * LeaseholdNotFenced): the annotation is never silently ignored.
 */
export class FenceBindings {
  /** The reason each pod was last reported with, by uid. */
  private readonly reported = new Map<string, string>();

  constructor(private readonly o: FenceBindingsOptions) {}

  async pass(asks: FenceAsk[]): Promise<void> {
    const refused: { pod: PodItem; reason: string }[] = [];
    const wanted = new Map<string, { namespace: string; lease: string; kinds: FencedKind[]; pods: PodItem[] }>();
    const kept = new Set<string>();
    for (const ask of asks) {
      if (ask.standing === 'refused') {
        refused.push(ask);
        continue;
      }
      if (this.o.policy === undefined) {
        refused.push({
          pod: ask.pod,
          reason: `this operator makes no admission policy bindings: it runs without --fence-objects-policy (the chart's fencing.objectPolicies.enabled is false)`,
        });
        continue;
      }
      let kinds: FencedKind[];
      try {
        // Checked at admission; a value edited on the pod since is read again here.
        kinds = parseFencedKinds(ask.pod.metadata?.annotations?.[ANNOTATION.fenceObjects] ?? '');
      } catch (err) {
        refused.push({ pod: ask.pod, reason: describeError(err) });
        continue;
      }
      const key = `${ask.namespace}/${ask.lease}`;
      if (ask.standing === 'kept') {
        kept.add(key);
        continue;
      }
      const w = wanted.get(key) ?? { namespace: ask.namespace, lease: ask.lease, kinds: [], pods: [] };
      w.kinds = unionOfKinds(w.kinds, kinds);
      w.pods.push(ask.pod);
      wanted.set(key, w);
    }
    // A binding of a policy that is missing, or that does not take a Lease, checks nothing: the
    // pods are told, and no binding is made or corrected (those there stay: they check nothing either).
    const unusable = wanted.size > 0 && this.o.policy !== undefined ? await this.policyProblem(this.o.policy) : undefined;
    if (unusable !== undefined) {
      for (const [key, w] of wanted) {
        refused.push(...w.pods.map((pod) => ({ pod, reason: unusable })));
        kept.add(key);
      }
      wanted.clear();
    }
    // Off: not even a list, which it holds no right to.
    if (this.o.policy !== undefined) {
      const policy = this.o.policy;
      const selector = encodeURIComponent(`${MANAGED_BY.key}=${MANAGED_BY.value},${INSTALLATION_LABEL}=${this.o.installation}`);
      const have = new Map<string, Binding>();
      for (const b of (await this.o.client.request<{ items: Binding[] }>('GET', `${BINDINGS}?labelSelector=${selector}`)).items) {
        const a = b.metadata.annotations ?? {};
        have.set(`${a[FENCE_NAMESPACE_ANNOTATION]}/${a[LEASE_ANNOTATION]}`, b);
      }
      for (const [key, w] of wanted) {
        const want = fenceBindingFor({ installation: this.o.installation, policy, namespace: w.namespace, lease: w.lease, kinds: w.kinds });
        if ((await this.ensure(have.get(key), want)) === 'foreign') {
          const reason = `a ValidatingAdmissionPolicyBinding ${want.metadata.name} exists and was not made by leasehold-operator (install ${this.o.installation}): it is left as it is`;
          refused.push(...w.pods.map((pod) => ({ pod, reason })));
        }
      }
      for (const [key, b] of have) if (!wanted.has(key) && !kept.has(key)) await this.remove(b);
    }
    await this.report(refused);
  }

  /** Why the policy the bindings name cannot fence (absent, or its parameter not a Lease), or undefined when it can. */
  private async policyProblem(name: string): Promise<string | undefined> {
    let found: { spec?: { paramKind?: { apiVersion?: string; kind?: string } } };
    try {
      found = await this.o.client.request('GET', `${POLICIES}/${name}`);
    } catch (err) {
      if (httpStatus(err) === 404)
        return `the ValidatingAdmissionPolicy ${name} (--fence-objects-policy) does not exist: a binding of it would fence nothing (install the chart with fencing.objectPolicies.enabled)`;
      throw err;
    }
    const p = found.spec?.paramKind;
    if (p?.apiVersion !== 'coordination.k8s.io/v1' || p.kind !== 'Lease') {
      return `the ValidatingAdmissionPolicy ${name} (--fence-objects-policy) does not take a coordination.k8s.io/v1 Lease as its parameter: it is not leasehold's fencing policy`;
    }
    return undefined;
  }

  /** Creates or corrects one binding; 'foreign' when one of its name exists without this install's labels. */
  private async ensure(have: Binding | undefined, want: ReturnType<typeof fenceBindingFor>): Promise<'ours' | 'foreign'> {
    if (have && fenceOf(have) === fenceOf(want)) return 'ours';
    const name = want.metadata.name;
    try {
      if (have)
        await this.o.client.request('PUT', `${BINDINGS}/${name}`, {
          body: { ...want, metadata: { ...want.metadata, resourceVersion: have.metadata.resourceVersion } },
        });
      else await this.o.client.request('POST', BINDINGS, { body: want });
      this.o.log.info(have ? 'fence binding updated' : 'fence binding created', {
        name,
        namespace: want.spec.paramRef.namespace,
        lease: want.spec.paramRef.name,
      });
      return 'ours';
    } catch (err) {
      // A write raced ours: the next pass sees it.
      if (httpStatus(err) === 409 && have) return 'ours';
      if (httpStatus(err) !== 409) throw err;
    }
    try {
      const found = await this.o.client.request<Binding>('GET', `${BINDINGS}/${name}`);
      return isOwn(found.metadata.labels, this.o.installation) ? 'ours' : 'foreign';
    } catch (err) {
      if (httpStatus(err) === 404) return 'ours';
      throw err;
    }
  }

  private async remove(b: Binding): Promise<void> {
    try {
      await this.o.client.request('DELETE', `${BINDINGS}/${b.metadata.name}`);
      this.o.log.info('fence binding removed: no injected pod of its Lease asks for it', { name: b.metadata.name });
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
    }
  }

  private async report(refused: { pod: PodItem; reason: string }[]): Promise<void> {
    const now = new Set(refused.map((r) => r.pod.metadata?.uid ?? ''));
    for (const uid of this.reported.keys()) if (!now.has(uid)) this.reported.delete(uid);
    for (const { pod, reason } of refused) {
      const uid = pod.metadata?.uid ?? '';
      if (this.reported.get(uid) === reason) continue;
      this.o.log.warn('pod objects not fenced', { namespace: pod.metadata?.namespace, pod: pod.metadata?.name, reason });
      const message = `leasehold-operator makes no binding for this pod's ${ANNOTATION.fenceObjects}: ${reason}`;
      if (await this.o.event(pod, 'LeaseholdNotFenced', message)) this.reported.set(uid, reason);
    }
  }
}
