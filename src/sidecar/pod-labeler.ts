import { createHash } from 'node:crypto';
import { describeError } from '../errors.js';
import type { KubeClient } from '../kube/api-client.js';
import { httpStatus } from '../kube/api-errors.js';
import type { Logger } from '../log.js';

export const ROLE_LABEL = 'leasehold.io/role';
/** Which lease a pod's role is about, so a new leader can find the pods of its own lease. */
export const LEASE_LABEL = 'leasehold.io/lease';
/** The token of the term a pod was last labelled leader for. */
export const TOKEN_ANNOTATION = 'leasehold.io/token';
export type PodRole = 'leader' | 'follower';

/**
 * The lease's name as a label value: itself when it fits the 63 characters a label value may
 * have, else its first 46 characters, a dash and 16 hex digits of its SHA-256. Lease names are
 * DNS subdomains, so both forms start and end with an alphanumeric as label values must.
 */
export function leaseLabelValue(lease: string): string {
  if (lease.length <= 63) return lease;
  return `${lease.slice(0, 46)}-${createHash('sha256').update(lease).digest('hex').slice(0, 16)}`;
}

interface Wanted {
  role: PodRole;
  /** The term's token when leader; null as follower. */
  token: number | null;
}

interface PodMeta {
  metadata: { name: string; resourceVersion: string; annotations?: Record<string, string> };
}

const same = (a: Wanted | null, b: Wanted | null) => a?.role === b?.role && a?.token === b?.token;

/**
 * Keeps `leasehold.io/role: leader|follower` and `leasehold.io/lease: <lease>` on this
 * candidate's own pod, so a Service can select the leader. Only the newest wanted role is ever
 * sent (a merge patch); a failed patch is retried until it lands or the wanted role changes.
 *
 * A pod cut off from the API server cannot relabel itself when it loses the lease, so a new
 * leader also demotes, once per term, every other pod of the lease still labelled leader for
 * an older term (see demoteOthers). A label is a convenience for routing, never a fencing
 * mechanism: it lags leadership by one API call.
 */
export class PodLabeler {
  private wanted: Wanted | null = null;
  private applied: Wanted | null = null;
  private inFlight: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  /** The token of the term whose demotion of other pods is running, if any. */
  private demoting: number | null = null;
  private readonly leaseValue: string;
  private readonly podsPath: string;

  constructor(
    private readonly client: KubeClient,
    namespace: string,
    private readonly pod: string,
    lease: string,
    private readonly log: Logger,
    private readonly retryMs = 2_000,
  ) {
    this.leaseValue = leaseLabelValue(lease);
    this.podsPath = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
  }

  /** Labels this pod; as leader (with its term's token) also demotes former leaders of the lease. */
  set(role: 'follower'): void;
  set(role: 'leader', token: number): void;
  set(role: PodRole, token?: number): void {
    this.wanted = { role, token: role === 'leader' ? token! : null };
    void this.sync();
    if (role === 'leader' && this.demoting !== token) void this.demoteOthers(token!);
  }

