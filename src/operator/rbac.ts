import { createHash } from 'node:crypto';
import { leaseNameOf } from '../backends/kubernetes/group-names.js';
import type { GroupCounts } from './injection-mark.js';

/** The label on every object a leasehold operator makes (Roles, RoleBindings, Leases, its Secrets). */
export const MANAGED_BY = { key: 'app.kubernetes.io/managed-by', value: 'leasehold-operator' } as const;
/**
 * The label naming which install made an object: a cluster may run several operators (each its
 * own release, namespace and pod label value), and each lists, corrects and deletes only the
 * Roles and RoleBindings that carry its own value (issue 36: two installs deleted each other's).
 */
export const INSTALLATION_LABEL = 'leasehold.io/installation';

/**
 * An install's name: its namespace and the Lease its replicas elect their reconciler on, which
 * together are one install (replicas sharing both share one reconciler). `<namespace>.<lease>`
 * (a namespace has no dot, so it reads back unambiguously) when that fits a label value's 63
 * characters; else its first 42 characters and 20 hex digits of its SHA-256.
 */
export function installationOf(namespace: string, lease: string): string {
  const name = `${namespace}.${lease}`;
  if (name.length <= 63) return name;
  return `${name.slice(0, 42)}-${createHash('sha256').update(name).digest('hex').slice(0, 20)}`;
}

/** The labels of an object the install `installation` makes. */
export const ownLabels = (installation: string): Record<string, string> => ({ [MANAGED_BY.key]: MANAGED_BY.value, [INSTALLATION_LABEL]: installation });

/** True when `labels` are the install's own (a Role or RoleBinding it made, or may correct). */
export const isOwn = (labels: Record<string, string> | undefined, installation: string): boolean =>
  labels?.[MANAGED_BY.key] === MANAGED_BY.value && labels[INSTALLATION_LABEL] === installation;
export const SA_ANNOTATION = 'leasehold.io/service-account';
export const LEASE_ANNOTATION = 'leasehold.io/lease';

/**
 * One injected pod's need: its ServiceAccount may use its Lease (and label pods, in podLabel
 * mode); or, for a member of a shard group, the group's Leases.
 */
export interface Grant {
  namespace: string;
  serviceAccount: string;
  lease: string;
  podLabel: boolean;
  /** A shard group named `lease`: the largest counts its pods claim. */
  group?: GroupCounts;
}

/** The counts that cover both: a grant for several pods of one (ServiceAccount, group) names what each of them needs. */
export function widerGroup(a: GroupCounts | undefined, b: GroupCounts | undefined): GroupCounts | undefined {
  if (!a || !b) return a ?? b;
  return { shards: Math.max(a.shards, b.shards), maxMembers: Math.max(a.maxMembers, b.maxMembers) };
}

/** The Lease names of shard group `group`: its header, its member slots, its shards (src/backends/kubernetes/group-names.ts). */
export function groupLeaseNames(group: string, c: GroupCounts): string[] {
  return [
    group,
    ...Array.from({ length: c.maxMembers }, (_, index) => leaseNameOf(group, { kind: 'member', index })),
    ...Array.from({ length: c.shards }, (_, index) => leaseNameOf(group, { kind: 'shard', index })),
  ];
}

/**
 * The Role and RoleBinding name for a (ServiceAccount, lease) pair of one install. Both names can
 * be 253 characters long, so they are hashed; the annotations keep the names readable. The
 * install is in it so that two installs granting the same pair each keep their own.
 */
export function grantName(installation: string, serviceAccount: string, lease: string): string {
  return `leasehold-${createHash('sha256').update(`${installation}\0${serviceAccount}\0${lease}`).digest('hex').slice(0, 20)}`;
}

/**
 * The rules of the chart's Role (deploy/helm/leasehold/templates/rbac.yaml) but one: the one
 * Lease by name; pods get/list/patch only in podLabel mode (a new leader relabels a former
 * leader, which RBAC cannot name in advance). Not the chart's `create` on every Lease (RBAC
 * cannot name an object that does not exist yet): the operator makes the Lease itself before it
 * grants it (src/operator/lease-guard.ts), so injected pods cannot create Leases of other names.
 *
 * For a shard group, the chart's Role in shard mode, `create` included: get and update on the
 * group's Leases by name, list and watch on the namespace's leases (a member reads its group by a
 * label selector, which RBAC cannot scope by name), and create, because the members make the
 * group's records themselves (the header holds the shard count, each record its labels, and a
 * shard record is created only by its assigned member, past the highest token it saw): the
 * operator cannot make them before the members do.
 */
export function roleRules(g: Pick<Grant, 'lease' | 'podLabel' | 'group'>): unknown[] {
  const leases = { apiGroups: ['coordination.k8s.io'], resources: ['leases'] };
  const pods = g.podLabel ? [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'patch'] }] : [];
  if (g.group) {
    return [
      { ...leases, resourceNames: groupLeaseNames(g.lease, g.group), verbs: ['get', 'update'] },
      { ...leases, verbs: ['list', 'watch'] },
      { ...leases, verbs: ['create'] },
      ...pods,
    ];
  }
  return [{ ...leases, resourceNames: [g.lease], verbs: ['get', 'update', 'list', 'watch'] }, ...pods];
}

/** On a Role and RoleBinding of a shard group's grant: `<shards>/<member slots>`, for people reading them. */
export const SHARDS_ANNOTATION = 'leasehold.io/shards';

function annotationsOf(g: Grant): Record<string, string> {
  return {
    [SA_ANNOTATION]: g.serviceAccount,
    [LEASE_ANNOTATION]: g.lease,
    ...(g.group ? { [SHARDS_ANNOTATION]: `${g.group.shards}/${g.group.maxMembers}` } : {}),
  };
}

/** A grant's Role and RoleBinding are named, labelled and annotated alike: the reconciler finds both by it. */
function grantMetadata(g: Grant, name: string, installation: string) {
  return { name, namespace: g.namespace, labels: ownLabels(installation), annotations: annotationsOf(g) };
}

export function roleFor(g: Grant, installation: string) {
  const name = grantName(installation, g.serviceAccount, g.lease);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: grantMetadata(g, name, installation),
    rules: roleRules(g),
  };
}

export function roleBindingFor(g: Grant, installation: string) {
  const name = grantName(installation, g.serviceAccount, g.lease);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: grantMetadata(g, name, installation),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name: g.serviceAccount, namespace: g.namespace }],
  };
}
