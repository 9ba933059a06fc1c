/**
 * The sidecar in shard mode (`leasehold sidecar --shards N`, docs/shards.md): one member of the
 * shard group named by `--lease` (ShardMember, src/shards/), reported as the leader Sidecar
 * reports its elector: `shards.json` in the status directory, `GET /shards` and its stream,
 * `/healthz`, `/readyz`, `/metrics`, and the app's drain per shard. It shares the leader
 * sidecar's HTTP server, stream bounds, metrics registry, atomic writes and status-directory
 * claim.
 *
 * The end-of-term gate, per shard: a shard lost is written to shards.json as not owned (in the
 * member's onShardLost, before anything else happens), then every /shards stream is handed that,
 * then the app's `POST /shards/stopped` is waited for (--drain-timeout), and only then does the
 * member release the shard. When shards.json cannot be written, the gate says no: the shard is
 * not released but kept until it could have expired, as the leader sidecar leaves its lease to
 * expire (Sidecar.readyToRelease). A write that fails also makes the member stand aside
 * (StatusWritable): it gives every shard up and takes none until a write succeeds again.
 */
import type { AddressInfo } from 'node:net';
import { realClock, type Clock } from '../clock.js';
import type { InvalidConfigError } from '../errors.js';
import { notMoreThanTheFile, publishFileFirst } from './publish-file-first.js';
import type { Logger } from '../log.js';
import type { LeaseStore } from '../backends/lease-store.js';
import type { GroupStore } from '../backends/group-store.js';
import { InstrumentedGroupStore } from '../backends/instrumented-store.js';
import type { Timings } from '../config/election-options.js';
import { ShardMember, type ShardListener } from '../shards/shard-member.js';
import type { Eligibility, StandAside } from '../health/eligibility.js';
import { AppHealth } from '../health/app-health.js';
import type { ProbeOptions } from '../health/health-settings.js';
import { allEligible } from '../health/all-eligible.js';
import { toShardsStatus, type ShardsStatus } from '../status/shards-status.js';
import { ShardMetrics } from './metrics.js';
import { StatusServer } from './http-server.js';
import { httpBounds, openDescriptors, openFilesLimit } from './connection-budget.js';
import { shardLiveness, shardReadiness, withStatusProblem, withStoreProblem } from './kubelet-probes.js';
import { ShardEndpoints } from './shard-endpoints.js';
import { ShardDrains } from './shard-drain.js';
import { endOwnership, logReleasing, tellOpenStreams, STREAM_DRAIN_MS, type OwedReport } from './ownership-end.js';
import { DrainKey } from './drain-key.js';
import { ShardsPublisher } from './shards-publisher.js';
import { claimStatusDir, type StatusDirClaim } from './status-dir-claim.js';
import { statusWritableFor, type StatusWritable } from './status-writable.js';

/** The work of a lost shard, as the drain's log lines name it. */
const SHARD_WORK = "the shard's work";
/**
 * The bound on the gate when the app is not waited for (no --drain-timeout): shards.json
 * written and the streams handed the loss, each bounded already (STREAM_DRAIN_MS).
 */
const FILE_GATE_MS = 2 * STREAM_DRAIN_MS;

export interface ShardSidecarOptions extends Timings {
  /** The group's store (openStore's OpenedStore): closed by stop(). */
  store: GroupStore & Pick<LeaseStore, 'close' | 'problem'>;
  /** The group's name (`--lease`). */
  group: string;
  /** The group's shard count (`--shards`): a group whose records say another is refused at start. */
  shards: number;
  /** Member slots (`--max-members`). Default 64. */
  maxMembers?: number;
  identity: string;
  /** Where shards.json goes (and drain-key); none when undefined. */
  statusDir?: string;
  /** HTTP address; no server when undefined. */
  listen?: { host: string; port: number };
  log: Logger;
  clock?: Clock;
  /** Per shard: how long a lost shard's release waits for the app's POST /shards/stopped; 0 or none: not waited for. */
  drainTimeoutMs?: number;
  /** POST /shards/stopped only with the key written to `statusDir/drain-key` (DrainKey); `leasehold sidecar` sets it. */
  drainKey?: boolean;
  /** The app's health (docs/health.md): while it is not eligible, the member leaves (gives its shards up) and takes none. */
  health?: ProbeOptions;
  /** Another source of eligibility, with the same effect. */
  eligibility?: Eligibility;
  /** Extra callbacks, run after the sidecar's own. */
  listener?: ShardListener;
}

