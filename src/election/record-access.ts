/**
 * How one candidate reaches the lease record: each store call bounded by its request timeout
 * (bounded-call.ts), the store's watch, and each record it learns of (read, written or watched)
 * taken into its RecordView and, when it shows a different leader, announced (the log and the
 * listener's onNewLeader). The loop, its successor claim and its end of term all go through it;
 * none of them holds the store or announces by itself.
 */
import type { Clock } from '../clock.js';
import { StoreReopenedError } from '../errors.js';
import type { Logger } from '../log.js';
import type { CallOptions, LeaseRecord, LeaseStore, VersionedRecord, WatchEvent } from '../backends/lease-store.js';
import { boundedCall } from '../holder/bounded-call.js';
import { LockWaits } from '../holder/lock-waits.js';
import type { Notify } from './listener-calls.js';
import type { RecordView } from './record-view.js';
import type { AttemptSchedule } from './attempt-schedule.js';
import type { Standing } from './candidate-options.js';

/** What a watch event may ask of the loop: a read at its next turn (hint), a turn now (wakeUp); and the watch's health. */
export type WatchListener = Pick<AttemptSchedule, 'hint' | 'wakeUp' | 'setWatchHealth'>;

export interface RecordAccessOptions {
  identity: string;
  lease: string;
  store: LeaseStore;
  clock: Clock;
  log: Logger;
  /** Calls the listener (listener-calls.ts). */
  notify: Notify;
  view: RecordView;
  /** Bound on one backend call. */
  requestTimeoutMs: number;
  /** The pause after a write that waited on another's lock went unanswered (lock-waits.ts). */
  retryPeriodMs: number;
}

export class RecordAccess {
  /** Whether a write may wait on another's lock now: not right after one that waited went unanswered. */
  private readonly lockWaits: LockWaits;

  constructor(private readonly o: RecordAccessOptions) {
    this.lockWaits = new LockWaits(o.clock, o.retryPeriodMs);
  }

  /** The record as the store holds it now; null when absent. Rejects when the store does not answer in time. */
  get(): Promise<VersionedRecord | null> {
    return this.call('get', (c) => this.o.store.get(this.o.lease, c));
  }

  /** A read whose failure only means nothing was learnt: null then, as for an absent record. */
  async tryGet(): Promise<VersionedRecord | null> {
    try {
      return await this.get();
    } catch {
      return null;
    }
  }

  /** Creates the record; resolves to its version. */
  create(record: LeaseRecord): Promise<string> {
    return this.write('create', true, (c) => this.o.store.create(this.o.lease, record, c));
  }

  /**
   * Compare-and-swap over `expectedVersion`; resolves to the new version. `waitForLock` false: a
   * store whose wait on another's lock would block the process answers unavailable at once
   * (CallOptions; a retried release's, end-of-term-rule.ts). Nor does it wait within a
   * retryPeriod of a write that waited unanswered (lock-waits.ts: a step-down's release right
   * after its last renewal waited out the busy timeout would wait it out again, back to back).
   */
  update(record: LeaseRecord, expectedVersion: string, waitForLock = true): Promise<string> {
    return this.write('update', waitForLock, (c) => this.o.store.update(this.o.lease, record, expectedVersion, c));
  }

  /**
   * Takes in a record read, watched or written (own: this candidate's write), and announces a
   * different leader: a new holder, or the same holder in a new term.
   */
  observe(got: VersionedRecord, own = false): void {
    const o = this.o;
    if (!o.view.observe(got, own)) return;
    if (!own && got.record.holderIdentity !== o.identity) {
      o.log.info(got.record.holderIdentity === '' ? 'lease released' : 'new leader observed', {
        holder: got.record.holderIdentity,
        token: got.record.leaseTransitions,
      });
    }
    o.notify('onNewLeader', got.record.holderIdentity, got.record);
  }

  /**
   * Follows the store's watch, if it has one; returns the function that ends it. The watch is
   * only a hint: every decision is still a read and a compare-and-swap. `claims`: this candidate
   * keeps successor claims, so a change of the claim is news too.
   */
  watch(candidate: Standing, schedule: WatchListener, claims: boolean): (() => void) | undefined {
    return this.o.store.watch?.(
      this.o.lease,
      (e) => this.watched(e, candidate, schedule, claims),
      (healthy) => schedule.setWatchHealth(healthy),
    );
  }

  /**
   * A watch event. Standbys observe the record it carries exactly as if they had read it
   * (expiry is judged from that moment), and try when the lease is released (at their turn in
   * the contention window) or gone.
   * The leader ignores events: it renews from its own cache and learns of others through
   * its compare-and-swap.
   */
  private watched(e: WatchEvent, candidate: Standing, schedule: WatchListener, claims: boolean): void {
    const view = this.o.view;
    if (e.deleted) view.noteDeleted(e.deleted.leaseTransitions);
    if (candidate.isLeader()) return;
    // A hint without a record says only "it changed": read it, even while waiting on the watch
    // (otherwise a release would be noticed only at the expiry of the record last seen).
    if (e.record === undefined) {
      view.interruptAbsence();
      schedule.hint();
    }
    if (e.record === null) view.noteAbsent();
    if (e.record) {
      const claimBefore = view.claimSeenSinceMono;
      this.observe(e.record);
      const claimChanged = claims && view.claimSeenSinceMono !== claimBefore;
      // A held lease needs no turn now, unless its successor claim changed: the wait until a
      // claim is due (to volunteer, or to stand back) is judged again.
      // (Our own takeover's event, which ends our claim, is not news.)
      if (e.record.record.holderIdentity !== '' && (!claimChanged || view.isOwn(e.record))) return;
    }
    schedule.wakeUp();
  }

  /** A write: one backend call that waits on another's lock only if `waitForLock` and lockWaits allow it. */
  private write<T>(op: string, waitForLock: boolean, send: (opts: CallOptions) => Promise<T>): Promise<T> {
    return this.lockWaits.send(waitForLock, (waits) => this.call(op, (c) => send(waits ? c : { ...c, waitForLock: false })));
  }

  /** One backend call, bounded by requestTimeout (bounded-call.ts); a reopened store interrupts an absence. */
  private call<T>(op: string, send: (opts: CallOptions) => Promise<T>): Promise<T> {
    const o = this.o;
    return boundedCall(o.clock, o.requestTimeoutMs, `${o.store.backend} ${op}`, send, (e) => {
      if (e instanceof StoreReopenedError) o.view.interruptAbsence();
    });
  }
}
