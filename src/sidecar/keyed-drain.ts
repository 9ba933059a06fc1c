/**
 * The drain record both sidecars keep (`--drain-timeout`): per key (the lease's one term, or
 * each shard), the token held now, the token whose ownership ended last, and whether the app
 * said that one's work stopped. The rules a report must pass live here once: the drain key
 * first, so a caller without it learns nothing; then only the ownership that ended last can be
 * reported, never one still held. AppDrain and ShardDrains keep only their request's parsing
 * and their own wording.
 */
import type { Clock, Timer } from '../clock.js';
import type { DrainKey } from './drain-key.js';

/** One answer to a report (`POST /leader/stopped`, `POST /shards/stopped`): an HTTP status, a one-line body, and for 401 the scheme to use. */
export interface StoppedAnswer {
  code: 200 | 400 | 401 | 403 | 409;
  body: string;
  challenge?: string;
}

/** What a request names: the key whose work stopped and the token it had. */
export interface StoppedReport<K> {
  key: K;
  token: number;
}

/** Each caller's wording of the record's verdicts: the rules are the record's, the words the endpoint's. */
export interface DrainWording<K> {
  /** The token is the one still held for this key. */
  stillHeld(key: K, token: number): string;
  /** The token is not the ownership of this key that ended last (`ended`: that one's, if any). */
  notEndedLast(key: K, token: number, ended: number | undefined): string;
  /** The report is taken. */
  stopped(key: K, token: number): string;
}

/** A number as the app sends it: digits only, so `7 ` or `0x7` is refused rather than guessed. */
export const DIGITS = /^\d{1,16}$/;

export class KeyedDrain<K> {
  /** The token held now, per key. */
  private readonly held = new Map<K, number>();
  /** The token of the ownership that ended last, per key: the only one a report can end the drain of. */
  private readonly ended = new Map<K, number>();
  /** The ended ownership the app said stopped, per key (its token). */
  private readonly reported = new Map<K, number>();
  private readonly waiters = new Map<K, () => void>();

  /**
   * @param key the credential a report must carry (`leasehold sidecar`: always, see DrainKey);
   *   none: any report is taken (`leasehold run` and the library, which have no drain to end).
   */
  constructor(
    private readonly clock: Clock,
    private readonly wording: DrainWording<K>,
    private readonly key?: DrainKey,
  ) {}

  began(key: K, token: number): void {
    this.held.set(key, token);
  }

  /** The ownership of `key` under `token` ended: its drain is owed until the app reports it. */
  end(key: K, token: number): void {
    this.held.delete(key);
    this.ended.set(key, token);
    this.reported.delete(key);
  }

  /** The token held now for `key`, if any. */
  holding(key: K): number | undefined {
    return this.held.get(key);
  }

  /** The token of the ownership of `key` that ended last, if any. */
  endedLast(key: K): number | undefined {
    return this.ended.get(key);
  }

  /** Whether the app has said the work of `key` under `token` stopped (its report came, perhaps before anyone waited). */
  reportedStopped(key: K, token: number): boolean {
    return this.reported.get(key) === token;
  }

  /** Whether the app still owes a report for `key` under `token`. */
  pending(key: K, token: number): boolean {
    return this.ended.get(key) === token && this.reported.get(key) !== token;
  }

  /**
   * A report, with the request's Authorization header. The key first, so a caller without it
   * learns nothing of what is held; then `read` parses the request (an answer: it is refused as
   * it says); then the ownership it names must be the one that ended last here.
   */
  report(authorization: string | undefined, read: () => StoppedReport<K> | StoppedAnswer): StoppedAnswer {
    const refused = this.key?.refuse(authorization);
    if (refused) return refused;
    const asked = read();
    if ('code' in asked) return asked;
    const { key, token } = asked;
    if (this.held.get(key) === token) return { code: 409, body: this.wording.stillHeld(key, token) };
    const ended = this.ended.get(key);
    if (ended !== token) return { code: 409, body: this.wording.notEndedLast(key, token, ended) };
    this.reported.set(key, token);
    this.waiters.get(key)?.();
    return { code: 200, body: this.wording.stopped(key, token) };
  }

  /**
   * True once the app said the work of `key` under `token` stopped; false when the bound passed
   * first: `boundMs` (a timer of its own), or `bound` aborting (a bound shared with other keys,
   * the shard member's one per pass: no timer here).
   */
  wait(key: K, token: number, bound: number | AbortSignal): Promise<boolean> {
    if (!this.pending(key, token)) return Promise.resolve(true);
    if (typeof bound === 'number' ? bound <= 0 : bound.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let timer: Timer | null = null;
      const passed = () => done(false);
      const done = (stopped: boolean) => {
        timer?.cancel();
        if (typeof bound !== 'number') bound.removeEventListener('abort', passed);
        if (this.waiters.get(key) === wake) this.waiters.delete(key);
        resolve(stopped);
      };
      const wake = () => {
        if (!this.pending(key, token)) done(true);
      };
      this.waiters.set(key, wake);
      if (typeof bound === 'number') timer = this.clock.setTimer(passed, bound);
      else bound.addEventListener('abort', passed, { once: true });
    });
  }
}
