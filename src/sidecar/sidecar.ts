import type { AddressInfo } from 'node:net';
import { realClock, type Clock } from '../clock.js';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { LeaseStore } from '../backends/lease-store.js';
import { InstrumentedStore } from '../backends/instrumented-store.js';
import { CandidateLoop, type CandidateListener, type LeadershipTerm } from '../election/candidate-loop.js';
import type { Timings } from '../config/election-options.js';
import { ElectionMetrics } from './metrics.js';
import { StatusPublisher } from './status-publisher.js';
import { toLeaderStatus } from '../status/to-leader-status.js';
import { StatusServer } from './http-server.js';
import { Readiness, liveness, withStoreProblem, type ReadyWhen } from './kubelet-probes.js';
import type { PodLabeler } from './pod-labeler.js';
import type { LeaderEndpoints } from './leader-endpoints.js';
import { AppDrain } from './app-drain.js';
import { DrainKey } from './drain-key.js';
import type { Eligibility } from '../health/eligibility.js';
import { AppHealth } from '../health/app-health.js';
import type { ProbeOptions } from '../health/health-settings.js';
import { allEligible } from '../health/all-eligible.js';

/** The elector's reason for a step-down when no renewal succeeded within renewDeadline. */
const RENEW_DEADLINE_REASON = 'no successful renewal within renewDeadline';

/**
 * How long a release waits for the /leader streams to take "not leader"; a stream that has
 * not by then is closed. Short: a reader that does not read must not hold up the handoff.
 */
const STREAM_DRAIN_MS = 500;

export interface SidecarOptions extends Timings {
  store: LeaseStore;
  lease: string;
  identity: string;
  /** Where status.json and friends go; none when undefined. */
  statusDir?: string;
  /** HTTP address; no server when undefined. */
  listen?: { host: string; port: number };
  readyWhen?: ReadyWhen;
  releaseOnCancel?: boolean;
  /** See CandidateOptions.releaseKeepsAcquireTime. Default false. */
  releaseKeepsAcquireTime?: boolean;
  /** See CandidateOptions.contentionWindowMs. Default 32 ms. */
  contentionWindowMs?: number;
  log: Logger;
  clock?: Clock;
  /** Extra callbacks (e.g. `leasehold run` starting its child); run after the sidecar's own. */
  listener?: CandidateListener;
  /** Keeps leasehold.io/role on this candidate's pod (kubernetes only). */
  podLabeler?: PodLabeler;
  /** Keeps the leader Service's EndpointSlice naming this pod while it leads, and not otherwise (kubernetes only). */
  leaderEndpoints?: LeaderEndpoints;
  /**
   * After a graceful step-down, how long the release waits for the app's `POST
   * /leader/stopped?token=N` (AppDrain); 0 or none: it does not wait. Checked by the caller
   * against maxDrainMs; each wait is also cut where it would pass that bound.
   */
  drainTimeoutMs?: number;
  /**
   * `POST /leader/stopped` only with the key written to `statusDir/drain-key` (DrainKey): only
   * the app, which reads that directory, can end a drain. `leasehold sidecar` sets it; `run` has
   * no drain to end. Without a statusDir nothing can end a drain.
   */
  drainKey?: boolean;
  /** See CandidateOptions.eligibility (`leasehold run --give-up-after` stands back through it). */
  eligibility?: Eligibility;
  /** The app's health (docs/health.md): while it is not eligible, this candidate stands aside. None: always campaigns. */
  health?: ProbeOptions;
}

/**
 * Wires one elector to everything that reports on it: the status volume, metrics, HTTP and
 * logs. Every leadership change goes to the status files first, so the app hears of a
 * step-down before the lease is released.
 */
export class Sidecar {
  readonly metrics = new ElectionMetrics();
  readonly elector: CandidateLoop;
  private readonly publisher: StatusPublisher | null;
  private readonly server: StatusServer | null;
  private readonly readiness: Readiness;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly drain: AppDrain;
  private readonly drainKey: DrainKey | undefined;
  private readonly appHealth: AppHealth | null;
  /** Whether start() got as far as the status directory: a failed start has no files to update. */
  private started = false;

