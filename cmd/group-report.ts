/**
 * One read of a shard group as `leasehold status --lease G` shows it (docs/shards.md): each
 * shard's owner, token and owner's session, and the member slots with their heartbeats. Read
 * with the store opened read-only: nothing is written, no table is created. Whether a member's
 * session is live is judged by this machine's wall clock (its last heartbeat + its lease
 * duration), as `status` judges a lease's expiry: an estimate, where the members judge by what
 * they saw change.
 */
import type { GroupStore, MemberSlot, ShardRecord } from '../src/backends/group-store.js';
import { BackendUnavailableError, isLeaseholdError } from '../src/errors.js';

export interface GroupMemberView {
  slot: number;
  /** '' for a released slot. */
  identity: string;
  session: number;
  /** held: its last heartbeat + lease duration is ahead by this machine's clock; expired; released. */
  status: 'held' | 'expired' | 'released';
  state: 'active' | 'leaving';
  renewedAt: string | null;
  expiresAt: string | null;
}

export interface ShardOwnerView {
  shard: number;
  /** The owner's identity; null when the shard is free or was never taken. */
  owner: string | null;
  token: number;
  /** The owner's session, `SLOT/SESSION`; null when free. */
  session: string | null;
  /** Whether the owner's session is the one its slot holds, held: false for a session that is over. */
  ownerLive: boolean;
  acquiredAt: string | null;
}

export interface GroupReport {
  group: string;
  backend: string;
  location: string;
  /** Always true: a group without a header is no group (readGroupReport returns null). */
  found: true;
  kind: 'shard-group';
  shards: number;
  createdAt: string;
  /** Held slots with a live session and state active: the members taking shards. */
  liveMembers: number;
  members: GroupMemberView[];
  /** Every shard, owned or not (one never taken has token 0). */
  owners: ShardOwnerView[];
  /** The shards with no live owner. */
  orphaned: number;
}

/** Bound on the one read, ms (as the lease's). */
const READ_TIMEOUT_MS = 10_000;

/**
 * The group `group` as its records say, or null when it has no header (no such group). A name
 * this store cannot hold as a group, or a list the credentials may not make (Kubernetes RBAC
 * that grants `get` on one Lease only), is no group either: the caller shows the lease.
 */
export async function readGroupReport(store: GroupStore, group: string, now: Date): Promise<GroupReport | null> {
  const bound = new AbortController();
  const timer = setTimeout(
    () => bound.abort(new BackendUnavailableError(`${store.backend} store ${store.location} did not answer within ${READ_TIMEOUT_MS} ms`)),
    READ_TIMEOUT_MS,
  );
  let list;
  try {
    list = await store.listGroup(group, { signal: bound.signal });
  } catch (err) {
    if (isLeaseholdError(err, 'LEASEHOLD_ERR_INVALID_CONFIG') || isLeaseholdError(err, 'LEASEHOLD_ERR_FORBIDDEN')) return null;
    throw err;
  } finally {
    clearTimeout(timer);
  }
  const header = list.find((v) => v.record.kind === 'group')?.record;
  if (header?.kind !== 'group') return null;
  const slots = new Map<number, MemberSlot>();
  const shards = new Map<number, ShardRecord>();
  for (const { record: r } of list) {
    if (r.kind === 'member') slots.set(r.index, r);
    else if (r.kind === 'shard' && r.index < header.shards) shards.set(r.index, r);
  }
  const members = [...slots.values()]
    .sort((a, b) => a.index - b.index)
    .map((r): GroupMemberView => {
      // Any peer can store any number: an expiry past what a Date holds is unknown.
      const expiresMs = r.renewTime ? r.renewTime.getTime() + r.leaseDurationSeconds * 1000 : NaN;
      const expires = Number.isNaN(new Date(expiresMs).getTime()) ? null : new Date(expiresMs);
      const status = r.holderIdentity === '' ? 'released' : expires && expires.getTime() > now.getTime() ? 'held' : 'expired';
      return {
        slot: r.index,
        identity: r.holderIdentity,
        session: r.session,
        status,
        state: r.state,
        renewedAt: r.renewTime?.toISOString() ?? null,
        expiresAt: expires?.toISOString() ?? null,
      };
    });
  const bySlot = new Map(members.map((m) => [m.slot, m]));
  const owners = Array.from({ length: header.shards }, (_, s): ShardOwnerView => {
    const r = shards.get(s);
    const o = r?.owner ?? null;
    const slot = o ? bySlot.get(o.slot) : undefined;
    return {
      shard: s,
      owner: o ? r!.holderIdentity : null,
      token: r?.token ?? 0,
      session: o ? `${o.slot}/${o.session}` : null,
      ownerLive: o !== null && slot?.status === 'held' && slot.session === o.session,
      acquiredAt: o ? (r!.acquireTime?.toISOString() ?? null) : null,
    };
  });
  return {
    group,
    backend: store.backend,
    location: store.location,
    found: true,
    kind: 'shard-group',
    shards: header.shards,
    createdAt: header.createdAt.toISOString(),
    liveMembers: members.filter((m) => m.status === 'held' && m.state === 'active').length,
    members,
    owners,
    orphaned: owners.filter((o) => !o.ownerLive).length,
  };
}
