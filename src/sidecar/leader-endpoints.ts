import { isIPv6 } from 'node:net';
import { InvalidConfigError, describeError } from '../errors.js';
import type { KubeClient } from '../kube/api-client.js';
import { httpStatus } from '../kube/api-errors.js';
import type { Logger } from '../log.js';

/** The token of the term whose leader last wrote the slice: a writer of an older term leaves it alone. */
export const SLICE_TOKEN_ANNOTATION = 'leasehold.io/token';

interface Endpoint {
  addresses?: string[];
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  targetRef?: { kind?: string; name?: string; namespace?: string };
}

interface Slice {
  metadata: { name: string; resourceVersion: string; annotations?: Record<string, string> };
  addressType?: string;
  endpoints?: Endpoint[] | null;
}

/** What this candidate wants the slice to say: its pod for `token`, or (not leading) not its pod. */
type Wanted = { lead: true; token: number } | { lead: false };

const same = (a: Wanted | null, b: Wanted | null) => a?.lead === b?.lead && (a?.lead !== true || (b?.lead === true && a.token === b.token));

/**
 * Keeps the leader Service's one EndpointSlice (`--leader-endpoints`) naming the Lease's holder
 * and nothing else. The Service has no selector, so no label a pod creator can copy puts a pod
 * behind it: only a writer of this one slice can (RBAC: get and update on it by name, held by the
 * candidates' ServiceAccount; the chart creates it). The endpoint is the pod's IP and name.
 *
 * - A new term writes this pod as the only endpoint, with the term's token in an annotation,
 *   unless the slice already carries a newer term's token (a stale leader never takes it back).
 *   Each write is a replace on the resourceVersion read, so a write that raced another is a 409
 *   and is judged again from a new read. A leader cut off from the API server cannot clear its
 *   endpoint; the next leader's first write replaces it.
 * - A step-down (and a start, for a restarted sidecar whose pod the slice still names) takes
 *   this pod's endpoint out of the slice: another leader's endpoint is never removed.
 * - While leading it reads the slice again every `verifyMs`, and puts itself back if something
 *   else rewrote it (a `helm upgrade`, a GitOps sync, a person).
 * A failed read or write is retried every `retryMs` while it is still wanted.
 */
export class LeaderEndpoints {
  private wanted: Wanted | null = null;
  private applied: Wanted | null = null;
  private inFlight: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastWarning = '';
  private readonly path: string;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    readonly slice: string,
    private readonly pod: { name: string; ip: string },
    private readonly log: Logger,
    private readonly opts: { retryMs?: number; verifyMs: number },
  ) {
    this.path = `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/endpointslices/${encodeURIComponent(slice)}`;
  }

  /** This pod leads term `token`: it becomes the slice's only endpoint. */
  lead(token: number): void {
    this.want({ lead: true, token });
  }

  /** This pod does not lead (a step-down, or a start): the slice must not name it. */
  notLeading(): void {
    this.want({ lead: false });
  }

  /** Waits (at most `timeoutMs`) for the wanted state to be written; used at shutdown. Stops the timers. */
  async flush(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!same(this.applied, this.wanted) && Date.now() < deadline) {
      await (this.inFlight ?? this.sync());
      if (!same(this.applied, this.wanted)) await new Promise((r) => setTimeout(r, 50));
    }
    this.wanted = null;
    this.clearTimer();
  }

  private want(w: Wanted): void {
    this.wanted = w;
    this.applied = null;
    this.clearTimer();
    void this.sync();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(ms: number): void {
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.applied = null;
      void this.sync();
    }, ms);
    this.timer.unref();
  }

  private sync(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const want = this.wanted;
    if (want === null || same(want, this.applied)) return Promise.resolve();
    this.inFlight = this.reconcile(want)
      .then(
        () => {
          this.applied = want;
          this.lastWarning = '';
          // A leader checks again later that nothing else rewrote the slice.
          if (want.lead && same(this.wanted, want)) this.schedule(this.opts.verifyMs);
        },
        (err: unknown) => {
          const error = describeError(err);
          // Said once per cause, not every retryMs: a missing slice or a missing grant stays so.
          if (error !== this.lastWarning) this.log.warn('cannot write the leader endpoints', { slice: this.slice, error });
          this.lastWarning = error;
          const status = httpStatus(err);
          const lasting = status === 403 || status === 404 || status === 422 || err instanceof InvalidConfigError;
          if (same(this.wanted, want)) this.schedule(lasting ? this.opts.verifyMs : (this.opts.retryMs ?? 2_000));
        },
      )
      .finally(() => {
        this.inFlight = null;
        if (this.wanted !== null && !same(this.wanted, want)) void this.sync();
      });
    return this.inFlight;
  }

  /** Reads the slice and writes it if it must change; a conflict is judged again from a new read. */
  private async reconcile(want: Wanted): Promise<void> {
    for (;;) {
      const slice = await this.client.request<Slice>('GET', this.path);
      const next = this.desired(slice, want);
      if (next === null) return;
      try {
        await this.client.request('PUT', this.path, { body: next });
        if (want.lead) this.log.info('the leader endpoints name this pod', { slice: this.slice, token: want.token, ip: this.pod.ip });
        else this.log.info('the leader endpoints no longer name this pod', { slice: this.slice });
        return;
      } catch (err) {
        if (httpStatus(err) !== 409) throw err;
      }
    }
  }

  /** The slice to write for `want`, or null when it already says what it must (or must be left alone). */
  private desired(slice: Slice, want: Wanted): Slice | null {
    const endpoints = slice.endpoints ?? [];
    // By the pod's name, not its address: pods in the node's network share the node's.
    const others = endpoints.filter((e) => e.targetRef?.name !== this.pod.name);
    if (!want.lead) return others.length < endpoints.length ? { ...slice, endpoints: others } : null;
    const written = Number(slice.metadata.annotations?.[SLICE_TOKEN_ANNOTATION]);
    if (Number.isInteger(written) && written > want.token) {
      this.log.debug('the leader endpoints belong to a newer term', { slice: this.slice, token: want.token, sliceToken: written });
      return null;
    }
    const family = isIPv6(this.pod.ip) ? 'IPv6' : 'IPv4';
    if (slice.addressType !== undefined && slice.addressType !== family) {
      throw new InvalidConfigError(`the EndpointSlice ${this.slice} holds ${slice.addressType} addresses, and this pod's address ${this.pod.ip} is ${family}`);
    }
    const mine: Endpoint = {
      addresses: [this.pod.ip],
      conditions: { ready: true, serving: true, terminating: false },
      targetRef: { kind: 'Pod', namespace: this.namespace, name: this.pod.name },
    };
    const [e, ...more] = endpoints;
    const onlyMe =
      e !== undefined && more.length === 0 && e.targetRef?.name === this.pod.name && e.addresses?.join() === this.pod.ip && e.conditions?.ready === true;
    if (onlyMe && written === want.token) return null;
    return {
      ...slice,
      metadata: { ...slice.metadata, annotations: { ...slice.metadata.annotations, [SLICE_TOKEN_ANNOTATION]: String(want.token) } },
      endpoints: [mine],
    };
  }
}
