import type { Pod } from './pod-types.js';

/**
 * The lease a pod campaigns for when it names none: its owning workload's name, so that every
 * replica of one workload shares one lease. At admission a pod made by a controller has no name
 * yet (generateName), but it has its ownerReferences:
 *   - owned by a ReplicaSet whose name ends in `-<pod-template-hash>` (the pod's label of that
 *     name): the Deployment's name, the ReplicaSet's name without that suffix. Every ReplicaSet
 *     of a Deployment (a rollout makes a new one) then gives the same lease;
 *   - owned by any other controller (StatefulSet, DaemonSet, a bare ReplicaSet, a Job): its name;
 *   - no controller: the pod's own name, else its generateName without the trailing '-'.
 * Null when none of these exist.
 */
export function workloadLeaseName(pod: Pod): string | null {
  const meta = pod.metadata ?? {};
  const owner = (meta.ownerReferences ?? []).find((r) => r.controller === true && typeof r.name === 'string' && r.name !== '');
  if (owner?.name) {
    const hash = meta.labels?.['pod-template-hash'];
    if (owner.kind === 'ReplicaSet' && hash && owner.name.endsWith(`-${hash}`) && owner.name.length > hash.length + 1) {
      return owner.name.slice(0, -(hash.length + 1));
    }
    return owner.name;
  }
  if (meta.name) return meta.name;
  const base = meta.generateName?.replace(/-+$/, '');
  return base ? base : null;
}
