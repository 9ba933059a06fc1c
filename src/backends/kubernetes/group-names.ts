/**
 * How a shard group's records are named and labelled as Leases (docs/kubernetes.md, "Shard
 * groups"): the header `G`, member slots `G-member-NNNN`, shards `G-shard-NNNN` (the index
 * zero-padded to 4 digits), each labelled `leasehold.io/group: G` and
 * `leasehold.io/group-record: group|member|shard`, so `kubectl get leases -l
 * leasehold.io/group=G` shows a group and one LIST reads it.
 */
import { InvalidConfigError } from '../../errors.js';
import { checkGroupName } from '../group-record-check.js';
import type { GroupRecord } from '../group-store.js';

export const GROUP_LABEL = 'leasehold.io/group';
export const RECORD_LABEL = 'leasehold.io/group-record';

/** A label value is at most 63 characters: a group name is one. */
export const MAX_KUBERNETES_GROUP_NAME = 63;
export const KUBERNETES_GROUP_NAME_RULE = `on Kubernetes a group name is a label value (leasehold.io/group): at most ${MAX_KUBERNETES_GROUP_NAME} characters, and it must not end in -member-NNNN or -shard-NNNN (the names of another group's records)`;

const SUFFIX = /-(member|shard)-(\d{4})$/;

/** InvalidConfigError (field `group`) unless `group` is a group name every store and a label value accept. */
export function checkKubernetesGroupName(group: string): void {
  checkGroupName(group);
  if (group.length > MAX_KUBERNETES_GROUP_NAME || SUFFIX.test(group)) {
    throw new InvalidConfigError(`group name ${JSON.stringify(group)} is invalid: ${KUBERNETES_GROUP_NAME_RULE}`, {
      field: 'group',
      rule: KUBERNETES_GROUP_NAME_RULE,
    });
  }
}

/** The Lease name of a record of `group`. */
export function leaseNameOf(group: string, key: Pick<GroupRecord, 'kind' | 'index'>): string {
  return key.kind === 'group' ? group : `${group}-${key.kind}-${String(key.index).padStart(4, '0')}`;
}

/** The record a Lease named `name` is in `group`, or null when the name is none of its records'. */
export function recordOfName(group: string, name: string): Pick<GroupRecord, 'kind' | 'index'> | null {
  if (name === group) return { kind: 'group', index: 0 };
  if (!name.startsWith(`${group}-`)) return null;
  const m = SUFFIX.exec(name);
  if (!m || name.length !== group.length + m[0].length) return null;
  return { kind: m[1] as 'member' | 'shard', index: Number(m[2]) };
}

/** The labels every Lease of a record carries. */
export function labelsOf(group: string, key: Pick<GroupRecord, 'kind'>): Record<string, string> {
  return { [GROUP_LABEL]: group, [RECORD_LABEL]: key.kind };
}
