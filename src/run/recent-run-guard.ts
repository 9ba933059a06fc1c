import { ConflictError } from '../errors.js';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from '../backends/lease-store.js';

export interface RecentRunGuardOptions {
  /** A term that began less than this ago (by the local wall clock) is a recent run; null: none is (--try alone). */
  withinMs: number | null;
  /** Wall clock, ms since the epoch. */
  now: () => number;
  /** Called once, synchronously, before the record reaches the elector. */
  onRecentRun: (record: LeaseRecord) => void;
}

/**
 * `leasehold run --skip-if-ran-within`: a LeaseStore between the elector and the real store that
 * looks at every record the elector reads or is sent by the watch. The first one whose term
 * began within `withinMs` and that this candidate did not write closes the guard: from then on
 * it refuses (as a lost race, ConflictError) every write that would take the lease, so the
 * elector can never open a term over a run it has just seen. Closing happens before the
 * elector sees that record, and a write based on an older record loses its compare-and-swap
 * to the newer one, so no term can begin after the decision to skip.
 * Once this candidate leads, disarm() stops the inspection (its renewals are its own).
 *
 * A takeover whose answer was lost may still have landed: a term of this candidate that nobody
 * was told of, in which the command never ran. The elector releases it when it stops (--try ran
 * out, a signal), and a release keeps the term's acquireTime (releaseKeepsAcquireTime): the
 * record would then say a run of this tick began, and every other runner of the tick would skip
 * a run that never happened. So a release of one of this candidate's own takeovers, sent while
 * the guard is still armed (it never led: onStartedLeading disarms it, and starts the command),
 * is written with no acquireTime: no run began in that term.
 */
// It offers no successorClaims: a scheduled run's candidates claim nothing (each is gone by
// the next tick), and a claim is not a takeover this guard could judge.
export class RecentRunGuard implements LeaseStore {
  readonly backend: string;
  readonly location: string;
  readonly maxToken?: number;
  private armed = true;
  private closed = false;
  /** What this candidate sent to take the lease: a record that is one of these is its own term. */
  private sent: LeaseRecord[] = [];
  private pending = new Set<Promise<unknown>>();

  constructor(
    private readonly inner: LeaseStore,
    private readonly opts: RecentRunGuardOptions,
  ) {
    this.backend = inner.backend;
    this.location = inner.location;
    if (inner.maxToken !== undefined) this.maxToken = inner.maxToken;
  }

  /** Whether a term began within the window: a future acquireTime (a clock ahead of ours) counts as recent. */
  isRecent(record: LeaseRecord): boolean {
    const within = this.opts.withinMs;
    return within !== null && record.acquireTime !== null && this.opts.now() - record.acquireTime.getTime() < within;
  }

  /** This candidate leads: its own records are no news, and it must be free to renew. */
  disarm(): void {
    this.armed = false;
    this.closed = false;
  }

  /** No more takeovers from now on (given up: --try ran out). */
  stopTaking(): void {
    if (this.armed) this.closed = true;
  }

  /** Resolves once every takeover write sent so far has been answered. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  async get(name: string, opts?: CallOptions): Promise<VersionedRecord | null> {
    const got = await this.inner.get(name, opts);
    if (got) this.inspect(got.record);
    return got;
  }

  create(name: string, record: LeaseRecord, opts?: CallOptions): Promise<string> {
    return this.take(record, (r) => this.inner.create(name, r, opts));
  }

  update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    return this.take(record, (r) => this.inner.update(name, r, expectedVersion, opts));
  }

  watch(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    if (!this.inner.watch) return () => {};
    return this.inner.watch(
      name,
      (e) => {
        if (e.record) this.inspect(e.record.record);
        onEvent(e);
      },
      onHealth,
    );
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private inspect(record: LeaseRecord): void {
    if (!this.armed || this.closed || !this.isRecent(record) || this.isOwn(record)) return;
    this.closed = true;
    this.opts.onRecentRun(record);
  }

  /** A release of a term this candidate took but never led (the guard is still armed): its token and acquireTime are one of our takeovers'. */
  private ranNothing(release: LeaseRecord): boolean {
    return (
      release.acquireTime !== null &&
      this.sent.some((s) => s.leaseTransitions === release.leaseTransitions && s.acquireTime?.getTime() === release.acquireTime?.getTime())
    );
  }

  private isOwn(record: LeaseRecord): boolean {
    return this.sent.some(
      (s) =>
        s.holderIdentity === record.holderIdentity &&
        s.leaseTransitions === record.leaseTransitions &&
        s.acquireTime?.getTime() === record.acquireTime?.getTime(),
    );
  }

  /**
   * A write that holds the lease (not a release): refused once closed; tracked until answered.
   * A release of a term of ours that never led goes without acquireTime (see the class).
   */
  private take(record: LeaseRecord, send: (record: LeaseRecord) => Promise<string>): Promise<string> {
    if (!this.armed) return send(record);
    if (record.holderIdentity === '') return send(this.ranNothing(record) ? { ...record, acquireTime: null } : record);
    if (this.closed) return Promise.reject(new ConflictError('a run began within skipIfRanWithinMs, or tryMs ran out: not taking the lease'));
    this.sent = [...this.sent.slice(-7), record];
    const p = send(record);
    this.pending.add(p);
    const done = () => this.pending.delete(p);
    p.then(done, done);
    return p;
  }
}
