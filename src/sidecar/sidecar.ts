import type { AddressInfo } from 'node:net';
import { realClock, type Clock } from '../clock.js';
import { notMoreThanTheFile, publishFileFirst } from './publish-file-first.js';
import type { Logger } from '../log.js';
import type { LeaseStore } from '../backends/lease-store.js';
import { InstrumentedStore } from '../backends/instrumented-store.js';
import { CandidateLoop, type CandidateListener, type LeadershipTerm } from '../election/candidate-loop.js';
import type { ElectionConfig } from '../config/election-options.js';
import { ElectionMetrics } from './metrics.js';
import { StatusPublisher } from './status-publisher.js';
import { toLeaderStatus } from '../status/to-leader-status.js';
import { StatusServer } from './http-server.js';
import { Readiness, liveness, withStatusProblem, withStoreProblem, type ReadyWhen } from './kubelet-probes.js';
import type { PodLabeler } from './pod-labeler.js';
import type { LeaderEndpoints } from './leader-endpoints.js';
import { AppDrain } from './app-drain.js';
import { endOwnership, tellOpenStreams, type OwedReport, type OwnershipEnd } from './ownership-end.js';
import { DrainKey } from './drain-key.js';
import type { Eligibility } from '../health/eligibility.js';
import { AppHealth } from '../health/app-health.js';
import type { ProbeOptions } from '../health/health-settings.js';
import { allEligible } from '../health/all-eligible.js';
import { StatusDirClaim, claimStatusDir } from './status-dir-claim.js';
import { statusWritableFor, type StatusWritable } from './status-writable.js';
import type { LeaderStatus } from '../status/leader-status.js';

/** The elector's reason for a step-down when no renewal succeeded within renewDeadline. */
const RENEW_DEADLINE_REASON = 'no successful renewal within renewDeadline';

