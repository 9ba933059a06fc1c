import { describeError } from '../errors.js';
import { httpStatus } from '../kube/api-errors.js';
import type { KubeClient } from '../kube/api-client.js';
import type { Logger } from '../log.js';
import { ALLOWED_LEASES } from './annotations.js';
import type { NamespaceRule } from './namespace-rule.js';
import { GROUP_LABEL, RECORD_LABEL, recordOfName } from '../backends/kubernetes/group-names.js';
import { MANAGED_BY, groupLeaseNames, ownLabels, widerGroup, type Grant } from './rbac.js';

/** Whether a Lease may be granted to the injected pods that name it, and if not, why. */
export interface LeaseVerdict {
  granted: boolean;
  reason?: string;
}

interface Lease {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
}

const LEASES = '/apis/coordination.k8s.io/v1';
const ours = (l: Lease | undefined) => l?.metadata?.labels?.[MANAGED_BY.key] === MANAGED_BY.value;

/**
 * A lease annotation is the pod creator's word, and may name a Lease another controller holds.
 * So each (namespace, lease) of the marked pods is granted only when its Lease carries
 * leasehold's label (the operator made it), or is absent (the operator makes it now, labelled,
 * holder empty: the sidecars acquire it at once), or its namespace's owner names it in the
 * annotation leasehold.io/allowed-leases. Keyed `<namespace>/<lease>`. A Lease another install of
 * the operator made is leasehold's too: the operator never writes or deletes a Lease once made,
 * and pods of one namespace could join any of its leasehold Leases through either install.
 * One it makes carries `installation`'s label, so each can be traced to the install that made it.
 * A shard group's names are judged by groupVerdictOf.
 */
export async function leaseVerdicts(
  client: KubeClient,
  log: Logger,
  grants: Grant[],
  rule: NamespaceRule,
  installation: string,
): Promise<Map<string, LeaseVerdict>> {
  const out = new Map<string, LeaseVerdict>();
  // One verdict per (namespace, lease): a group's when any pod claims one (its widest counts),
  // since a group's header may not be made by the operator.
  const pairs = new Map<string, Grant>();
  for (const g of grants) {
    const key = `${g.namespace}/${g.lease}`;
    const prev = pairs.get(key);
    const group = widerGroup(prev?.group, g.group);
    pairs.set(key, group ? { ...g, group } : g);
  }
  if (pairs.size === 0) return out;
  const leases = [...pairs.values()].filter((g) => !g.group);
  const known = new Set<string>();
  if (leases.length > 0) {
    const selector = encodeURIComponent(`${MANAGED_BY.key}=${MANAGED_BY.value}`);
    const labelled = (await client.request<{ items: Lease[] }>('GET', `${LEASES}/leases?labelSelector=${selector}`)).items;
    for (const l of labelled) known.add(`${l.metadata?.namespace}/${l.metadata?.name}`);
  }
  const inNamespace = new Map<string, Promise<Lease[]>>();
  for (const [key, g] of pairs) {
    if (g.group) {
      let listed = inNamespace.get(g.namespace);
      if (!listed) {
        listed = client.request<{ items: Lease[] }>('GET', `${LEASES}/namespaces/${encodeURIComponent(g.namespace)}/leases`).then((r) => r.items);
        inNamespace.set(g.namespace, listed);
      }
      out.set(key, await groupVerdictOf(await listed, g, rule));
    } else out.set(key, known.has(key) ? { granted: true } : await verdictOf(client, log, g, rule, installation));
  }
  return out;
}

/**
 * A shard group's Leases (G, its member slots, its shards) are made by its members, labelled as
 * the group's records, so the operator makes none. Each of those names that exists must be one:
 * a record of this group (both labels saying so), a Lease the operator made, or one the
 * namespace's owner allows by name; else another controller may hold it, and granting its name
 * would let the pod creator write it. An absent name is granted: only a member of this group
 * makes it, labelled.
 */
async function groupVerdictOf(leases: Lease[], g: Grant, rule: NamespaceRule): Promise<LeaseVerdict> {
  const names = new Set(groupLeaseNames(g.lease, g.group!));
  let allowed: string[] | undefined;
  for (const l of leases) {
    const name = l.metadata?.name ?? '';
    if (!names.has(name)) continue;
    const labels = l.metadata?.labels ?? {};
    const record = recordOfName(g.lease, name);
    if (labels[GROUP_LABEL] === g.lease && labels[RECORD_LABEL] === record?.kind) continue;
    if (ours(l)) continue;
    allowed ??= await rule.allowedLeases(g.namespace);
    if (allowed.includes(name)) continue;
    return {
      granted: false,
      reason: `Lease ${g.namespace}/${name}, a name of shard group ${g.lease}, exists and is neither a record of that group (labels ${GROUP_LABEL}=${g.lease}, ${RECORD_LABEL}=${record?.kind}) nor made by leasehold-operator, so another controller may hold it; the namespace's owner can allow it with the namespace annotation ${ALLOWED_LEASES}, or name the group otherwise`,
    };
  }
  return { granted: true };
}

async function verdictOf(client: KubeClient, log: Logger, g: Grant, rule: NamespaceRule, installation: string): Promise<LeaseVerdict> {
  const base = `${LEASES}/namespaces/${encodeURIComponent(g.namespace)}/leases`;
  for (let attempt = 0; attempt < 2; attempt++) {
    let lease: Lease | undefined;
    try {
      lease = await client.request<Lease>('GET', `${base}/${encodeURIComponent(g.lease)}`);
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
    }
    if (lease) {
      if (ours(lease) || (await rule.allowedLeases(g.namespace)).includes(g.lease)) return { granted: true };
      return {
        granted: false,
        reason: `Lease ${g.namespace}/${g.lease} exists and was not made by leasehold-operator (no label ${MANAGED_BY.key}=${MANAGED_BY.value}), so another controller may hold it; the namespace's owner can allow it with the namespace annotation ${ALLOWED_LEASES}`,
      };
    }
    try {
      await client.request('POST', base, {
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: g.lease, namespace: g.namespace, labels: ownLabels(installation) },
          spec: {},
        },
      });
      log.info('lease created for injected pods', { namespace: g.namespace, lease: g.lease });
      return { granted: true };
    } catch (err) {
      // Made by someone else meanwhile: judge theirs.
      if (httpStatus(err) === 409) continue;
      return { granted: false, reason: `Lease ${g.namespace}/${g.lease} is absent and could not be created: ${describeError(err)}` };
    }
  }
  return { granted: false, reason: `Lease ${g.namespace}/${g.lease} kept changing while it was checked` };
}