  constructor(private readonly opts: SidecarOptions) {
    this.clock = opts.clock ?? realClock;
    this.log = opts.log;
    this.readiness = new Readiness(opts.readyWhen ?? 'leader');
    this.publisher = opts.statusDir === undefined ? null : new StatusPublisher(opts.statusDir);
    this.drainKey = opts.drainKey ? new DrainKey(opts.statusDir) : undefined;
    this.drain = new AppDrain(this.clock, this.drainKey);
    this.appHealth = opts.health === undefined ? null : new AppHealth(opts.health, { clock: this.clock });
    const name = opts.lease;
    const m = this.metrics;
    const extra = opts.listener ?? {};
    // Every series exists from the start, so dashboards and alerts see zeros, not gaps.
    m.masterStatus.set({ name }, 0);
    m.validUntil.set({ lease: name }, 0);
    m.slowpath.inc({ name }, 0);
    m.renewFailures.inc({ lease: name }, 0);
    m.observedLeaderChanges.inc({ lease: name }, 0);
    m.takeover.zero({ lease: name });
    m.streamsEnded.inc({ reason: 'limit' }, 0);
    m.streamsEnded.inc({ reason: 'slow' }, 0);
    // Only with a health source: an alert on "every candidate not eligible" must not count the
    // candidates that have none.
    if (this.appHealth) {
      m.appEligible.set({ name }, 0);
      m.healthStepDowns.inc({ name }, 0);
    }
    const listener: CandidateListener = {
      onStartedLeading: (term) => {
        m.masterStatus.set({ name }, 1);
        m.leadershipChanges.inc({ lease: name, event: 'acquired' });
        if (term.sinceFreeMs !== undefined) m.takeover.observe({ lease: name }, term.sinceFreeMs / 1000);
        this.drain.started(term.token);
        this.termMetrics(term);
        this.publish();
        opts.podLabeler?.set('leader', term.token);
        opts.leaderEndpoints?.lead(term.token);
        extra.onStartedLeading?.(term);
      },
      onRenewed: (term) => {
        this.termMetrics(term);
        this.publish();
        extra.onRenewed?.(term);
      },
      onStoppedLeading: (reason) => {
        // A renewal still unanswered at renewDeadline failed too, though no error came back
        // before the step-down: counted, so the renewal alert sees a store that hangs.
        if (reason.startsWith(RENEW_DEADLINE_REASON)) m.renewFailures.inc({ lease: name });
        // The elector steps down for the app's health with the standing-aside reason itself.
        if (this.appHealth && this.elector.snapshot().standingAside?.reason === reason) m.healthStepDowns.inc({ name });
        m.masterStatus.set({ name }, 0);
        m.validUntil.set({ lease: name }, 0);
        m.leadershipChanges.inc({ lease: name, event: 'lost' });
        this.drain.stopped();
        this.publish();
        opts.podLabeler?.set('follower');
        opts.leaderEndpoints?.notLeading();
        extra.onStoppedLeading?.(reason);
      },
      onNewLeader: (holder, record) => {
        m.observedLeaderChanges.inc({ lease: name });
        if (!this.elector.isLeader()) m.fencingToken.set({ lease: name }, record.leaseTransitions);
        this.publish();
        extra.onNewLeader?.(holder, record);
      },
      onRenewFailed: (reason) => {
        m.renewFailures.inc({ lease: name });
        extra.onRenewFailed?.(reason);
      },
      onSlowPath: () => {
        m.slowpath.inc({ name });
        extra.onSlowPath?.();
      },
    };
    this.elector = new CandidateLoop({
      ...opts,
      store: new InstrumentedStore(opts.store, m.backendRequests),
      clock: this.clock,
      releaseOnCancel: opts.releaseOnCancel ?? true,
      releaseGate: () => this.readyToRelease(),
      ...((opts.drainTimeoutMs ?? 0) > 0 ? { drainBeforeRelease: () => this.drainApp() } : {}),
      eligibility: allEligible([this.appHealth, opts.eligibility].filter((e): e is Eligibility => e != null)),
      listener,
      log: opts.log,
    });
    this.server = opts.listen
      ? new StatusServer({
          status: () => toLeaderStatus(this.elector.snapshot(), this.clock.now()),
          liveness: () => withStoreProblem(opts.store, liveness(this.elector.snapshot(), opts, this.clock.monotonic())),
          readiness: () => withStoreProblem(opts.store, this.readiness.check(this.elector.snapshot())),
          registry: m.registry,
          leaderStopped: (tokens, authorization) => this.drain.report(tokens, authorization),
          streamCounters: {
            opened: () => m.streamsOpen.inc(),
            closed: () => m.streamsOpen.dec(),
            refused: () => m.streamsEnded.inc({ reason: 'limit' }),
            dropped: () => m.streamsEnded.inc({ reason: 'slow' }),
          },
        })
      : null;
    // Every change of the app's health reaches the files, /leader and its streams at once: a
    // standby standing aside has no election event to carry it.
    this.appHealth?.subscribe(() => {
      m.appEligible.set({ name }, this.appHealth!.eligible() ? 1 : 0);
      this.publish();
    });
  }

