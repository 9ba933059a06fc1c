/**
 * The shard groups' records as coordination.k8s.io/v1 Leases in the store's namespace
 * (docs/kubernetes.md, "Shard groups"; names and labels: group-names.ts):
 * - a member slot: holderIdentity, leaseTransitions (its session), renewTime,
 *   leaseDurationSeconds, and the annotation `leasehold.io/member-state` (active or leaving);
 * - a shard: holderIdentity, leaseTransitions (its token), acquireTime, and the annotation
 *   `leasehold.io/owner-session` (`SLOT/SESSION`, absent when free);
 * - the header: the annotation `leasehold.io/shards`, acquireTime (when it was created) and the
 *   annotation `leasehold.io/high-water` (the group's high-water token; absent on a header
 *   written before it existed).
 * listGroup is one LIST with the group's label selector; readGroupChanges answers from a copy
 * of the group kept by a watch with it (group-watch-cache.ts), which also gives watchGroup its
 * hints. Writes are
 * compare-and-swap on resourceVersion (etcd's revision: it never repeats), with the Lease's uid
 * as a precondition, so an update never recreates a deleted Lease. A Lease with a record's name
 * but without the group's labels is someone else's: never overwritten (ForeignRecordError).
 * Fields this store does not own (other labels and annotations, spec fields) are carried over
 * from the object last read, as the lease store does.
 */
import { MAX_SOCKETS, type KubeClient } from '../../kube/api-client.js';
import { httpStatus } from '../../kube/api-errors.js';
import { BackendError, ConflictError, ForeignRecordError, InvalidRecordError, LeaseholdError } from '../../errors.js';
import { escapeControl } from '../../util/escape-control.js';
import { validateKubernetesLeaseDuration } from '../../config/election-options.js';
import { GroupWatchCache } from './group-watch-cache.js';
import type { CallOptions } from '../lease-store.js';
import {
  MAX_MEMBER_SLOTS,
  MAX_SHARDS,
  recordKey,
  type GroupChanges,
  type GroupHeader,
  type GroupRecord,
  type GroupWrite,
  type GroupWriteOutcome,
  type VersionedGroupRecord,
} from '../group-store.js';
import { checkGroupWrites, writeEachGroupRecord } from '../group-writes.js';
import { checkGroupRecord } from '../group-record-check.js';
import { leaseRequestError, type LeaseVerb } from './lease-request-error.js';
import { formatMicroTime, parseMicroTime } from './micro-time.js';
import { MAX_INT32, replacementLease, type Lease, type LeaseList, type LeaseSpec } from './lease-object.js';
import { GROUP_LABEL, RECORD_LABEL, checkKubernetesGroupName, labelsOf, leaseNameOf, recordOfName } from './group-names.js';

export const MEMBER_STATE_ANNOTATION = 'leasehold.io/member-state';
export const OWNER_SESSION_ANNOTATION = 'leasehold.io/owner-session';
export const SHARDS_ANNOTATION = 'leasehold.io/shards';
export const HIGH_WATER_ANNOTATION = 'leasehold.io/high-water';
/** The header's longest lease announced, in seconds (GroupHeader.longestLeaseSeconds); a version without it keeps it as another's annotation. */
export const LONGEST_LEASE_ANNOTATION = 'leasehold.io/longest-lease-seconds';
/**
 * A batch's requests in flight at once: three of the client's connections stay free, for the
 * group's watch, the heartbeat and the list, so neither of the last two queues behind a batch
 * (docs/benchmarks.md, "Shard writes in batches", for what it gives on the test API server).
 */
export const BATCH_IN_FLIGHT = MAX_SOCKETS - 3;

