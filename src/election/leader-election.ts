/**
 * Leader election inside a Node process, without a sidecar: the same elector the sidecar runs,
 * with callbacks in the shape of client-go's `leaderelection.LeaderCallbacks`. The package
 * root (`import { LeaderElection } from 'leasehold'`) exports it; docs/library.md shows its use.
 */
import { openStore, type StoreSettings } from '../backends/open-store.js';
import type { LeaseStore } from '../backends/lease-store.js';
import { InvalidConfigError } from '../errors.js';
import { createLogger, guardedLogger, isLogger, type Logger } from '../log.js';
import {
  checkDrainTimeout,
  maxDrainMs,
  quoted,
  resolveElectionConfig,
  resolvedTimings,
  withStoreTimeouts,
  type ElectionConfig,
} from '../config/election-options.js';
import { CandidateLoop, type LeadershipTerm } from './candidate-loop.js';
import { runAppCallback } from '../holder/app-callback.js';
import { realClock, type Clock } from '../clock.js';
import { AppHealth } from '../health/app-health.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';
import { resolveProbeOptions, type ProbeOptions } from '../health/health-settings.js';

/** What the exclusive work is handed when this process starts leading. */
export interface Leadership {
  /** The fencing token of this term: send it with every write the protected resource fences. */
  readonly token: number;
  /** Aborts the moment this term ends (step-down, lost lease, stop()): stop the exclusive work. */
  readonly signal: AbortSignal;
  /**
   * When this term stops counting unless renewed; it moves on with every renewal of this term.
   * Once the term has ended it is fixed: the moment it ended, or its last renewal's bound if
   * that came first. A later term never moves it.
   */
  validUntil(): Date;
}

/**
 * client-go's LeaderCallbacks: OnStartedLeading(ctx), OnStoppedLeading(), OnNewLeader(identity).
 * A callback that throws, or returns a promise that rejects, is logged (`log.error('callback
 * failed')`) and changes nothing else: the election goes on as if it had returned.
 */
export interface LeaderCallbacks {
  /**
   * This process leads. Start the exclusive work; end it when `leadership.signal` aborts. The
   * promise it returns, if any, is the work: however the term ends, it is waited for (up to
   * drainTimeoutMs) before the release and before this process may lead again.
   */
  onStartedLeading(leadership: Leadership): void | Promise<void>;
  /**
   * This process no longer leads; `leadership.signal` has already aborted. The promise it
   * returns, if any, is awaited too (within the same drainTimeoutMs): the place to wait for work
   * that onStartedLeading did not return.
   */
  onStoppedLeading?(reason: string): void | Promise<void>;
  /** The holder of the lease changed ('' when released), whoever it is. */
  onNewLeader?(identity: string): void | Promise<void>;
}

