/**
 * Leader election inside a Node process, without a sidecar: the same elector the sidecar runs,
 * with callbacks in the shape of client-go's `leaderelection.LeaderCallbacks`. The package
 * root (`import { LeaderElection } from 'leasehold'`) exports it; docs/library.md shows its use.
 */
import { openStore, type StoreSettings } from '../backends/open-store.js';
import type { LeaseStore } from '../backends/lease-store.js';
import { InvalidConfigError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS } from './elector-config.js';
import { LeaderElector, type LeadershipTerm } from './elector.js';

/** What the exclusive work is handed when this process starts leading. */
export interface Leadership {
  /** The fencing token of this term: send it with every write the protected resource fences. */
  readonly token: number;
  /** Aborts the moment this term ends (step-down, lost lease, stop()): stop the exclusive work. */
  readonly signal: AbortSignal;
  /** When this term stops counting unless renewed; it moves on with every renewal. */
  validUntil(): Date;
}

/** client-go's LeaderCallbacks: OnStartedLeading(ctx), OnStoppedLeading(), OnNewLeader(identity). */
export interface LeaderCallbacks {
  /** This process leads. Start the exclusive work; end it when `leadership.signal` aborts. */
  onStartedLeading(leadership: Leadership): void | Promise<void>;
  /** This process no longer leads; `leadership.signal` has already aborted. */
  onStoppedLeading?(reason: string): void;
  /** The holder of the lease changed ('' when released), whoever it is. */
  onNewLeader?(identity: string): void;
}

export interface LeaderElectionOptions {
  /** Where the lease lives: an open store, or the settings to open one (closed by stop()). */
  store: LeaseStore | (Partial<StoreSettings> & Pick<StoreSettings, 'backend'>);
  /** The lease's name: a DNS-1123 subdomain. */
  lease: string;
  /** This process's name, unique among the candidates (a pod name, a host name). */
  identity: string;
  /** Default 15 000 ms (client-go's). */
  leaseDurationMs?: number;
  /** Default 10 000 ms. */
  renewDeadlineMs?: number;
  /** Default 2 000 ms. */
  retryPeriodMs?: number;
  /** When the lease frees, standbys try within this, most near its end (few tries however many standbys). Default 32 ms (160 ms after a release). */
  contentionWindowMs?: number;
  /** Release the lease on stop() while leading, so another takes over at once. Default true. */
  releaseOnCancel?: boolean;
  /** Aborting it stops the election, as stop() does. */
  signal?: AbortSignal;
  callbacks: LeaderCallbacks;
  /** Default: silent. The CLI's logger (src/log.ts) or anything with debug/info/warn/error. */
  log?: Logger;
}

/**
 * One candidate. `LeaderElection.start()` opens the store (if given settings), starts
 * campaigning and returns; the callbacks say when it leads. A term's `signal` aborts before
 * `onStoppedLeading` runs and before anything else happens, so work started under a term can
 * stop before another process may have taken the lease.
 */
export class LeaderElection {
  private readonly elector: LeaderElector;
  private term: AbortController | null = null;
  private stopping: Promise<void> | null = null;

  private constructor(
    private readonly opts: LeaderElectionOptions,
    private readonly store: LeaseStore,
    private readonly ownsStore: boolean,
  ) {
    const callbacks = opts.callbacks;
    this.elector = new LeaderElector({
      store,
      lease: opts.lease,
      identity: opts.identity,
      leaseDurationMs: opts.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS,
      renewDeadlineMs: opts.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS,
      retryPeriodMs: opts.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS,
      contentionWindowMs: opts.contentionWindowMs,
      releaseOnStop: opts.releaseOnCancel ?? true,
      log: opts.log ?? silentLogger,
      listener: {
        onStartedLeading: (t) => this.started(t),
        onStoppedLeading: (reason) => {
          this.term?.abort(new Error(`stopped leading: ${reason}`));
          this.term = null;
          callbacks.onStoppedLeading?.(reason);
        },
        onNewLeader: (holder) => callbacks.onNewLeader?.(holder),
      },
    });
  }

  /** Validates the options (InvalidConfigError naming the rule), opens the store and starts. */
  static async start(opts: LeaderElectionOptions): Promise<LeaderElection> {
    if (typeof opts.callbacks?.onStartedLeading !== 'function') throw new InvalidConfigError('callbacks.onStartedLeading must be a function');
    const owns = !isStore(opts.store);
    if (!isStore(opts.store) && opts.store.backend === 'sqlite' && !opts.store.db) {
      throw new InvalidConfigError('store.db is required with backend "sqlite": the path of the database file every candidate on this machine shares');
    }
    const store = isStore(opts.store) ? opts.store : await openStore({ db: '', ...opts.store });
    let election: LeaderElection;
    try {
      election = new LeaderElection(opts, store, owns);
    } catch (err) {
      if (owns) await store.close();
      throw err;
    }
    if (opts.signal?.aborted) {
      if (owns) await store.close();
      return election;
    }
    opts.signal?.addEventListener('abort', () => void election.stop(), { once: true });
    election.elector.start();
    return election;
  }

  isLeader(): boolean {
    return this.elector.isLeader();
  }

  /** This term's fencing token while leading; null otherwise. */
  get token(): number | null {
    return this.elector.snapshot().fencingToken;
  }

  /** The holder in the last record seen ('' released, null before the first read). */
  get leader(): string | null {
    return this.elector.snapshot().holder;
  }

  /** Ends the election: the term (if any) ends first, then the lease is released (releaseOnCancel). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.elector.stop();
      if (this.ownsStore) await this.store.close();
    })();
    return this.stopping;
  }

  private started(t: LeadershipTerm): void {
    const controller = new AbortController();
    this.term = controller;
    const elector = this.elector;
    const leadership: Leadership = {
      token: t.token,
      signal: controller.signal,
      validUntil: () => elector.snapshot().validUntil ?? new Date(0),
    };
    // The callback's own failures are the app's: reported, never allowed to stop the elector.
    void Promise.resolve()
      .then(() => this.opts.callbacks.onStartedLeading(leadership))
      .catch((err: unknown) => (this.opts.log ?? silentLogger).error('onStartedLeading failed', { error: String(err) }));
  }
}

function isStore(s: LeaderElectionOptions['store']): s is LeaseStore {
  return typeof (s as LeaseStore).get === 'function';
}
