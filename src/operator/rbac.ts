import { createHash } from 'node:crypto';

/** The label on every Role and RoleBinding the operator owns: it lists them by it, and deletes only those. */
export const MANAGED_BY = { key: 'app.kubernetes.io/managed-by', value: 'leasehold-operator' } as const;
export const SA_ANNOTATION = 'leasehold.io/service-account';
export const LEASE_ANNOTATION = 'leasehold.io/lease';

/** One injected pod's need: its ServiceAccount may use its Lease (and label pods, in podLabel mode). */
export interface Grant {
  namespace: string;
  serviceAccount: string;
  lease: string;
  podLabel: boolean;
}

/**
 * The Role and RoleBinding name for a (ServiceAccount, lease) pair. Both names can be 253
 * characters long, so the pair is hashed; the annotations keep the names readable.
 */
export function grantName(serviceAccount: string, lease: string): string {
  return `leasehold-${createHash('sha256').update(`${serviceAccount}\0${lease}`).digest('hex').slice(0, 20)}`;
}

/**
 * The rules of the chart's Role (deploy/helm/leasehold/templates/rbac.yaml) but one: the one
 * Lease by name; pods get/list/patch only in podLabel mode (a new leader relabels a former
 * leader, which RBAC cannot name in advance). Not the chart's `create` on every Lease (RBAC
 * cannot name an object that does not exist yet): the operator makes the Lease itself before it
 * grants it (src/operator/lease-guard.ts), so injected pods cannot create Leases of other names.
 */
export function roleRules(g: Pick<Grant, 'lease' | 'podLabel'>): unknown[] {
  return [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [g.lease], verbs: ['get', 'update', 'list', 'watch'] },
    ...(g.podLabel ? [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'patch'] }] : []),
  ];
}

export function roleFor(g: Grant) {
  const name = grantName(g.serviceAccount, g.lease);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: {
      name,
      namespace: g.namespace,
      labels: { [MANAGED_BY.key]: MANAGED_BY.value },
      annotations: { [SA_ANNOTATION]: g.serviceAccount, [LEASE_ANNOTATION]: g.lease },
    },
    rules: roleRules(g),
  };
}

export function roleBindingFor(g: Grant) {
  const name = grantName(g.serviceAccount, g.lease);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: {
      name,
      namespace: g.namespace,
      labels: { [MANAGED_BY.key]: MANAGED_BY.value },
      annotations: { [SA_ANNOTATION]: g.serviceAccount, [LEASE_ANNOTATION]: g.lease },
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name: g.serviceAccount, namespace: g.namespace }],
  };
}