  /**
   * Opens HTTP, prepares the status dir (writing "not leader"), starts campaigning. HTTP
   * first: an address that cannot be bound fails before any file is written.
   */
  async start(): Promise<AddressInfo | null> {
    const address = this.server && this.opts.listen ? await this.server.listen(this.opts.listen.host, this.opts.listen.port) : null;
    this.publisher?.prepare();
    this.drainKey?.publish();
    this.started = true;
    this.publish();
    this.opts.podLabeler?.set('follower');
    this.opts.leaderEndpoints?.notLeading();
    this.log.info('campaigning', {
      backend: this.opts.store.backend,
      store: this.opts.store.location,
      leaseDuration: this.opts.leaseDurationMs,
      renewDeadline: this.opts.renewDeadlineMs,
      retryPeriod: this.opts.retryPeriodMs,
      listen: address ? `${address.address}:${address.port}` : null,
      httpConnections: this.server?.bounds.maxConnections ?? null,
      httpStreams: this.server?.bounds.maxStreams ?? null,
      statusDir: this.opts.statusDir ?? null,
      health: this.appHealth?.description ?? null,
    });
    this.appHealth?.start();
    this.elector.start();
    return address;
  }

  /** Steps down (status files say so first), releases if configured, closes HTTP and the store. */
  async stop(): Promise<void> {
    await this.elector.stop();
    this.appHealth?.stop();
    // The last write: this candidate no longer campaigns (`status` must not call it a standby).
    if (this.started) this.publish(this.clock.now());
    await Promise.all([this.opts.podLabeler?.flush(2_000), this.opts.leaderEndpoints?.flush(2_000)]);
    await this.server?.close();
    await this.opts.store.close();
  }

  private termMetrics(term: LeadershipTerm): void {
    this.metrics.fencingToken.set({ lease: this.opts.lease }, term.token);
    this.metrics.validUntil.set({ lease: this.opts.lease }, term.validUntil.getTime() / 1000);
  }

  /**
   * Asked by the elector on shutdown, after the step-down and before the release: "not leader"
   * must be on the status volume first. The step-down's own write is tried once more (space
   * or descriptors may be back); if it still fails, the files may say "leader" with a
   * validUntil ahead, and a release would let the next leader start while this one's app
   * still believes it leads. The lease is left to expire instead, which others judge by
   * leaseDuration, longer than renewDeadline and so past that validUntil. Then every /leader
   * stream is handed "not leader" (see LeaderStreams.drain).
   */
  private async readyToRelease(): Promise<boolean> {
    const error = this.publish();
    if (error !== null) {
      this.log.error('the step-down could not be written to the status files: the lease is left to expire, not released', {
        dir: this.publisher?.dir,
        error,
      });
      return false;
    }
    // The streams next: each reader has "not leader" before the next leader can start.
    if (this.server && this.server.streams.size > 0) {
      const started = this.clock.monotonic();
      const { streams, closed } = await this.server.drainStreams(STREAM_DRAIN_MS);
      this.log.info('streams told "not leader"', { streams, closed, ms: Math.round(this.clock.monotonic() - started) });
    }
    return true;
  }

  /**
   * The drain (--drain-timeout), after a graceful step-down: once "not leader" is where the app
   * reads it (readyToRelease; if it cannot be, the lease is left to expire), wait for the app's
   * POST /leader/stopped for the term that ended, at most the drain timeout and never past
   * maxDrainMs after the last renewal, so the release is still sent before the renew deadline.
   * An app that does not say so in time is logged and the lease released anyway: the wait is for
   * a clean handoff, not a guarantee (the fencing token is that).
   */
  private async drainApp(): Promise<boolean> {
    const release = this.opts.releaseOnCancel ?? true;
    if (!release || !(await this.readyToRelease())) return false;
    const token = this.drain.pending;
    if (token === null) return true;
    const limitMs = this.opts.drainTimeoutMs ?? 0;
    const last = this.elector.snapshot().lastRenewMonotonic;
    const started = this.clock.monotonic();
    const leftMs = last === null ? 0 : last + this.opts.renewDeadlineMs - Math.floor(this.opts.renewDeadlineMs / 2) - started;
    const boundMs = Math.max(0, Math.min(limitMs, leftMs));
    this.log.info('draining: waiting for the app to say its leader work stopped', { token, boundMs: Math.round(boundMs) });
    const stopped = await this.drain.wait(boundMs);
    const waitedMs = Math.round(this.clock.monotonic() - started);
    if (stopped) this.log.info('the app stopped its leader work: releasing', { token, waitedMs });
    else this.log.warn('the app did not say its leader work stopped within the drain timeout: releasing anyway', { token, waitedMs, drainTimeoutMs: limitMs });
    return true;
  }

  /**
   * The status files first, then the /leader streams, so a stream never runs ahead of the
   * files. Returns why the files could not be written, or null when they hold this state.
   */
  private publish(stoppedAt: Date | null = null): string | null {
    const status = toLeaderStatus(this.elector.snapshot(), this.clock.now(), stoppedAt);
    let error: string | null = null;
    try {
      this.publisher?.publish(status);
    } catch (err) {
      error = describeError(err);
      this.log.error('cannot write status files', { dir: this.publisher?.dir, error });
    }
    this.server?.publish(status);
    return error;
  }
}