export interface LeaderElectionOptions {
  /** Where the lease lives: an open store, or the settings to open one (closed by stop()). */
  store: LeaseStore | (Partial<StoreSettings> & Pick<StoreSettings, 'backend'>);
  /** The lease's name: a DNS-1123 subdomain. */
  lease: string;
  /** This process's name, unique among the candidates (a pod name, a host name). */
  identity: string;
  /** Default 15 000 ms (client-go's). Whole milliseconds; whole seconds with the kubernetes backend. */
  leaseDurationMs?: number;
  /** Default 10 000 ms. Whole milliseconds. */
  renewDeadlineMs?: number;
  /** Default 2 000 ms. Whole milliseconds, at least 1. */
  retryPeriodMs?: number;
  /** When the lease frees, standbys try within this, most near its end (few tries however many standbys). Default 32 ms (160 ms after a release). */
  contentionWindowMs?: number;
  /**
   * Release the lease when a term ends (stop(), a step-down for the app's health, missed
   * renewals), once its work has stopped, so another takes over at once: by a compare-and-swap
   * from the record this process wrote, so a record another holder took is never touched, and
   * for a term lost to a store that does not answer, as soon as it answers again (until the lease
   * could have expired). Default true.
   */
  releaseOnCancel?: boolean;
  /**
   * However a term ends (stop(), the app's health, a missed renewal, a lost lease): how long to
   * wait, after its signal aborts, for the promises of onStartedLeading and onStoppedLeading to
   * settle. Until they do, the lease is not released and this process does not lead again. If
   * they have not settled by then, the lease is not released: it expires as after a crash, and
   * this process stands aside until it could have expired (the term's last renewal plus the
   * lease duration), so no next term starts while the work may still run before that moment.
   * At most renewDeadlineMs/2 − retryPeriodMs, the sidecar's `--drain-timeout` bound, which is
   * the default (3 000 ms with the default timings; 0 when none fits); 0 does not wait
   * (releases at once, as client-go's ReleaseOnCancel).
   */
  drainTimeoutMs?: number;
  /**
   * The app's health (docs/health.md): probe options the election runs (`{ probe: { http:
   * 'http://127.0.0.1:8080/healthz' } }`, with the kubelet's period, timeout and thresholds), or
   * a signal this process gives (`new ManualHealth()`, then `.healthy()` / `.unhealthy(reason)`).
   * While the app is not eligible this candidate does not campaign; a leader steps down (its
   * signal aborts), the work drains (drainTimeoutMs), the lease is released (releaseOnCancel),
   * and it stays a standby. Default: none, today's behaviour.
   */
  health?: ProbeOptions | Eligibility;
  /** Aborting it stops the election, as stop() does. */
  signal?: AbortSignal;
  callbacks: LeaderCallbacks;
  /**
   * Where the election reports what goes wrong. Default: errors only (a callback that failed,
   * a lease held under this identity by another process), one JSON line each on stderr, with
   * the lease and identity. `createLogger({ level: 'info' })` from this package shows every
   * change of leader; anything with debug/info/warn/error will do. A method that throws (or
   * rejects) is ignored: logging never disturbs the election.
   */
  log?: Logger;
}

/** The current (or last) term, as this wrapper keeps it. */
interface TermState {
  readonly controller: AbortController;
  /** Moves on with each renewal while the term lasts; fixed once it ends. */
  validUntil: Date;
  /** Settles when onStartedLeading's work has (its promise, or at once if it returned none). */
  readonly work: Promise<void>;
  /** Settles when onStoppedLeading has (its promise, or at once); set when the term ends. */
  stopped: Promise<void>;
}

/**
 * One candidate, as the package exports it (`import { LeaderElection } from 'leasehold'`): the
 * public wrapper around the internal CandidateLoop (candidate-loop.ts), which it runs with callbacks,
 * terms with an AbortSignal, and a drain before the release. `LeaderElection.start()` opens the store (if given settings), starts
 * campaigning and returns; the callbacks say when it leads. A term's `signal` aborts before
 * `onStoppedLeading` runs and before anything else happens, so work started under a term can
 * stop before another process may have taken the lease.
 */
export class LeaderElection {
  private readonly elector: CandidateLoop;
  private readonly log: Logger;
  /**
   * The latest term: the current one while leading, else the last that ended, whose work the
   * elector's end-of-term gate waits for (it runs before any next term begins).
   */
  private term: TermState | null = null;
  private stopping: Promise<void> | null = null;
  /** The probe this election runs, when `health` gave probe options. */
  private readonly appHealth: AppHealth | null;

  private constructor(
    private readonly opts: LeaderElectionOptions,
    config: ElectionConfig,
    private readonly store: LeaseStore,
    private readonly ownsStore: boolean,
    log: Logger,
    private readonly clock: Clock,
  ) {
    this.log = log;
    const callbacks = opts.callbacks;
    const health = opts.health;
    this.appHealth = health === undefined || isEligibility(health) ? null : new AppHealth(health, { clock });
    this.elector = new CandidateLoop({
      ...config,
      store,
      clock,
      eligibility: this.appHealth ?? (health as Eligibility | undefined),
      // Every end of a term waits for its work (the promises of its two callbacks), at most
      // drainTimeoutMs, before the release and before this candidate may begin another term.
      releaseOnCancel: opts.releaseOnCancel ?? true,
      drain: () => this.workStopped(this.term),
      drainTimeoutMs: opts.drainTimeoutMs ?? Math.max(0, maxDrainMs(config)),
      log,
      listener: {
        onStartedLeading: (t) => this.started(t),
        onRenewed: (t) => {
          if (this.term) this.term.validUntil = t.validUntil;
        },
        onStoppedLeading: (reason) => {
          const ended = this.term;
          if (ended) {
            // Fixed from now on: the term counts no longer than until it ended.
            ended.validUntil = new Date(Math.min(ended.validUntil.getTime(), this.clock.now().getTime()));
            ended.controller.abort(new Error(`stopped leading: ${reason}`));
          }
          let settle: () => void = () => {};
          if (ended) ended.stopped = new Promise<void>((resolve) => (settle = resolve));
          runAppCallback(
            this.log,
            'onStoppedLeading',
            () => callbacks.onStoppedLeading?.(reason),
            () => settle(),
          );
        },
        onNewLeader: (holder) => runAppCallback(this.log, 'onNewLeader', () => callbacks.onNewLeader?.(holder)),
      },
    });
  }

