import type { KubeClient } from '../../kube/api-client.js';
import { httpStatus } from '../../kube/api-errors.js';
import { leaseRequestError } from './lease-request-error.js';
import { BackendError, ConflictError, InvalidRecordError, LeaseholdError } from '../../errors.js';
import type { CallOptions, LeaseRecord, LeaseStore, SuccessorClaimSupport, VersionedRecord, WatchEvent } from '../lease-store.js';
import { formatMicroTime, parseMicroTime } from './micro-time.js';
import { validateKubernetesLeaseDuration } from '../../config/election-options.js';
import { WATCH_TIMEOUT_SECONDS, keepWatching } from './kept-watch.js';
import { SUCCESSOR_ANNOTATION, formatSuccessor, parseSuccessor } from './successor-annotation.js';
import type { GroupStore } from '../group-store.js';
import { KubernetesGroupStore } from './group-store.js';
import { HoldsGroupStore } from '../held-group-store.js';
import { MAX_INT32, replacementLease, type Lease, type LeaseSpec } from './lease-object.js';

/**
 * Leases as coordination.k8s.io/v1 Lease objects, written exactly as client-go's LeaseLock
 * writes them, so a Go controller and leasehold can compete for one Lease:
 * - compare-and-swap on metadata.resourceVersion: update sends the version read; the API server
 *   answers 409 Conflict if anyone wrote since (a lost race), never overwriting;
 * - 404 on read means "absent": the elector creates it; 409 on create means someone was faster;
 * - acquireTime/renewTime are MicroTime, RFC 3339 with exactly six fractional digits;
 * - fields this store does not own (labels, annotations, spec.strategy, spec.preferredHolder)
 *   are carried over from the object last read, as client-go's Update does;
 * - the successor claim is the one annotation this store owns, leasehold.io/successor
 *   (src/backends/kubernetes/successor-annotation.ts): written when the record has a claim, removed when
 *   it has none; every other annotation is carried.
 * The version is the resourceVersion; the API server changes it on every write.
 */
export class KubernetesLeaseStore extends HoldsGroupStore implements LeaseStore, GroupStore {
  readonly backend = 'kubernetes';
  /** leaseTransitions is an int32 in coordination.k8s.io/v1: the API server refuses more. */
  readonly maxToken = MAX_INT32;
  readonly location: string;
  /** The last object read or written per lease, to carry fields we do not own. */
  private readonly objects = new Map<string, Lease>();
  /**
   * The uid of each Lease last seen, kept even after it is deleted. Leases allow create-on-
   * update: a PUT of a deleted Lease without a uid precondition would silently recreate it,
   * an unconditional write in disguise. With the uid the API server answers 409.
   */
  private readonly uids = new Map<string, string>();
  /** The shard groups' records, as Leases of their own (group-store.ts): each group call goes to it (HoldsGroupStore). */
  protected readonly groups: KubernetesGroupStore;

  constructor(
    /** The API client, shared with other calls a sidecar makes (labelling its pod). */
    readonly client: KubeClient,
    readonly namespace: string,
  ) {
    super();
    this.location = `namespace ${namespace} on ${client.conn.server}`;
    this.groups = new KubernetesGroupStore(client, namespace);
  }