/**
 * Not eligible until lifted at start(): the member lists the group at start (a group with another shard
 * count is refused before anything is written) but joins only once the status directory holds
 * its first shards.json, so no shard is owned before the app can read that it is.
 */
class StartHold implements Eligibility {
  private lifted = false;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly since: Date) {}

  lift(): void {
    this.lifted = true;
    for (const l of [...this.listeners]) l();
  }

  eligible(): boolean {
    return this.lifted;
  }

  standAside(): StandAside | null {
    return this.lifted ? null : { reason: 'the sidecar is starting', since: this.since };
  }

  subscribe(onChange: () => void): () => void {
    this.listeners.add(onChange);
    return () => this.listeners.delete(onChange);
  }
}

export class ShardSidecar {
  readonly metrics: ShardMetrics;
  readonly member: ShardMember;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly publisher: ShardsPublisher | null;
  private readonly endpoints: ShardEndpoints | null;
  private readonly server: StatusServer | null;
  private readonly drains: ShardDrains;
  private readonly drainKey: DrainKey | undefined;
  private readonly appHealth: AppHealth | null;
  private readonly startHold: StartHold;
  /** Whether shards.json takes writes: a member whose app cannot read what it owns gives its shards up and takes none. */
  private readonly writable: StatusWritable | null;
  private readonly appDrainMs: number;
  /** Whether start() got as far as the status directory: a failed start has no file to update. */
  private started = false;
  private claim: StatusDirClaim | null = null;
  /** Each publish's number, and the last one every /shards stream was handed (see drainStreams). */
  private published = 0;
  /** The member's turns already added to leasehold_shard_turns_total. */
  private readonly turnsCounted = { planned: 0, quiet: 0 };
  /** A publish is queued for the end of this pass (publishSoon). */
  private publishQueued = false;
  private streamsHave = 0;
  private streamDrain: Promise<void> | null = null;
  /** Losses told so far (a count), each lost shard's number in it, and how many of them shards.json holds. */
  private losses = 0;
  private readonly lossNumber = new Map<number, number>();
  private lossesInFile = 0;