/** The election's options come resolved (ElectionConfig, resolveElectionConfig): the sidecar and its elector check none again. */
export interface SidecarOptions extends ElectionConfig {
  store: LeaseStore;
  /** Where status.json and friends go; none when undefined. */
  statusDir?: string;
  /** HTTP address; no server when undefined. */
  listen?: { host: string; port: number };
  readyWhen?: ReadyWhen;
  releaseOnCancel?: boolean;
  /** See CandidateOptions.releaseKeepsAcquireTime. Default false. */
  releaseKeepsAcquireTime?: boolean;
  log: Logger;
  clock?: Clock;
  /** Extra callbacks (e.g. `leasehold run` starting its child); run after the sidecar's own. */
  listener?: CandidateListener;
  /** Keeps leasehold.io/role on this candidate's pod (kubernetes only). */
  podLabeler?: PodLabeler;
  /** Keeps the leader Service's EndpointSlice naming this pod while it leads, and not otherwise (kubernetes only). */
  leaderEndpoints?: LeaderEndpoints;
  /**
   * When a term ends, how long the end-of-term gate waits for the app's `POST
   * /leader/stopped?token=N` (AppDrain) before the release and before a new term; 0 or none: it
   * does not wait. Checked by the caller against maxDrainMs.
   */
  drainTimeoutMs?: number;
  /**
   * The work of a term that this process itself can stop (`leasehold run`'s CMD): the gate waits
   * for `stopped` (at most `boundMs`) instead of the app's POST. Takes the place of drainTimeoutMs.
   */
  termWork?: { stopped: () => Promise<boolean>; boundMs: number };
  /**
   * `POST /leader/stopped` only with the key written to `statusDir/drain-key` (DrainKey): only
   * the app, which reads that directory, can end a drain. `leasehold sidecar` sets it; `run` has
   * no drain to end. Without a statusDir nothing can end a drain.
   */
  drainKey?: boolean;
  /** See CandidateOptions.eligibility (`leasehold run --give-up-after` stands aside through it). */
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
  /** Whether the status files take writes: a candidate whose app cannot read that it leads does not lead. */
  private readonly writable: StatusWritable | null;
  /** Whether start() got as far as the status directory: a failed start has no files to update. */
  private started = false;
  /** This sidecar's hold on its status directory, from start() until stop() has written its last. */
  private claim: StatusDirClaim | null = null;

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
    m.streamsEnded.inc({ reason: 'client_limit' }, 0);
    m.streamsEnded.inc({ reason: 'slow' }, 0);
    // Only with a health source: an alert on "every candidate not eligible" must not count the
    // candidates that have none.
    if (this.appHealth) {
      m.appEligible.set({ name }, 0);
      m.healthStepDowns.inc({ name }, 0);
    }
    this.writable = statusWritableFor(opts.statusDir, name, m, { clock: this.clock, log: this.log, retryMs: opts.retryPeriodMs, retry: () => this.publish() });
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
        // The elector steps down for the app's health with the health's own standing-aside reason;
        // another source's (run --give-up-after) is not the app's health, though it stands aside too.
        if (this.appHealth && !this.appHealth.eligible() && this.appHealth.standAside()?.reason === reason) m.healthStepDowns.inc({ name });
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
      ...this.drainOptions(),
      eligibility: allEligible([this.writable, this.appHealth, opts.eligibility].filter((e): e is Eligibility => e != null)),
      listener,
      log: opts.log,
    });
    this.server = opts.listen
      ? new StatusServer({
          status: () => this.notMoreThanTheFiles(toLeaderStatus(this.elector.snapshot(), this.clock.now())),
          liveness: () => withStoreProblem(opts.store, liveness(this.elector.snapshot(), opts, this.clock.monotonic())),
          readiness: () => withStoreProblem(opts.store, withStatusProblem(this.writable, this.readiness.check(this.elector.snapshot()))),
          registry: m.registry,
          leaderStopped: (tokens, authorization) => this.drain.report(tokens, authorization),
          drain: {
            use: 'this sidecar runs one lease (no --shards): report that the leader work stopped with POST /leader/stopped?token=N',
            refuse: (authorization) => this.drainKey?.refuse(authorization) ?? null,
          },
          streamCounters: {
            opened: () => m.streamsOpen.inc(),
            closed: () => m.streamsOpen.dec(),
            refused: (reason) => m.streamsEnded.inc({ reason }),
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
   * Opens HTTP, claims the status dir (StatusDirInUseError when another sidecar writes it),
   * prepares it (writing "not leader"), starts campaigning. HTTP and the claim first: an
   * address that cannot be bound fails before the directory is even created, and a directory
   * another sidecar writes before any file is written.
   */
  async start(): Promise<AddressInfo | null> {
    const address = this.server && this.opts.listen ? await this.server.listen(this.opts.listen.host, this.opts.listen.port) : null;
    if (this.opts.statusDir !== undefined) await this.claimStatusDir(this.opts.statusDir);
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
      httpStreamsPerClient: this.server?.streams.maxStreamsPerClient ?? null,
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
    this.writable?.close();
    // The last write: this candidate no longer campaigns (`status` must not call it a standby).
    if (this.started) this.publish(this.clock.now());
    await this.claim?.release();
    this.claim = null;
    await Promise.all([this.opts.podLabeler?.flush(2_000), this.opts.leaderEndpoints?.flush(2_000)]);
    await this.server?.close();
    await this.opts.store.close();
  }

  /** Creates the status dir if needed (the claim names it by its inode), then claims it. */
  private async claimStatusDir(dir: string): Promise<void> {
    this.claim = await claimStatusDir(dir, this.log);
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
  private readyToRelease(): Promise<boolean> {
    return endOwnership(
      this.termEnd(() => null),
      this.clock,
      this.log,
    );
  }

  /**
   * The term's end as ownership-end.ts runs it. Written: "not leader" is in the files, or it is
   * not but none of them says a term leads (the term's own write failed before any did), so no
   * reader of them can believe this one leads.
   */
  private termEnd(owed: OwnershipEnd['owed']): OwnershipEnd {
    return {
      written: () => {
        const error = this.publish();
        if (error !== null && this.publisher?.mayShowLeader() !== false) {
          this.log.error('the step-down could not be written to the status files: the lease is left to expire, not released', {
            dir: this.publisher?.dir,
            error,
          });
          return false;
        }
        if (error !== null)
          this.log.warn('the step-down could not be written, but no status file says this term leads: releasing', { dir: this.publisher?.dir, error });
        return true;
      },
      // The streams next: each reader has "not leader" before the next leader can start.
      tellStreams: async () => {
        if (this.server) await tellOpenStreams(this.server.streams, this.clock, this.log, 'streams told "not leader"');
      },
      owed,
    };
  }

  /** What the elector's end-of-term gate waits for: run's CMD, else the app's POST (--drain-timeout), else nothing. */
  private drainOptions(): { drain?: () => Promise<boolean>; drainTimeoutMs?: number } {
    const work = this.opts.termWork;
    if (work) return { drain: work.stopped, drainTimeoutMs: work.boundMs };
    const drainTimeoutMs = this.opts.drainTimeoutMs ?? 0;
    return drainTimeoutMs > 0 ? { drain: () => this.drainApp(drainTimeoutMs), drainTimeoutMs } : {};
  }

  /**
   * The drain (--drain-timeout), whenever a term ends: once "not leader" is where the app reads
   * it (readyToRelease; if it cannot be, the app cannot know, and the answer is no), wait for
   * the app's POST /leader/stopped for the term that ended. The elector bounds the wait by the
   * drain timeout; past it, the lease is left to expire (EndOfTerm.gate): the app has
   * not said its work stopped, so a release could let the next leader start beside it.
   */
  private drainApp(boundMs: number): Promise<boolean> {
    const owed = (): OwedReport | null => {
      const token = this.drain.pending;
      if (token === null) return null;
      // A term no file ever said leads (its first write failed): the app cannot have begun its work.
      if (this.publisher && !this.publisher.showed(token)) return null;
      return { work: 'its leader work', fields: { token }, boundMs, wait: () => this.drain.wait(boundMs) };
    };
    return endOwnership(this.termEnd(owed), this.clock, this.log);
  }

  /**
   * The status files first, then the /leader streams, so a stream never runs ahead of the
   * files. Returns why the files could not be written, or null when they hold this state.
   */
  private publish(stoppedAt: Date | null = null): string | null {
    const status = toLeaderStatus(this.elector.snapshot(), this.clock.now(), stoppedAt);
    const publisher = this.publisher;
    const { error, again } = publishFileFirst(status, {
      write: publisher && ((s) => publisher.publish(s)),
      send: (s) => this.server?.publish(this.notMoreThanTheFiles(s)),
      writable: this.writable,
    });
    return again ? this.publish(stoppedAt) : error;
  }

  /**
   * What HTTP and the streams may say: never more than the files. While the last write failed,
   * the files may say anything up to "not leader" (or hold a term that is over): "leader" is
   * never said there, though the elector may still hold the term until its gate has run.
   */
  private notMoreThanTheFiles(status: LeaderStatus): LeaderStatus {
    return notMoreThanTheFile(status, this.writable, (s) => ({ ...s, isLeader: false, fencingToken: null, validUntil: null }));
  }
}
