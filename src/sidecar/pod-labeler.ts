import { describeError } from '../errors.js';
import type { KubeClient } from '../kube/api-client.js';
import type { Logger } from '../log.js';

const ROLE_LABEL = 'leasehold.io/role';
export type PodRole = 'leader' | 'follower';

/**
 * Keeps `leasehold.io/role: leader|follower` on this candidate's own pod, so a Service can
 * select the leader. Only the newest wanted role is ever sent (a merge patch of one label);
 * a failed patch is retried until it lands or the wanted role changes. A label is a
 * convenience for routing, never a fencing mechanism: it lags leadership by one API call.
 */
export class PodLabeler {
  private wanted: PodRole | null = null;
  private applied: PodRole | null = null;
  private inFlight: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly pod: string,
    private readonly log: Logger,
    private readonly retryMs = 2_000,
  ) {}

  set(role: PodRole): void {
    this.wanted = role;
    void this.sync();
  }

  /** Waits (at most `timeoutMs`) for the wanted role to be on the pod; used at shutdown. */
  async flush(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.applied !== this.wanted && Date.now() < deadline) {
      await (this.inFlight ?? this.sync());
      if (this.applied !== this.wanted) await new Promise((r) => setTimeout(r, 50));
    }
    if (this.retry) clearTimeout(this.retry);
  }

  private sync(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const role = this.wanted;
    if (role === null || role === this.applied) return Promise.resolve();
    const path = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods/${encodeURIComponent(this.pod)}`;
    this.inFlight = this.client
      .request('PATCH', path, { body: { metadata: { labels: { [ROLE_LABEL]: role } } }, contentType: 'application/merge-patch+json' })
      .then(
        () => {
          this.applied = role;
          this.log.debug('labelled pod', { pod: this.pod, role });
        },
        (err: unknown) => {
          this.log.warn('cannot label pod', { pod: this.pod, role, error: describeError(err) });
          if (!this.retry) {
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
        if (this.wanted !== this.applied && !this.retry) void this.sync();
      });
    return this.inFlight;
  }
}
