import { createHash } from 'node:crypto';
import { InvalidConfigError } from '../errors.js';
import { ANNOTATION } from './annotations.js';
import { LEASE_ANNOTATION, ownLabels } from './rbac.js';

/**
 * What the operator makes from a pod's leasehold.io/fence-objects annotation (docs/fencing.md,
 * "Kubernetes objects"): a ValidatingAdmissionPolicyBinding of the policy its chart installs,
 * naming the pod's Lease as the parameter, that matches only the pod's namespace, only objects
 * labelled for that Lease, and only the kinds named.
 */

/** One kind a pod asks to fence: a resource of an API group ('' is the core group). */
export interface FencedKind {
  group: string;
  resource: string;
}

/** The label an object carries to be fenced by the Lease it names; the policy's rules read the token beside it. */
export const FENCED_BY_LABEL = 'leasehold.io/fenced-by';
/** On a binding the operator made: the namespace it fences (the Lease's annotation is rbac.ts's LEASE_ANNOTATION). */
export const FENCE_NAMESPACE_ANNOTATION = 'leasehold.io/namespace';
/** Every binding the operator makes is named so, then its namespace, Lease and a hash: a reader sees at once whose it is. */
export const FENCE_BINDING_PREFIX = 'leasehold-fence.';
/** A binding's resourceRules are evaluated on every write the API server admits: a pod names a few kinds, not a catalogue. */
export const MAX_FENCED_KINDS = 16;

/** A resource's plural name, as the API serves it (a CRD's plural is a DNS-1035 label). */
const RESOURCE = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** An API group: a DNS-1123 subdomain. */
const GROUP = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function bad(value: string, rule: string): InvalidConfigError {
  return new InvalidConfigError(`annotation ${ANNOTATION.fenceObjects} ${JSON.stringify(value)} is invalid: ${rule}`);
}

/**
 * The kinds of a leasehold.io/fence-objects value: comma-separated `resource` (the core group,
 * `configmaps`) or `resource.group` (`deployments.apps`, `widgets.example.com`), as kubectl names
 * them. Throws one InvalidConfigError naming the annotation and the rule. No wildcard and no
 * subresource: a binding fences what it names, and `/scale` or `/status` writes carry no object
 * of the kind the rules read the token from.
 */
export function parseFencedKinds(text: string): FencedKind[] {
  const items = text.split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) throw bad(text, 'must be a comma-separated list of resources, such as configmaps,deployments.apps');
  if (items.length > MAX_FENCED_KINDS) throw bad(text, `names ${items.length} kinds; at most ${MAX_FENCED_KINDS}`);
  const kinds: FencedKind[] = [];
  for (const item of items) {
    if (item.includes('*')) throw bad(text, `${JSON.stringify(item)}: no wildcard; name each kind to fence`);
    if (item.includes('/')) throw bad(text, `${JSON.stringify(item)}: a subresource cannot be fenced, only the objects of a kind`);
    const dot = item.indexOf('.');
    const resource = dot < 0 ? item : item.slice(0, dot);
    const group = dot < 0 ? '' : item.slice(dot + 1);
    if (!RESOURCE.test(resource))
      throw bad(text, `${JSON.stringify(item)}: ${JSON.stringify(resource)} is not a resource name (lowercase plural, such as configmaps)`);
    if (group !== '' && !GROUP.test(group)) throw bad(text, `${JSON.stringify(item)}: ${JSON.stringify(group)} is not an API group (such as apps)`);
    if (kinds.some((k) => k.group === group && k.resource === resource)) throw bad(text, `${JSON.stringify(item)} is named twice`);
    kinds.push({ group, resource });
  }
  return kinds;
}

/** The kinds of both, once each, in one order (so that a binding's rules compare equal whatever the pods' order). */
export function unionOfKinds(a: readonly FencedKind[], b: readonly FencedKind[]): FencedKind[] {
  const byName = new Map<string, FencedKind>();
  for (const k of [...a, ...b]) byName.set(`${k.resource}.${k.group}`, k);
  return [...byName.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([, k]) => k);
}

/**
 * The binding's name: the prefix, the namespace and the Lease (for people reading `kubectl get`),
 * and a hash of the install, namespace and Lease, so that two installs fencing one Lease each keep
 * their own and a Lease name with dots reads back to one binding only. At most 16 + 63 + 63 + 12
 * characters: the Lease is a label value here (63 at most) and a namespace a DNS label.
 */
export function fenceBindingName(installation: string, namespace: string, lease: string): string {
  const hash = createHash('sha256').update(`${installation}\0${namespace}\0${lease}`).digest('hex').slice(0, 10);
  return `${FENCE_BINDING_PREFIX}${namespace}.${lease}.${hash}`;
}

export interface FenceBindingSpec {
  installation: string;
  /** The policy the operator's chart installs (--fence-objects-policy). */
  policy: string;
  namespace: string;
  lease: string;
  kinds: readonly FencedKind[];
}

/**
 * The binding for one Lease: the policy evaluated with that Lease (in its namespace) as `params`,
 * for CREATE, UPDATE and DELETE of the named kinds, namespaced ones only, in that namespace only,
 * and only on objects labelled leasehold.io/fenced-by=<lease> (old or new object: dropping the label
 * is checked too). A missing Lease refuses (parameterNotFoundAction Deny): Allow would unfence.
 */
export function fenceBindingFor(s: FenceBindingSpec) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: {
      name: fenceBindingName(s.installation, s.namespace, s.lease),
      labels: ownLabels(s.installation),
      annotations: { [FENCE_NAMESPACE_ANNOTATION]: s.namespace, [LEASE_ANNOTATION]: s.lease },
    },
    spec: {
      policyName: s.policy,
      validationActions: ['Deny'],
      paramRef: { name: s.lease, namespace: s.namespace, parameterNotFoundAction: 'Deny' },
      matchResources: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': s.namespace } },
        objectSelector: { matchLabels: { [FENCED_BY_LABEL]: s.lease } },
        // Namespaced only: a namespaceSelector does not keep a cluster-scoped object out.
        resourceRules: unionOfKinds(s.kinds, []).map((k) => ({
          apiGroups: [k.group],
          apiVersions: ['*'],
          resources: [k.resource],
          operations: ['CREATE', 'UPDATE', 'DELETE'],
          scope: 'Namespaced',
        })),
      },
    },
  };
}

export type FenceBinding = ReturnType<typeof fenceBindingFor>;

/** What of a binding decides what it fences: the API server adds defaults (matchPolicy), so a whole-object compare would rewrite it every pass. */
export function fenceOf(b: { spec?: Partial<FenceBinding['spec']> }): string {
  const s = b.spec ?? {};
  const m = s.matchResources;
  return JSON.stringify([s.policyName, s.validationActions, s.paramRef, m?.namespaceSelector, m?.objectSelector, m?.resourceRules]);
}