  /** Waits (at most `timeoutMs`) for the wanted role to be on the pod; used at shutdown. */
  async flush(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!same(this.applied, this.wanted) && Date.now() < deadline) {
      await (this.inFlight ?? this.sync());
      if (!same(this.applied, this.wanted)) await new Promise((r) => setTimeout(r, 50));
    }
    if (this.retry) clearTimeout(this.retry);
  }

  private sync(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const want = this.wanted;
    if (want === null || same(want, this.applied)) return Promise.resolve();
    // The token annotation changes the pod on every new term, so a stale demotion (which carries
    // the resourceVersion it listed) cannot land on a pod that was labelled leader since.
    const metadata =
      want.role === 'leader'
        ? { labels: { [ROLE_LABEL]: 'leader', [LEASE_LABEL]: this.leaseValue }, annotations: { [TOKEN_ANNOTATION]: String(want.token) } }
        : { labels: { [ROLE_LABEL]: 'follower', [LEASE_LABEL]: this.leaseValue } };
    this.inFlight = this.patch(this.pod, { metadata })
      .then(
        () => {
          this.applied = want;
          this.log.debug('labelled pod', { pod: this.pod, role: want.role });
        },
        (err: unknown) => {
          // A failed patch may still have landed (an answer lost, a timeout): the pod's role is
          // unknown, so even a return to the role applied before must be sent.
          this.applied = null;
          this.log.warn('cannot label pod', { pod: this.pod, role: want.role, error: describeError(err) });
          // The backoff repeats this role; a newer one wanted meanwhile is sent at once (below).
          if (!this.retry && same(this.wanted, want)) {
            this.retry = setTimeout(() => {
              this.retry = null;
              void this.sync();
            }, this.retryMs);
            this.retry.unref();
          }
        },
      )
      .finally(() => {
        this.inFlight = null;
        if (!same(this.wanted, this.applied) && !this.retry) void this.sync();
      });
    return this.inFlight;
  }

  private leads(token: number): boolean {
    return this.wanted?.role === 'leader' && this.wanted.token === token;
  }

  /**
   * Relabels `follower` every other pod of this lease that is labelled leader for a term no newer
   * than `token` (a former leader that could not relabel itself), while this candidate still
   * leads that term. Each patch carries the resourceVersion listed, so it fails (409) on a pod
   * changed since; the list is then read again. Ends when the list shows no such pod, or at a 403;
   * another failed list or patch is retried every retryMs.
   */
  private async demoteOthers(token: number): Promise<void> {
    this.demoting = token;
    const selector = `${LEASE_LABEL}=${this.leaseValue},${ROLE_LABEL}=leader`;
    try {
      while (this.leads(token)) {
        let failed = false;
        let conflicted = false;
        try {
          const list = await this.client.request<{ items: PodMeta[] }>('GET', `${this.podsPath}?labelSelector=${encodeURIComponent(selector)}`);
          const former = list.items.filter((p) => p.metadata.name !== this.pod && !(termOf(p) > token));
          if (former.length === 0) {
            this.log.debug('no other pod of the lease is labelled leader', { token });
            return;
          }
          for (const p of former) {
            if (!this.leads(token)) return;
            try {
              await this.patch(p.metadata.name, { metadata: { resourceVersion: p.metadata.resourceVersion, labels: { [ROLE_LABEL]: 'follower' } } });
              this.log.info('relabelled a former leader pod follower', { pod: p.metadata.name, podToken: termOf(p), token });
            } catch (err) {
              const status = httpStatus(err);
              // 409: the pod changed since the list, judged again from a new list; 404: it is gone.
              if (status === 409) conflicted = true;
              else if (status !== 404) throw err;
            }
          }
        } catch (err) {
          this.log.warn('cannot relabel former leader pods', { error: describeError(err) });
          // Without list or patch on pods (RBAC from before this existed) retrying cannot help:
          // said once per term, not every retryMs.
          if (httpStatus(err) === 403) return;
          failed = true;
        }
        // After a conflict the list is read again at once; after a failure, or to confirm that
        // the patches took, after retryMs.
        if (failed || !conflicted) await new Promise((r) => setTimeout(r, this.retryMs).unref());
      }
    } finally {
      if (this.demoting === token) this.demoting = null;
    }
  }

  private patch(pod: string, body: unknown): Promise<unknown> {
    return this.client.request('PATCH', `${this.podsPath}/${encodeURIComponent(pod)}`, { body, contentType: 'application/merge-patch+json' });
  }
}

/** The token a pod was labelled leader for; -1 when it has none (never newer than a term). */
function termOf(p: PodMeta): number {
  const n = Number(p.metadata.annotations?.[TOKEN_ANNOTATION]);
  return Number.isInteger(n) ? n : -1;
}