  constructor(private readonly opts: ShardSidecarOptions) {
    this.clock = opts.clock ?? realClock;
    this.log = opts.log;
    this.startHold = new StartHold(this.clock.now());
    const group = opts.group;
    const m = (this.metrics = new ShardMetrics(group, opts.shards));
    this.publisher = opts.statusDir === undefined ? null : new ShardsPublisher(opts.statusDir);
    this.drainKey = opts.drainKey ? new DrainKey(opts.statusDir) : undefined;
    this.drains = new ShardDrains(this.clock, opts.shards, this.drainKey);
    this.appHealth = opts.health === undefined ? null : new AppHealth(opts.health, { clock: this.clock });
    this.appDrainMs = opts.drainTimeoutMs ?? 0;
    // Only with a health source, as the leader sidecar's: an alert on "no app eligible" must not count members that have none.
    if (this.appHealth) m.appEligible.set({ name: group }, 0);
    this.writable = statusWritableFor(opts.statusDir, group, m, { clock: this.clock, log: this.log, retryMs: opts.retryPeriodMs, retry: () => this.publish() });
    const extra = opts.listener ?? {};
    // Counted, not listed: a pass that moves 2,048 shards calls these 2,048 times.
    const owned = () => this.member.ownedCount();
    const listener: ShardListener = {
      // Not written at once: the pass's takes come back in batches, and shards.json (every owned
      // shard's range, fsynced) is written once at the turn's end (onChange), not once per batch
      // (a pass of 2,048 takes wrote 1 MB 8 times: docs/benchmarks.md). A gain told late is only
      // work begun late.
      onShardGained: (term) => {
        m.shardChanges.inc({ group, event: 'gained' });
        m.shardsOwned.set({ group }, owned());
        this.drains.gained(term.shard, term.token);
        extra.onShardGained?.(term);
      },
      // Before anything else happens to the shard: "not owned" reaches shards.json and the
      // streams first. The write is the pass's one (publishSoon); the drain (drainShard), which
      // runs before any release, writes it itself if it has not gone out yet.
      onShardLost: (shard, token, reason) => {
        m.shardChanges.inc({ group, event: 'lost' });
        m.shardsOwned.set({ group }, owned());
        this.drains.lost(shard, token);
        this.lossNumber.set(shard, ++this.losses);
        this.publishSoon();
        extra.onShardLost?.(shard, token, reason);
      },
      onRenewed: (validUntil) => {
        this.publishSoon();
        extra.onRenewed?.(validUntil);
      },
      onChange: () => {
        const s = this.member.snapshot();
        m.shardsOwned.set({ group }, s.owned.length);
        m.shardsOrphaned.set({ group }, s.orphaned);
        m.groupMembers.set({ group }, s.members);
        for (const turn of ['planned', 'quiet'] as const) {
          m.shardTurns.inc({ group, turn }, s.turns[turn] - this.turnsCounted[turn]);
          this.turnsCounted[turn] = s.turns[turn];
        }
        this.publishSoon();
        extra.onChange?.();
      },
    };
    // The gate of each lost shard (drainShard), when there is a file, a stream or an app to wait for.
    const gate =
      opts.statusDir !== undefined || opts.listen !== undefined || this.appDrainMs > 0
        ? {
            drain: (shard: number, token: number, bound: AbortSignal) => this.drainShard(shard, token, bound),
            drainTimeoutMs: this.appDrainMs > 0 ? this.appDrainMs : FILE_GATE_MS,
          }
        : {};
    this.member = new ShardMember({
      leaseDurationMs: opts.leaseDurationMs,
      renewDeadlineMs: opts.renewDeadlineMs,
      retryPeriodMs: opts.retryPeriodMs,
      store: new InstrumentedGroupStore(opts.store, m.backendRequests, { reads: m.groupReads, records: m.groupRecordsRead }),
      group,
      shards: opts.shards,
      identity: opts.identity,
      ...(opts.maxMembers === undefined ? {} : { maxMembers: opts.maxMembers }),
      clock: this.clock,
      log: opts.log,
      eligibility: allEligible([this.startHold, this.writable, this.appHealth, opts.eligibility].filter((e): e is Eligibility => e != null)),
      listener,
      ...gate,
    });
    if (opts.listen) {
      // The server's bounds, computed here so the /shards streams get the same stream bound.
      const bounds = httpBounds(openFilesLimit(), openDescriptors());
      const counters = {
        opened: () => m.streamsOpen.inc(),
        closed: () => m.streamsOpen.dec(),
        refused: (reason: 'limit' | 'client_limit') => m.streamsEnded.inc({ reason }),
        dropped: () => m.streamsEnded.inc({ reason: 'slow' }),
      };
      this.endpoints = new ShardEndpoints(
        {
          status: () => this.notMoreThanTheFile(toShardsStatus(this.member.snapshot(), this.clock.now())),
          stopped: (shards, tokens, authorization) => this.drains.report(shards, tokens, authorization),
        },
        counters,
        { maxStreams: bounds.maxStreams },
      );
      this.server = new StatusServer({
        liveness: () => withStoreProblem(opts.store, shardLiveness(this.member.snapshot(), opts, this.clock.monotonic())),
        readiness: () => withStoreProblem(opts.store, withStatusProblem(this.writable, shardReadiness(this.member.snapshot()))),
        registry: m.registry,
        bounds,
        routes: this.endpoints,
        drain: {
          use: "this sidecar runs a shard group (--shards): report that a shard's work stopped with POST /shards/stopped?shard=S&token=T",
          refuse: (authorization) => this.drainKey?.refuse(authorization) ?? null,
        },
        streamCounters: counters,
      });
    } else {
      this.endpoints = null;
      this.server = null;
    }
    this.appHealth?.subscribe(() => {
      m.appEligible.set({ name: group }, this.appHealth!.eligible() ? 1 : 0);
      this.publish();
    });
  }