  private leasePath(name?: string): string {
    const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/leases`;
    return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
  }

  async get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    try {
      const lease = await this.client.request<Lease>('GET', this.leasePath(name), { signal: opts?.signal });
      return this.remember(name, lease);
    } catch (err) {
      if (httpStatus(err) === 404) {
        this.objects.delete(name);
        return null;
      }
      throw this.translate(err, 'get', name);
    }
  }

  async create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    checkWholeSeconds(record);
    checkSuccessor(record);
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, namespace: this.namespace, ...annotationsFor(record, undefined) },
      spec: toSpec(record, undefined),
    };
    try {
      const created = await this.client.request<Lease>('POST', this.leasePath(), { body, signal: opts?.signal });
      return this.remember(name, created).version;
    } catch (err) {
      throw this.translate(err, 'create', name);
    }
  }

  async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    checkWholeSeconds(record);
    checkSuccessor(record);
    if (!this.uids.has(name)) {
      // A version this store never read (another store's, or made up). Without the Lease's uid
      // as a precondition the API server would create a missing Lease on update, so learn it
      // first; an absent or changed Lease is a conflict, as the contract says.
      const current = await this.get(name, opts);
      if (current?.version !== expectedVersion) throw new ConflictError(`update Lease ${this.namespace}/${name}: version ${expectedVersion} is not current`);
    }
    const known = this.objects.get(name);
    const base: Lease = known?.metadata?.resourceVersion === expectedVersion ? known : { metadata: { name, namespace: this.namespace } };
    const body = replacementLease(base, annotationsFor(record, base.metadata?.annotations), toSpec(record, base.spec), {
      name,
      namespace: this.namespace,
      resourceVersion: expectedVersion,
      uid: base.metadata?.uid ?? this.uids.get(name),
    });
    try {
      const replaced = await this.client.request<Lease>('PUT', this.leasePath(name), { body, signal: opts?.signal });
      return this.remember(name, replaced).version;
    } catch (err) {
      throw this.translate(err, 'update', name);
    }
  }

  /**
   * Watches the one Lease (a fieldSelector on its name, which RBAC authorizes against
   * `resourceNames`) and reports each change with the object's record and resourceVersion, so
   * standbys observe renewals without reading. When the watch ends (server timeout, 410 Gone,
   * a dropped connection) it reports unhealthy and reconnects with backoff, without a
   * resourceVersion, so the first events report the current state again.
   */
  watch(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    return keepWatching(
      (tie) =>
        this.client.watch(
          this.leasePath(),
          { fieldSelector: `metadata.name=${name}`, timeoutSeconds: String(WATCH_TIMEOUT_SECONDS) },
          ({ type, object }) => {
            tie.sawEvent();
            const obj = object as Lease | undefined;
            if (type === 'DELETED') {
              this.objects.delete(name);
              onEvent({ record: null, deleted: obj?.spec ? fromLease(obj) : undefined });
            } else if ((type === 'ADDED' || type === 'MODIFIED') && obj?.metadata?.resourceVersion) {
              onEvent({ record: this.remember(name, obj) });
            }
          },
          tie.ended,
        ),
      () => {},
      onHealth,
    );
  }

  /** The group's reads by change come from its watch's copy, which may lag (group-watch-cache.ts). */
  readonly changesFromWatch = true;

  /** The claim is an annotation, which every Lease can hold. */
  readonly successorClaims: SuccessorClaimSupport = { kept: () => true };

  async close(): Promise<void> {
    this.groups.close();
    this.client.close();
  }

  private remember(name: string, lease: Lease): VersionedRecord {
    const version = lease.metadata?.resourceVersion;
    if (!version) throw new BackendError(`Lease ${this.namespace}/${name} came back without a resourceVersion`);
    this.objects.set(name, lease);
    if (lease.metadata?.uid) this.uids.set(name, lease.metadata.uid);
    return { record: fromLease(lease), version };
  }

  /** The client's coded error, said again with what was being done (lease-request-error.ts). */
  private translate(err: unknown, op: 'get' | 'create' | 'update', name: string): LeaseholdError {
    return leaseRequestError(err, op, `${op} Lease ${this.namespace}/${name}`, this.namespace);
  }
}

/** A Lease holds leaseDurationSeconds as an integer: a rounded one would make others wait a different lease. */
function checkWholeSeconds(r: LeaseRecord): void {
  validateKubernetesLeaseDuration(r.leaseDurationSeconds * 1000);
}

/** A claim that would not read back is refused before anything is sent. */
function checkSuccessor(r: LeaseRecord): void {
  if (r.successor) formatSuccessor(r.successor);
}

/**
 * The annotations to write: those read (a neighbour's, kept as they are) with ours set to the
 * record's claim, or removed when it has none. No annotations at all stay absent.
 */
function annotationsFor(r: LeaseRecord, read: Record<string, string> | undefined): { annotations?: Record<string, string> } {
  const annotations = { ...read };
  if (r.successor) annotations[SUCCESSOR_ANNOTATION] = formatSuccessor(r.successor);
  else delete annotations[SUCCESSOR_ANNOTATION];
  return Object.keys(annotations).length > 0 || read !== undefined ? { annotations } : {};
}

function toSpec(r: LeaseRecord, base: LeaseSpec | undefined): LeaseSpec {
  return {
    ...base,
    holderIdentity: r.holderIdentity,
    leaseDurationSeconds: r.leaseDurationSeconds,
    // MicroTime: the API server wants exactly six fractional digits (Date#toISOString gives three).
    acquireTime: r.acquireTime ? formatMicroTime(r.acquireTime) : undefined,
    renewTime: r.renewTime ? formatMicroTime(r.renewTime) : undefined,
    leaseTransitions: r.leaseTransitions,
  };
}

/** The record a Lease holds: its spec, and the claim when our annotation holds a well-formed one. */
function fromLease(lease: Lease): LeaseRecord {
  const record = fromSpec(lease.spec);
  const successor = parseSuccessor(lease.metadata?.annotations?.[SUCCESSOR_ANNOTATION]);
  return successor ? { ...record, successor } : record;
}

function fromSpec(spec: LeaseSpec | undefined): LeaseRecord {
  const token = spec?.leaseTransitions ?? 0;
  if (!Number.isSafeInteger(token) || token < 0) {
    throw new InvalidRecordError(`the Lease's leaseTransitions ${token} is not an integer from 0 to ${Number.MAX_SAFE_INTEGER}`);
  }
  return {
    holderIdentity: spec?.holderIdentity ?? '',
    leaseDurationSeconds: spec?.leaseDurationSeconds ?? 0,
    acquireTime: parseMicroTime(spec?.acquireTime),
    renewTime: parseMicroTime(spec?.renewTime),
    leaseTransitions: token,
  };
}
