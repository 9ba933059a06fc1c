/**
 * The end of a term, after its step-down: first the term's work drains (`drain`, at most
 * drainTimeoutMs), then the release gate says whether "not leader" has reached every reader.
 * Either saying no leaves the lease to expire: a release while the work still runs, or while a
 * reader still sees "leader", would let the next leader start beside it. Then the release
 * itself: only a record this candidate wrote is released, never another holder's, nor one
 * written under its identity by another process.
 */
import { BackendUnavailableError, ConflictError, InvalidRecordError, describeError } from '../errors.js';
import type { Timer } from '../clock.js';
import type { LeaseRecord, VersionedRecord } from '../backends/lease-store.js';
import type { CandidateContext } from './candidate-options.js';
import { sameRecord } from './record-view.js';
import { releasedRecord } from './term-records.js';

export interface ReleaseOptions extends CandidateContext {
  drain: (() => Promise<boolean | void>) | null;
  /** The drain's bound; 0: not waited for. */
  drainTimeoutMs: number;
  releaseGate: () => boolean | Promise<boolean>;
  /** The released record keeps the term's acquireTime (term-records.ts). */
  keepAcquireTime: boolean;
  leaseDurationMs: number;
}

export class LeaseRelease {
  constructor(private readonly o: ReleaseOptions) {}

  /** How long the gate may wait for the drain: 0 without one. */
  get drainBoundMs(): number {
    return this.o.drain ? this.o.drainTimeoutMs : 0;
  }

  /**
   * Whether the ended term's work stopped within the drain's bound: true without a drain (no work
   * is known) or with a bound of 0; false past the bound, when the drain says it cannot know,
   * and when it throws or rejects (the work may still run). The timer never outlives the wait.
   */
  async drained(): Promise<boolean> {
    const drain = this.o.drain;
    if (!drain || this.o.drainTimeoutMs === 0) return true;
    let timer: Timer | undefined;
    const bound = new Promise<false>((resolve) => (timer = this.o.clock.setTimer(() => resolve(false), this.o.drainTimeoutMs)));
    const stopped = Promise.resolve()
      .then(drain)
      .then(
        (r) => r !== false,
        () => false,
      );
    try {
      return await Promise.race([stopped, bound]);
    } finally {
      timer?.cancel();
    }
  }

  /** The release gate's answer; one that throws is a no. */
  async allowed(): Promise<boolean> {
    try {
      return await this.o.releaseGate();
    } catch (err) {
      this.o.log.error('releaseGate failed: the lease is left to expire, not released', { error: describeError(err) });
      return false;
    }
  }

  /**
   * Writes the released record (term-records.ts) over our own, the term already ended. A
   * conflict or an unanswered request is retried after a fresh read. True when it landed.
   * `fromRead`: the view may predate a write of ours that landed unanswered, so the first
   * attempt reads too.
   */
  async send(fromRead = false): Promise<boolean> {
    const o = this.o;
    let sent: LeaseRecord | null = null;
    for (let attempt = 0; attempt < 5; attempt++) {
      const seen = fromRead && attempt === 0 ? null : o.view.observed;
      // Our record, last seen: released from that view only while it is recent, else from a
      // read. Another's record last seen: nothing of ours to release.
      if (attempt === 0 && seen && !o.view.isOwn(seen)) return false;
      const current = attempt === 0 && seen && o.view.confirmedWithin(seen.version, o.requestTimeoutMs) ? seen : await this.read();
      if (current && sent && sameRecord(current.record, sent)) return true; // an unanswered release landed
      if (!current || !o.view.isOwn(current)) return false;
      const released = releasedRecord(current.record, o.clock.now(), o.keepAcquireTime);
      sent = released;
      try {
        const version = await o.call('update', (c) => o.store.update(o.lease, released, current.version, c));
        o.observe({ record: released, version }, true);
        o.log.info('released lease', { token: released.leaseTransitions });
        return true;
      } catch (err) {
        // The store refuses the released record itself (a constraint of the table): no retry
        // passes, and the others wait out the lease as after a crash. Said once, as an error.
        if (err instanceof InvalidRecordError) {
          o.log.error('the store refused the release: the lease is left to expire', { reason: describeError(err), leaseDurationMs: o.leaseDurationMs });
          return false;
        }
        if (!(err instanceof ConflictError)) {
          o.log.warn('release failed', { reason: describeError(err) });
          if (!(err instanceof BackendUnavailableError)) return false;
        }
      }
    }
    return false;
  }

  private async read(): Promise<VersionedRecord | null> {
    try {
      return await this.o.call('get', (c) => this.o.store.get(this.o.lease, c));
    } catch {
      return null;
    }
  }
}
