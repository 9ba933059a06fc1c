/**
 * The sidecar's drain (`--drain-timeout`): after a step-down, with "not leader" where the app
 * reads it, the release waits until the app says the leader work of the term that ended has
 * stopped (`POST /leader/stopped?token=N`), at most the drain timeout. This keeps the terms
 * and the app's reports; the Sidecar decides the bound and what follows.
 */
import type { Clock } from '../clock.js';
import { maxDrainMs } from '../config/election-options.js';
import type { DrainKey } from './drain-key.js';

/** One answer to `POST /leader/stopped`: an HTTP status and a one-line body (and for 401, the scheme to use). */
export interface StoppedAnswer {
  code: 200 | 400 | 401 | 403 | 409;
  body: string;
  challenge?: string;
}

/** The sidecar's bound on --drain-timeout: the library's on drainTimeoutMs too. */
export { maxDrainMs };

/** A token as the app sends it: digits only, so `7 ` or `0x7` is refused rather than guessed. */
const TOKEN = /^\d{1,16}$/;

export class AppDrain {
  /** The token of the term this candidate leads now, if any. */
  private leading: number | null = null;
  /** The token of the last term that ended here: the only one a report can end the drain of. */
  private ended: number | null = null;
  /** The last ended term's token once the app said its work stopped. */
  private reported: number | null = null;
  private wake: (() => void) | null = null;

  /**
   * @param key the credential a report must carry (`leasehold sidecar`: always, see DrainKey);
   *   none: any report is taken (`leasehold run` and the library, which have no drain to end).
   */
  constructor(
    private readonly clock: Clock,
    private readonly key?: DrainKey,
  ) {}

  started(token: number): void {
    this.leading = token;
  }

  stopped(): void {
    if (this.leading !== null) this.ended = this.leading;
    this.leading = null;
  }

  /** The term whose drain is pending, or null when there is none to wait for. */
  get pending(): number | null {
    return this.ended !== null && this.reported !== this.ended ? this.ended : null;
  }

  /**
   * `POST /leader/stopped?token=N` (every `token` of the query), with the request's Authorization header. The key first, so
   * a caller without it learns nothing of the terms. Then only the term that ended last: a late
   * call for an older term, or one for the term still led, cannot end the drain of another.
   */
  report(given: string | readonly string[] | null, authorization?: string): StoppedAnswer {
    const refused = this.key?.refuse(authorization);
    if (refused) return refused;
    if (Array.isArray(given) && given.length > 1) return { code: 400, body: `token is given ${given.length} times: give it once\n` };
    const raw: string | null = typeof given === 'string' || given === null ? given : (given[0] ?? null);
    if (raw === null || !TOKEN.test(raw)) {
      return { code: 400, body: 'token=N is required: the fencing token of the term whose leader work stopped, as in POST /leader/stopped?token=7\n' };
    }
    const token = Number(raw);
    if (token === this.leading) {
      return { code: 409, body: `token ${token} is the term this candidate still leads: stop its leader work once the status says not leader, then post\n` };
    }
    if (token !== this.ended) {
      return { code: 409, body: `token ${token} is not the term that ended last here (${this.ended ?? 'none yet'}): nothing of it to drain\n` };
    }
    this.reported = token;
    this.wake?.();
    return { code: 200, body: `ok: the leader work of token ${token} stopped\n` };
  }

  /** True once the app said the last ended term's work stopped; false when `boundMs` passed first. */
  wait(boundMs: number): Promise<boolean> {
    if (this.pending === null) return Promise.resolve(true);
    if (boundMs <= 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const timer = this.clock.setTimer(() => {
        this.wake = null;
        resolve(false);
      }, boundMs);
      this.wake = () => {
        if (this.pending !== null) return;
        this.wake = null;
        timer.cancel();
        resolve(true);
      };
    });
  }
}