  /**
   * Opens HTTP, reads the group once (InvalidConfigError for a group whose records say another
   * shard count: nothing is written then), claims and prepares the status directory, writes the
   * first shards.json, and only then lets the member join.
   */
  async start(): Promise<AddressInfo | null> {
    const address = this.server && this.opts.listen ? await this.server.listen(this.opts.listen.host, this.opts.listen.port) : null;
    await this.member.start();
    if (this.opts.statusDir !== undefined) this.claim = await claimStatusDir(this.opts.statusDir, this.log);
    this.publisher?.prepare();
    this.drainKey?.publish();
    this.started = true;
    this.log.info('joining the shard group', {
      backend: this.opts.store.backend,
      store: this.opts.store.location,
      shards: this.opts.shards,
      maxMembers: this.opts.maxMembers ?? null,
      leaseDuration: this.opts.leaseDurationMs,
      renewDeadline: this.opts.renewDeadlineMs,
      retryPeriod: this.opts.retryPeriodMs,
      drainTimeout: this.appDrainMs,
      listen: address ? `${address.address}:${address.port}` : null,
      statusDir: this.opts.statusDir ?? null,
      health: this.appHealth?.description ?? null,
    });
    this.appHealth?.start();
    this.startHold.lift();
    // The first file: no shard owned yet (a file an earlier process left is replaced).
    // One that fails makes the member stand aside (StatusWritable) before its first turn.
    this.publish();
    return address;
  }

  /** Leaves the group (every shard through its gate, then the slot released), writes the last shards.json, closes HTTP and the store. */
  async stop(): Promise<void> {
    await this.member.stop();
    this.appHealth?.stop();
    this.writable?.close();
    if (this.started) this.publish(this.clock.now());
    await this.claim?.release();
    this.claim = null;
    this.endpoints?.streams.endAll();
    await this.server?.close();
    await this.opts.store.close();
  }

  /** Resolves with the refusal when the member leaves the group on its own (ShardMember.refused); never otherwise. */
  get refused(): Promise<InvalidConfigError> {
    return this.member.refused;
  }

  /**
   * The gate of one lost shard, run by the member before it releases the shard. "Not owned" on
   * the status volume first: the loss's own write is tried once more (space or descriptors may
   * be back); if it still fails, shards.json may list the shard with a validUntil ahead, and a
   * release would let the next owner start while this app still works on it: false, and the
   * member keeps the shard until it could have expired. Then every /shards stream is handed the
   * loss, then the app's POST /shards/stopped is waited for (--drain-timeout: `bound`, the
   * member's one bound for every shard its pass gave up, so no timer per shard here).
   */
  private drainShard(shard: number, token: number, bound: AbortSignal): Promise<boolean> {
    return endOwnership(
      {
        written: () => this.lossWritten(shard, token),
        tellStreams: () => this.drainStreams(),
        owed: () => this.owedReport(shard, token, bound),
      },
      this.clock,
      this.log,
    );
  }