export class KubernetesGroupStore {
  readonly maxToken = MAX_INT32;
  /** The last object read or written per Lease name, to carry fields we do not own and its uid. */
  private readonly objects = new Map<string, Lease>();
  /** Each group read by change or watched: its copy, kept by one watch. */
  private readonly watched = new Map<string, GroupWatchCache>();
  /** readGroupChanges answers from a watch's copy, which may lag: a judgment from time passing lists first. */
  readonly changesFromWatch = true;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
  ) {}

  private leasePath(name?: string): string {
    const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/leases`;
    return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
  }

  async listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    checkKubernetesGroupName(group);
    let list: LeaseList;
    try {
      list = await this.client.request<LeaseList>(
        'GET',
        `${this.leasePath()}?${new URLSearchParams({ labelSelector: `${GROUP_LABEL}=${group}` }).toString()}`,
        {
          signal: opts?.signal,
        },
      );
    } catch (err) {
      throw this.translate(err, 'list', `group ${group}`);
    }
    const records: VersionedGroupRecord[] = [];
    for (const lease of list.items ?? []) {
      // A Lease labelled for the group whose name or record label is none of its records' is not one.
      const key = ours(group, lease);
      if (!key) continue;
      this.objects.set(lease.metadata!.name!, lease);
      records.push({ record: fromLease(group, key, lease), version: versionOf(lease) });
    }
    return records;
  }

  /**
   * What changed since `cursor`, from the group's copy kept by its watch: no request while the
   * watch lasts, once the first read's LIST has filled it (group-watch-cache.ts).
   */
  async readGroupChanges(group: string, cursor: string | undefined, opts?: CallOptions): Promise<GroupChanges> {
    checkKubernetesGroupName(group);
    let changes;
    try {
      changes = await this.watchedGroup(group).read(cursor, opts?.signal);
    } catch (err) {
      throw this.translate(err, 'list', `group ${group}`);
    }
    const records = changes.leases.map((lease) => ({ record: fromLease(group, ours(group, lease)!, lease), version: versionOf(lease) }));
    return { records, cursor: changes.cursor, full: changes.full, total: changes.total };
  }

  /** The group's copy, started at its first use. */
  watchedGroup(group: string): GroupWatchCache {
    let cache = this.watched.get(group);
    if (!cache) {
      cache = new GroupWatchCache(
        this.client,
        this.leasePath(),
        `${GROUP_LABEL}=${group}`,
        (lease) => ours(group, lease) !== null,
        (lease) => void this.objects.set(lease.metadata!.name!, lease),
        (name) => void this.objects.delete(name),
      );
      this.watched.set(group, cache);
    }
    return cache;
  }

  /** Stops every group's watch. */
  close(): void {
    for (const cache of this.watched.values()) cache.close();
    this.watched.clear();
  }

  async createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    checkKubernetesGroupName(group);
    checkGroupRecord(group, record, MAX_INT32);
    if (record.kind === 'member') validateKubernetesLeaseDuration(record.leaseDurationSeconds * 1000);
    const name = leaseNameOf(group, record);
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, namespace: this.namespace, labels: labelsOf(group, record), ...annotationsFor(record, undefined) },
      spec: toSpec(record, undefined),
    };
    try {
      const created = await this.client.request<Lease>('POST', this.leasePath(), { body, signal: opts?.signal });
      this.objects.set(name, created);
      this.watched.get(group)?.wrote(created.metadata?.resourceVersion);
      return versionOf(created);
    } catch (err) {
      if (httpStatus(err) === 409) {
        // Taken: by this group's record (a lost race), or by someone else's Lease, which a
        // retry would never get past.
        const existing = await this.get(name, opts).catch(() => null);
        if (existing && !ours(group, existing)) throw this.foreign(group, record, existing);
        throw new ConflictError(`create Lease ${this.namespace}/${name} (group ${group} record ${recordKey(record)}): it already exists`, { cause: err });
      }
      throw this.translate(err, 'create', name);
    }
  }

  async updateGroupRecord(group: string, record: GroupRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    checkKubernetesGroupName(group);
    checkGroupRecord(group, record, MAX_INT32);
    if (record.kind === 'member') validateKubernetesLeaseDuration(record.leaseDurationSeconds * 1000);
    const name = leaseNameOf(group, record);
    let base = this.objects.get(name);
    if (base?.metadata?.resourceVersion !== expectedVersion || !ours(group, base)) {
      // A version this store did not read last: learn the Lease first, so the uid precondition
      // (without it a PUT recreates a deleted Lease) and the labels are the Lease's own.
      const current = await this.get(name, opts);
      if (!current) throw new ConflictError(`update Lease ${this.namespace}/${name}: it no longer exists`);
      if (!ours(group, current)) throw this.foreign(group, record, current);
      if (current.metadata?.resourceVersion !== expectedVersion)
        throw new ConflictError(`update Lease ${this.namespace}/${name}: version ${expectedVersion} is not current`);
      base = current;
    }
    const body = replacementLease(
      base,
      { ...annotationsFor(record, base.metadata?.annotations), labels: { ...base.metadata?.labels, ...labelsOf(group, record) } },
      toSpec(record, base.spec),
      { name, namespace: this.namespace, resourceVersion: expectedVersion, uid: base.metadata?.uid },
    );
    try {
      const replaced = await this.client.request<Lease>('PUT', this.leasePath(name), { body, signal: opts?.signal });
      this.objects.set(name, replaced);
      this.watched.get(group)?.wrote(replaced.metadata?.resourceVersion);
      return versionOf(replaced);
    } catch (err) {
      throw this.translate(err, 'update', name);
    }
  }

  /**
   * A batch as concurrent single writes (the API server has no transaction over several
   * objects), each its own compare-and-swap, at most BATCH_IN_FLIGHT at once: the client keeps
   * MAX_SOCKETS connections, and the batch leaves the others to the heartbeat and the list, so
   * they never queue behind it. Every record is checked before the first request.
   */
  async writeGroupRecords(group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]> {
    checkKubernetesGroupName(group);
    checkGroupWrites(group, writes, MAX_INT32);
    for (const { record } of writes) if (record.kind === 'member') validateKubernetesLeaseDuration(record.leaseDurationSeconds * 1000);
    return writeEachGroupRecord(this, group, writes, BATCH_IN_FLIGHT, opts);
  }

  /**
   * Hints at every event of the group's watch, the one that keeps its copy for readGroupChanges
   * (its first connect lists the group, its reconnects resume: group-watch-cache.ts), and at each
   * (re)connect, since what changed while it was down is not replayed as hints. It reconnects as
   * the lease watch does: reports unhealthy, backs off.
   */
  watchGroup(group: string, onChange: () => void, onHealth?: (healthy: boolean) => void): () => void {
    checkKubernetesGroupName(group);
    return this.watchedGroup(group).subscribe(onChange, onHealth);
  }

  /** The Lease named `name`, or null when there is none. */
  private async get(name: string, opts: CallOptions | undefined): Promise<Lease | null> {
    try {
      const lease = await this.client.request<Lease>('GET', this.leasePath(name), { signal: opts?.signal });
      this.objects.set(name, lease);
      return lease;
    } catch (err) {
      if (httpStatus(err) === 404) {
        this.objects.delete(name);
        return null;
      }
      throw this.translate(err, 'get', name);
    }
  }

  private foreign(group: string, record: GroupRecord, lease: Lease): ForeignRecordError {
    const name = leaseNameOf(group, record);
    const labels = lease.metadata?.labels ?? {};
    const has = [GROUP_LABEL, RECORD_LABEL].map((l) => `${l}=${labels[l] === undefined ? '(none)' : escapeControl(JSON.stringify(labels[l]))}`).join(', ');
    return new ForeignRecordError(
      `Lease ${this.namespace}/${name} is not group ${group}'s record ${recordKey(record)}: it has ${has} where that record has ${GROUP_LABEL}=${group}, ${RECORD_LABEL}=${record.kind}; it is someone else's and is never overwritten: rename the group, or remove that Lease if nobody uses it`,
    );
  }

  /** The client's coded error, said again with what was being done (lease-request-error.ts). */
  private translate(err: unknown, op: LeaseVerb, what: string): LeaseholdError {
    return leaseRequestError(err, op, `${op} Lease${op === 'list' ? 's of' : ''} ${this.namespace}/${what}`, this.namespace);
  }
}

/** The record key a Lease is of `group`, when both its name and its labels say so; else null. */
function ours(group: string, lease: Lease): Pick<GroupRecord, 'kind' | 'index'> | null {
  const key = recordOfName(group, lease.metadata?.name ?? '');
  const labels = lease.metadata?.labels ?? {};
  return key && labels[GROUP_LABEL] === group && labels[RECORD_LABEL] === key.kind ? key : null;
}

function versionOf(lease: Lease): string {
  const version = lease.metadata?.resourceVersion;
  if (!version) throw new BackendError(`Lease ${lease.metadata?.name ?? '?'} came back without a resourceVersion`);
  return version;
}

/** Our annotations set for `r` (the others, read, kept as they are): each kind's own, and none of another kind's. */
function annotationsFor(r: GroupRecord, read: Record<string, string> | undefined): { annotations?: Record<string, string> } {
  const annotations = { ...read };
  for (const a of [MEMBER_STATE_ANNOTATION, OWNER_SESSION_ANNOTATION, SHARDS_ANNOTATION, HIGH_WATER_ANNOTATION, LONGEST_LEASE_ANNOTATION])
    delete annotations[a];
  if (r.kind === 'member') annotations[MEMBER_STATE_ANNOTATION] = r.state;
  if (r.kind === 'shard' && r.owner) annotations[OWNER_SESSION_ANNOTATION] = `${r.owner.slot}/${r.owner.session}`;
  if (r.kind === 'group') annotations[SHARDS_ANNOTATION] = String(r.shards);
  if (r.kind === 'group' && r.highWater !== undefined) annotations[HIGH_WATER_ANNOTATION] = String(r.highWater);
  if (r.kind === 'group' && r.longestLeaseSeconds !== undefined) annotations[LONGEST_LEASE_ANNOTATION] = String(r.longestLeaseSeconds);
  return Object.keys(annotations).length > 0 || read !== undefined ? { annotations } : {};
}

/** The spec for `r`: its fields set, the ones it does not use removed, anything else read kept. */
function toSpec(r: GroupRecord, base: LeaseSpec | undefined): LeaseSpec {
  const spec: LeaseSpec = {
    ...base,
    holderIdentity: undefined,
    leaseDurationSeconds: undefined,
    acquireTime: undefined,
    renewTime: undefined,
    leaseTransitions: undefined,
  };
  const time = (d: Date | null) => (d ? formatMicroTime(d) : undefined);
  switch (r.kind) {
    case 'group':
      return { ...spec, acquireTime: formatMicroTime(r.createdAt) };
    case 'member':
      return {
        ...spec,
        holderIdentity: r.holderIdentity,
        leaseTransitions: r.session,
        renewTime: time(r.renewTime),
        leaseDurationSeconds: r.leaseDurationSeconds,
      };
    case 'shard':
      return { ...spec, holderIdentity: r.holderIdentity, leaseTransitions: r.token, acquireTime: time(r.acquireTime) };
  }
}

/**
 * The record a Lease of ours holds. Anyone with rights on Leases can write anything into one: a
 * value no group store writes is an InvalidRecordError naming the Lease, never a record guessed at.
 */
function fromLease(group: string, key: Pick<GroupRecord, 'kind' | 'index'>, lease: Lease): GroupRecord {
  const name = lease.metadata?.name ?? '?';
  const bad = (field: string, value: unknown, rule: string): never => {
    throw new InvalidRecordError(
      `Lease ${name} (group ${group} record ${recordKey(key)}) holds ${field} ${escapeControl(JSON.stringify(value) ?? String(value))}, which is not ${rule}`,
    );
  };
  const spec = lease.spec ?? {};
  const annotations = lease.metadata?.annotations ?? {};
  const transitions = spec.leaseTransitions ?? 0;
  if (!Number.isSafeInteger(transitions) || transitions < 0) bad('leaseTransitions', transitions, 'an integer from 0');
  switch (key.kind) {
    case 'group': {
      const text = annotations[SHARDS_ANNOTATION];
      const shards = text !== undefined && /^\d{1,4}$/.test(text) ? Number(text) : 0;
      if (shards < 1 || shards > MAX_SHARDS) bad(SHARDS_ANNOTATION, text, `a shard count from 1 to ${MAX_SHARDS}`);
      const createdAt = parseMicroTime(spec.acquireTime) ?? bad('acquireTime', spec.acquireTime, 'a time');
      const header: GroupHeader = { kind: 'group', index: 0, shards, createdAt };
      const high = annotations[HIGH_WATER_ANNOTATION];
      // The store holds tokens up to int32 (a shard's is its Lease's leaseTransitions): the same bound here.
      if (high !== undefined && (!/^\d{1,10}$/.test(high) || Number(high) > MAX_INT32)) bad(HIGH_WATER_ANNOTATION, high, `an integer from 0 to ${MAX_INT32}`);
      if (high !== undefined) header.highWater = Number(high);
      const longest = annotations[LONGEST_LEASE_ANNOTATION];
      // As a slot's leaseDurationSeconds: a positive number (written by String(), read back exactly).
      if (longest !== undefined && !(/^\d{1,10}(\.\d{1,17})?$/.test(longest) && Number(longest) > 0))
        bad(LONGEST_LEASE_ANNOTATION, longest, 'a positive number of seconds');
      if (longest !== undefined) header.longestLeaseSeconds = Number(longest);
      return header;
    }
    case 'member': {
      const state = annotations[MEMBER_STATE_ANNOTATION];
      if (state !== 'active' && state !== 'leaving') return bad(MEMBER_STATE_ANNOTATION, state, '"active" or "leaving"');
      const duration = spec.leaseDurationSeconds;
      if (typeof duration !== 'number' || !(duration > 0)) bad('leaseDurationSeconds', duration, 'a positive number');
      return {
        kind: 'member',
        index: key.index,
        holderIdentity: spec.holderIdentity ?? '',
        session: transitions,
        state,
        renewTime: parseMicroTime(spec.renewTime),
        leaseDurationSeconds: duration!,
      };
    }
    case 'shard': {
      const text = annotations[OWNER_SESSION_ANNOTATION];
      let owner: { slot: number; session: number } | null = null;
      if (text !== undefined) {
        const m = /^(\d{1,4})\/(\d{1,10})$/.exec(text);
        if (!m || Number(m[1]) >= MAX_MEMBER_SLOTS || Number(m[2]) > MAX_INT32)
          bad(OWNER_SESSION_ANNOTATION, text, `SLOT/SESSION (a slot below ${MAX_MEMBER_SLOTS}, a session up to ${MAX_INT32})`);
        owner = { slot: Number(m![1]), session: Number(m![2]) };
      }
      return {
        kind: 'shard',
        index: key.index,
        holderIdentity: spec.holderIdentity ?? '',
        owner,
        token: transitions,
        acquireTime: parseMicroTime(spec.acquireTime),
      };
    }
    default:
      return bad('kind', key.kind, 'group, member or shard');
  }
}