  /**
   * Validates the options (InvalidConfigError naming the rule) before anything is opened, opens
   * the store and starts. `internal` is for this package's tests (a fake clock), not the API.
   */
  static async start(opts: LeaderElectionOptions, internal: { clock?: Clock } = {}): Promise<LeaderElection> {
    const config = checkOptions(opts);
    const log = opts.log ? guardedLogger(opts.log) : createLogger({ level: 'error', base: { lease: opts.lease, identity: opts.identity } });
    const owns = !isStore(opts.store);
    // The store bounds each request (PostgreSQL: on the server too) by the elector's own
    // request timeout, as the CLI opens it, unless the settings name another.
    const store = isStore(opts.store) ? opts.store : await openStore({ db: '', log, ...withStoreTimeouts(opts.store, config) });
    let election: LeaderElection;
    try {
      election = new LeaderElection(opts, config, store, owns, log, internal.clock ?? realClock);
    } catch (err) {
      if (owns) await store.close();
      throw err;
    }
    if (opts.signal?.aborted) {
      if (owns) await store.close();
      return election;
    }
    opts.signal?.addEventListener('abort', () => void election.stop(), { once: true });
    election.appHealth?.start();
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

  /** Why this candidate does not campaign (its app is not eligible), and since when; null when it does. */
  get standingAside(): StandAside | null {
    return this.elector.snapshot().standingAside;
  }

  /** The holder in the last record seen ('' released, null before the first read). */
  get leader(): string | null {
    return this.elector.snapshot().holder;
  }

  /**
   * Ends the election: the term (if any) ends first (its signal aborts, then onStoppedLeading),
   * then, with releaseOnCancel, the lease is released once onStartedLeading's work and
   * onStoppedLeading's promise have settled (at most drainTimeoutMs; past that it is left to
   * expire). The elector's end-of-term gate runs that drain, as for every end of a term.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.elector.stop();
      this.appHealth?.stop();
      if (this.ownsStore) await this.store.close();
    })();
    return this.stopping;
  }

  /** Settles when an ended term's work and its onStoppedLeading promise have (the elector bounds the wait). */
  private workStopped(ended: TermState | null): Promise<void> {
    return ended ? Promise.all([ended.work, ended.stopped]).then(() => {}) : Promise.resolve();
  }

  private started(t: LeadershipTerm): void {
    const controller = new AbortController();
    let settle!: () => void;
    const state: TermState = {
      controller,
      validUntil: t.validUntil,
      work: new Promise<void>((resolve) => (settle = resolve)),
      stopped: Promise.resolve(),
    };
    this.term = state;
    const leadership: Leadership = {
      token: t.token,
      signal: controller.signal,
      validUntil: () => new Date(state.validUntil.getTime()),
    };
    // Called a turn later, so the elector has finished taking the lease before the app's code runs.
    void Promise.resolve().then(() => runAppCallback(this.log, 'onStartedLeading', () => this.opts.callbacks.onStartedLeading(leadership), settle));
  }
}

/** Every option LeaderElection.start knows: any other name is a typo (`leaseDuration` for `leaseDurationMs`). */
const KNOWN_OPTIONS: readonly (keyof LeaderElectionOptions)[] = [
  'store',
  'lease',
  'identity',
  'leaseDurationMs',
  'renewDeadlineMs',
  'retryPeriodMs',
  'contentionWindowMs',
  'releaseOnCancel',
  'drainTimeoutMs',
  'health',
  'signal',
  'callbacks',
  'log',
];

/** Names the release option once had, here and in the sidecar: refused with the one it has now. */
const RENAMED_OPTIONS: Readonly<Record<string, keyof LeaderElectionOptions>> = { releaseOnExit: 'releaseOnCancel', releaseOnStop: 'releaseOnCancel' };

/**
 * The options' shape and every election rule, checked once, before any store is opened or file
 * created. Returns the election's resolved options (defaults filled in): the ones checked are the
 * ones the elector runs with, and it checks none of them again.
 */
function checkOptions(opts: LeaderElectionOptions): ElectionConfig {
  if (typeof opts !== 'object' || opts === null) throw new InvalidConfigError('LeaderElection.start needs an options object');
  const unknown = Object.keys(opts).find((key) => !(KNOWN_OPTIONS as readonly string[]).includes(key));
  const renamed = unknown !== undefined && Object.hasOwn(RENAMED_OPTIONS, unknown) ? RENAMED_OPTIONS[unknown] : undefined;
  if (unknown !== undefined && renamed !== undefined) {
    throw new InvalidConfigError(`option ${JSON.stringify(unknown)} is now called ${JSON.stringify(renamed)}: the same setting, one name everywhere`, {
      field: renamed,
    });
  }
  if (unknown !== undefined) {
    throw new InvalidConfigError(`unknown option ${JSON.stringify(unknown)}: LeaderElection.start knows ${KNOWN_OPTIONS.join(', ')}`);
  }
  if (typeof opts.callbacks?.onStartedLeading !== 'function') throw new InvalidConfigError('callbacks.onStartedLeading must be a function');
  for (const name of ['onStoppedLeading', 'onNewLeader'] as const) {
    if (opts.callbacks[name] !== undefined && typeof opts.callbacks[name] !== 'function')
      throw new InvalidConfigError(`callbacks.${name} must be a function when given`);
  }
  if (typeof opts.store !== 'object' || opts.store === null) {
    throw new InvalidConfigError('store is required: an open LeaseStore, or settings such as { backend: "sqlite", db: "/path/leases.db" }');
  }
  const backend = isStore(opts.store) ? opts.store.backend : opts.store.backend;
  if (!isStore(opts.store) && opts.store.backend === 'sqlite' && !opts.store.db) {
    throw new InvalidConfigError('store.db is required with backend "sqlite": the path of the database file every candidate on this machine shares');
  }
  const config = resolveElectionConfig({
    lease: opts.lease,
    identity: opts.identity,
    ...resolvedTimings(opts),
    contentionWindowMs: opts.contentionWindowMs,
    backend,
  });
  checkDrainTimeout(opts.drainTimeoutMs, config, 'the release must still be sent');
  if (opts.releaseOnCancel !== undefined && typeof opts.releaseOnCancel !== 'boolean') {
    throw new InvalidConfigError(`releaseOnCancel must be true or false when given, got ${quoted(opts.releaseOnCancel)}`);
  }
  if (opts.signal !== undefined && !isAbortSignal(opts.signal)) {
    throw new InvalidConfigError(`signal must be an AbortSignal when given (aborting it stops the election), got ${quoted(opts.signal)}`);
  }
  if (opts.health !== undefined && !isEligibility(opts.health)) {
    if (typeof opts.health !== 'object' || opts.health === null) {
      throw new InvalidConfigError(
        `health must be probe options ({ probe: { http: "http://127.0.0.1:8080/healthz" } }) or a health signal (new ManualHealth()) when given, got ${quoted(opts.health)}`,
        { field: 'health' },
      );
    }
    resolveProbeOptions(opts.health);
  }
  if (opts.log !== undefined && !isLogger(opts.log)) {
    throw new InvalidConfigError('log must be an object with debug, info, warn and error methods when given (createLogger() makes one)');
  }
  return config;
}

/** What start() uses of a signal; duck-typed, so an AbortSignal from another realm or polyfill passes too. */
function isAbortSignal(s: unknown): s is AbortSignal {
  return typeof s === 'object' && s !== null && typeof (s as AbortSignal).aborted === 'boolean' && typeof (s as AbortSignal).addEventListener === 'function';
}

/** A health signal (ManualHealth, or the app's own object of that shape) rather than probe options. */
function isEligibility(h: ProbeOptions | Eligibility): h is Eligibility {
  const e = h as Partial<Eligibility> | null;
  return typeof e?.eligible === 'function' && typeof e.standAside === 'function' && typeof e.subscribe === 'function';
}

function isStore(s: LeaderElectionOptions['store']): s is LeaseStore {
  return typeof (s as LeaseStore).get === 'function';
}
