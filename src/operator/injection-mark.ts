import { createHmac, timingSafeEqual } from 'node:crypto';
import { MAX_MEMBER_SLOTS, MAX_SHARDS } from '../backends/group-store.js';
import { INJECTED_LEASE, INJECTED_MARK, INJECTED_MAX_MEMBERS, INJECTED_POD_LABEL, INJECTED_SHARDS } from './annotations.js';
import type { Pod } from './pod-types.js';

/**
 * What a grant is made of: the pod's namespace and ServiceAccount, its lease and whether it keeps
 * pod labels, and for a member of a shard group the group's counts. Each is fixed once the pod exists (a pod's namespace and serviceAccountName cannot
 * change; the two annotations can, which breaks the mark). The pod's name and uid are not known
 * at admission (generateName; the API server assigns both after the webhooks), so they are not in it.
 */
export interface MarkFields {
  namespace: string;
  serviceAccount: string;
  lease: string;
  podLabel: boolean;
  /** A member of the shard group named by `lease` (leasehold.io/shards): its counts, which size the grant. Absent for a lease's candidate. */
  group?: GroupCounts;
}

/** A shard group's shard count and member slots, as the injected sidecar's --shards and --max-members. */
export interface GroupCounts {
  shards: number;
  maxMembers: number;
}

const VERSION = 'v1';

/** The ServiceAccount a pod runs as; the API server's ServiceAccount admission sets "default" before any webhook. */
export const serviceAccountOf = (pod: Pod): string => pod.spec?.serviceAccountName || 'default';

/**
 * The mark the webhook writes into `leasehold.io/injected-mark`: an HMAC-SHA256, under a key only
 * the operator holds (its own Secret, src/operator/mark-key.ts), of the fields of a grant. A pod
 * creator can copy the injector's annotations and container but not compute this for fields the
 * webhook did not sign, so the reconciler grants only what the webhook injected.
 */
export function injectionMark(key: Buffer, f: MarkFields): string {
  // A lease's fields are signed as before shard groups existed, so the marks of pods injected
  // then stay valid; a group's counts are a sixth element, so neither kind of mark passes for the other.
  const fields: unknown[] = ['leasehold.io/injected', f.namespace, f.serviceAccount, f.lease, f.podLabel];
  if (f.group) fields.push({ shards: f.group.shards, maxMembers: f.group.maxMembers });
  const mac = createHmac('sha256', key).update(JSON.stringify(fields)).digest('base64url');
  return `${VERSION}.${mac}`;
}

/** A count annotation as the injector writes it (a decimal from 1 to `max`, no leading zero), or null. */
function countOf(text: string | undefined, max: number): number | null {
  return text !== undefined && /^[1-9][0-9]{0,4}$/.test(text) && Number(text) <= max ? Number(text) : null;
}

/** The fields a pod's injector annotations claim, or null when they are absent or malformed. */
export function claimedFields(pod: Pod): MarkFields | null {
  const a = pod.metadata?.annotations ?? {};
  const namespace = pod.metadata?.namespace;
  const lease = a[INJECTED_LEASE];
  const podLabel = a[INJECTED_POD_LABEL];
  if (!namespace || !lease || (podLabel !== 'true' && podLabel !== 'false')) return null;
  const fields: MarkFields = { namespace, serviceAccount: serviceAccountOf(pod), lease, podLabel: podLabel === 'true' };
  if (a[INJECTED_SHARDS] === undefined && a[INJECTED_MAX_MEMBERS] === undefined) return fields;
  const shards = countOf(a[INJECTED_SHARDS], MAX_SHARDS);
  const maxMembers = countOf(a[INJECTED_MAX_MEMBERS], MAX_MEMBER_SLOTS);
  if (shards === null || maxMembers === null) return null;
  return { ...fields, group: { shards, maxMembers } };
}

/** The key (of `keys`) whose mark the pod carries for the fields its annotations claim, or undefined. */
export function markKeyOf<K extends { key: Buffer }>(pod: Pod, keys: readonly K[]): K | undefined {
  const fields = claimedFields(pod);
  const mark = pod.metadata?.annotations?.[INJECTED_MARK];
  if (!fields || typeof mark !== 'string') return undefined;
  const got = Buffer.from(mark);
  return keys.find((k) => {
    const want = Buffer.from(injectionMark(k.key, fields));
    return got.length === want.length && timingSafeEqual(got, want);
  });
}

/** True when the pod's mark is the one one of these keys gives for the fields its annotations claim. */
export function hasValidMark(pod: Pod, keys: readonly Buffer[]): boolean {
  return (
    markKeyOf(
      pod,
      keys.map((key) => ({ key })),
    ) !== undefined
  );
}

/**
 * The keys the webhook signs and checks marks with, as src/operator/mark-key.ts keeps them (they
 * change while it serves: a rotation, a Secret made again).
 */
export interface MarkKeys {
  /** The key new marks are signed with. */
  signing(): Buffer;
  /** Every key a mark may have been signed with: the signing one and those retired by a rotation. */
  verifying(): Buffer[];
}

/** One fixed key (tests, and a keyring of one). */
export const fixedMarkKeys = (key: Buffer): MarkKeys => ({ signing: () => key, verifying: () => [key] });