  private lossWritten(shard: number, token: number): boolean {
    // The pass's one publish (publishSoon) runs before the drains: where it wrote this loss, the
    // file holds it and is not built again for each shard (a leave of 2,048 shards built it
    // 2,048 times, docs/benchmarks.md "Shard writes at N = 4096").
    const loss = this.lossNumber.get(shard) ?? Infinity;
    this.lossNumber.delete(shard);
    const error = loss <= this.lossesInFile ? null : this.publish();
    if (error === null) return true;
    this.log.error('a lost shard could not be written to shards.json: it is left to expire, not released', {
      shard,
      token,
      dir: this.publisher?.dir,
      error,
    });
    return false;
  }

  private owedReport(shard: number, token: number, bound: AbortSignal): OwedReport | null {
    if (this.appDrainMs <= 0) return null;
    if (!this.drains.pending(shard, token)) {
      // The app read the loss (shards.json or a stream) and reported before the gate reached
      // this shard, as it often does when many shards move at once: logged like a waited report,
      // so the log shows every release made on the app's word.
      if (this.drains.reportedStopped(shard, token)) logReleasing(this.log, SHARD_WORK, { shard, token, waitedMs: 0 });
      return null;
    }
    return { work: SHARD_WORK, fields: { shard, token }, boundMs: this.appDrainMs, wait: () => this.drains.wait(shard, token, bound) };
  }

  /**
   * Hands every /shards stream what was published up to now (EventStreams.drain), once for all
   * the shards lost together: a leave gives up every shard at once, and one pass covers them.
   */
  private async drainStreams(): Promise<void> {
    const want = this.published;
    while (this.endpoints && this.streamsHave < want) {
      if (this.streamDrain) {
        await this.streamDrain;
        continue;
      }
      const upTo = this.published;
      const endpoints = this.endpoints;
      this.streamDrain = (async () => {
        await tellOpenStreams(endpoints.streams, this.clock, this.log, 'streams told of the lost shards');
        this.streamsHave = Math.max(this.streamsHave, upTo);
      })().finally(() => (this.streamDrain = null));
      await this.streamDrain;
    }
  }

  /**
   * One publish for every change of the member's pass: a leave ends all its shards in one loop
   * and a join's takes come back together, and one fsynced shards.json per shard made a leave of
   * a hundred shards take a second (docs/benchmarks.md, "Shard groups"). Safe to defer: a loss is
   * written by drainShard before its release whatever this does, and a gain told late is only
   * work begun late.
   */
  private publishSoon(): void {
    if (this.publishQueued) return;
    this.publishQueued = true;
    queueMicrotask(() => {
      this.publishQueued = false;
      this.publish();
    });
  }

  /**
   * shards.json first, then the /shards streams, so a stream never runs ahead of the file.
   * Returns why the file could not be written, or null when it holds this state.
   */
  private publish(stoppedAt: Date | null = null): string | null {
    const losses = this.losses;
    const status = toShardsStatus(this.member.snapshot(), this.clock.now(), stoppedAt);
    const publisher = this.started ? this.publisher : null;
    const { error, again } = publishFileFirst(status, {
      write: publisher && ((s) => publisher.publish(s)),
      send: (s) => {
        this.published += 1;
        this.endpoints?.publish(this.notMoreThanTheFile(s));
      },
      writable: this.writable,
    });
    // The file (or, without a status directory, nothing to write) now holds every loss told before the snapshot.
    if (error === null && (publisher !== null || this.publisher === null)) this.lossesInFile = Math.max(this.lossesInFile, losses);
    return again ? this.publish(stoppedAt) : error;
  }

  /**
   * What GET /shards and its streams may say: never more than shards.json. While the last write
   * failed, the file may list fewer shards, or none that are current: no shard is said to be
   * owned there, though the member may keep some until their gates have run.
   */
  private notMoreThanTheFile(status: ShardsStatus): ShardsStatus {
    return notMoreThanTheFile(status, this.writable, (s) => ({ ...s, owned: [], ownedSelector: null, validUntil: null }));
  }
}
