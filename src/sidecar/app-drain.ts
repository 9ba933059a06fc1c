/**
 * The sidecar's drain (`--drain-timeout`): after a step-down, with "not leader" where the app
 * reads it, the release waits until the app says the leader work of the term that ended has
 * stopped (`POST /leader/stopped?token=N`), at most the drain timeout. The record and its rules
 * are KeyedDrain's, with one key (the lease); this reads the request and words the answers. The
 * Sidecar decides the bound and what follows.
 */
import type { Clock } from '../clock.js';
import { maxDrainMs } from '../config/election-options.js';
import type { DrainKey } from './drain-key.js';
import { DIGITS, KeyedDrain, type DrainWording, type StoppedAnswer, type StoppedReport } from './keyed-drain.js';

export type { StoppedAnswer };

/** The sidecar's bound on --drain-timeout: the library's on drainTimeoutMs too. */
export { maxDrainMs };

/** The lease: the one key of a candidate's drain. */
const LEASE = 'lease';
type Lease = typeof LEASE;

const WORDING: DrainWording<Lease> = {
  stillHeld: (_, token) => `token ${token} is the term this candidate still leads: stop its leader work once the status says not leader, then post\n`,
  notEndedLast: (_, token, ended) => `token ${token} is not the term that ended last here (${ended ?? 'none yet'}): nothing of it to drain\n`,
  stopped: (_, token) => `ok: the leader work of token ${token} stopped\n`,
};

export class AppDrain {
  private readonly record: KeyedDrain<Lease>;

  /**
   * @param key the credential a report must carry (`leasehold sidecar`: always, see DrainKey);
   *   none: any report is taken (`leasehold run` and the library, which have no drain to end).
   */
  constructor(clock: Clock, key?: DrainKey) {
    this.record = new KeyedDrain(clock, WORDING, key);
  }

  started(token: number): void {
    this.record.began(LEASE, token);
  }

  stopped(): void {
    const token = this.record.holding(LEASE);
    if (token !== undefined) this.record.end(LEASE, token);
  }

  /** The term whose drain is pending, or null when there is none to wait for. */
  get pending(): number | null {
    const token = this.record.endedLast(LEASE);
    return token !== undefined && this.record.pending(LEASE, token) ? token : null;
  }

  /**
   * `POST /leader/stopped?token=N` (every `token` of the query), with the request's Authorization
   * header. The key first, so a caller without it learns nothing of the terms. Then only the
   * term that ended last: a late call for an older term, or one for the term still led, cannot
   * end the drain of another.
   */
  report(given: string | readonly string[] | null, authorization?: string): StoppedAnswer {
    return this.record.report(authorization, () => readToken(given));
  }

  /** True once the app said the last ended term's work stopped; false when `boundMs` passed first. */
  wait(boundMs: number): Promise<boolean> {
    const token = this.pending;
    return token === null ? Promise.resolve(true) : this.record.wait(LEASE, token, boundMs);
  }
}

function readToken(given: string | readonly string[] | null): StoppedReport<Lease> | StoppedAnswer {
  if (Array.isArray(given) && given.length > 1) return { code: 400, body: `token is given ${given.length} times: give it once\n` };
  const raw: string | null = typeof given === 'string' || given === null ? given : (given[0] ?? null);
  if (raw === null || !DIGITS.test(raw)) {
    return { code: 400, body: 'token=N is required: the fencing token of the term whose leader work stopped, as in POST /leader/stopped?token=7\n' };
  }
  return { key: LEASE, token: Number(raw) };
}
