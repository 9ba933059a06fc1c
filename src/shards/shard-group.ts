/**
 * Shard groups inside a Node process, without a sidecar (docs/shards.md, "In a Node app"): the
 * same member the sidecar runs, with callbacks in the shape of LeaderElection's, one per shard.
 * The package root exports it: `import { ShardGroup, shardOf } from 'leasehold'`.
 */
import { openStore, type StoreSettings } from '../backends/open-store.js';
import type { GroupStore } from '../backends/group-store.js';
import { MAX_MEMBER_SLOTS } from '../backends/group-store.js';
import { InvalidConfigError } from '../errors.js';
import { createLogger, guardedLogger, isLogger, type Logger } from '../log.js';
import {
  checkDrainTimeout,
  maxDrainMs,
  quoted,
  resolvedTimings,
  withStoreTimeouts,
  validateIdentity,
  validateTimings,
  type Timings,
} from '../config/election-options.js';
import { realClock, type Clock } from '../clock.js';
import type { Eligibility } from '../health/eligibility.js';
import { runAppCallback } from '../holder/app-callback.js';
import { ShardMember, type ShardMemberSnapshot } from './shard-member.js';
import { checkShardCount, ownedShardsSelector, shardBounds, shardOf, type ShardBounds } from './key-to-shard.js';

/** What a shard's work is handed when this process starts owning it, with the shard's range and KEP-5866 selector (start, end, selector). */
export interface ShardOwnership extends Readonly<ShardBounds> {
  readonly shard: number;
  /** This ownership's fencing token for the shard: send it with every write the resource fences. */
  readonly token: number;
  /** Aborts the moment this process stops owning the shard: stop its work. */
  readonly signal: AbortSignal;
  /** When this ownership stops counting unless the member's heartbeat renews it. */
  validUntil(): Date;
}

export interface ShardCallbacks {
  /**
   * This process owns `ownership.shard` now. Start its work; end it when `ownership.signal`
   * aborts. The promise it returns, if any, is the work: when the shard moves away it is waited
   * for (up to drainTimeoutMs) before the shard is released to its next owner.
   */
  onShardGained(ownership: ShardOwnership): void | Promise<void>;
  /** This process no longer owns `shard`; its signal has aborted. A promise it returns is waited for too. */
  onShardLost?(shard: number, reason: string): void | Promise<void>;
}

export interface ShardGroupOptions {
  /** Where the group lives: an open store that keeps groups (openStore's), or settings to open one (closed by stop()). */
  store: GroupStore | (Partial<StoreSettings> & Pick<StoreSettings, 'backend'>);
  /** The group's name, shared by its members (a DNS-1123 subdomain; 63 characters at most on Kubernetes). */
  group: string;
  /** The number of shards, 1 to 4096, the same for every member: a group whose records say another is refused. */
  shards: number;
  /** This process's name, unique among the members. */
  identity: string;
  /** How many member slots the group has. Default 64. */
  maxMembers?: number;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * How long a moving shard's work is waited for before it is kept until it could have expired.
   * Default and most: renewDeadlineMs/2 − retryPeriodMs, as LeaderElection's.
   */
  drainTimeoutMs?: number;
  /** While it says not eligible, this member gives its shards up and takes none (docs/health.md). */
  health?: Eligibility;
  /** Aborting it stops the membership, as stop() does. */
  signal?: AbortSignal;
  callbacks: ShardCallbacks;
  log?: Logger;
}

interface Held {
  controller: AbortController;
  work: Promise<void>;
  stopped: Promise<void>;
  validUntil: Date;
}

export class ShardGroup {
  private readonly member: ShardMember;
  private readonly held = new Map<number, Held>();
  private stopping: Promise<void> | null = null;

  private constructor(
    private readonly opts: ShardGroupOptions,
    private readonly store: GroupStore,
    private readonly ownsStore: boolean,
    private readonly log: Logger,
    private readonly clock: Clock,
    { timings, drainTimeoutMs }: CheckedOptions,
  ) {
    this.member = new ShardMember({
      ...timings,
      store,
      group: opts.group,
      shards: opts.shards,
      identity: opts.identity,
      maxMembers: opts.maxMembers,
      clock,
      log,
      eligibility: opts.health,
      drainTimeoutMs,
      drain: (shard) => this.workStopped(shard),
      listener: {
        onShardGained: (t) => {
          const controller = new AbortController();
          let settle!: () => void;
          const h: Held = { controller, work: new Promise<void>((r) => (settle = r)), stopped: Promise.resolve(), validUntil: t.validUntil };
          this.held.set(t.shard, h);
          const ownership: ShardOwnership = {
            shard: t.shard,
            token: t.token,
            ...shardBounds(t.shard, opts.shards),
            signal: controller.signal,
            validUntil: () => new Date(h.validUntil.getTime()),
          };
          void Promise.resolve().then(() => runAppCallback(this.log, 'onShardGained', () => opts.callbacks.onShardGained(ownership), settle));
        },
        onRenewed: (validUntil) => {
          for (const h of this.held.values()) if (!h.controller.signal.aborted) h.validUntil = validUntil;
        },
        onShardLost: (shard, _token, reason) => {
          const h = this.held.get(shard);
          if (!h) return;
          h.validUntil = new Date(Math.min(h.validUntil.getTime(), this.clock.now().getTime()));
          h.controller.abort(new Error(`stopped owning shard ${shard}: ${reason}`));
          let settle!: () => void;
          h.stopped = new Promise<void>((r) => (settle = r));
          runAppCallback(this.log, 'onShardLost', () => opts.callbacks.onShardLost?.(shard, reason), settle);
        },
      },
    });
  }

  /** Validates the options (InvalidConfigError naming the rule), opens the store if given settings, joins, and returns. */
  static async start(opts: ShardGroupOptions, internal: { clock?: Clock } = {}): Promise<ShardGroup> {
    const checked = checkOptions(opts);
    const log = opts.log ? guardedLogger(opts.log) : createLogger({ level: 'error', base: { group: opts.group, identity: opts.identity } });
    const owns = !isGroupStore(opts.store);
    const store = isGroupStore(opts.store) ? opts.store : await openStore({ db: '', log, ...withStoreTimeouts(opts.store, checked.timings) });
    const g = new ShardGroup(opts, store, owns, log, internal.clock ?? realClock, checked);
    try {
      await g.member.start();
    } catch (err) {
      if (owns) await (store as unknown as { close(): Promise<void> }).close();
      throw err;
    }
    opts.signal?.addEventListener('abort', () => void g.stop(), { once: true });
    return g;
  }

  /** The shards this process owns now, with their tokens, ranges and selectors (as shards.json lists them). */
  get owned(): ({ shard: number; token: number } & ShardBounds)[] {
    return this.member.snapshot().owned.map((o) => ({ ...o, ...shardBounds(o.shard, this.opts.shards) }));
  }

  /**
   * One KEP-5866 selector for every shard this process owns now, to list and watch only their
   * objects (docs/shards.md: filter again by shardOf where the API server's gate is off); null
   * while it owns none, since an empty selector selects everything.
   */
  ownedSelector(): string | null {
    return ownedShardsSelector(
      this.member.snapshot().owned.map((o) => o.shard),
      this.opts.shards,
    );
  }

  /** The member's whole state: session, members, validUntil, standing aside. The caller's own copy, `owned` included. */
  snapshot(): Omit<ShardMemberSnapshot, 'owned'> & { owned: { shard: number; token: number }[] } {
    const s = this.member.snapshot();
    // The member shares its owned list between snapshots (frozen): the library's caller gets one it may change.
    return { ...s, owned: s.owned.map((o) => ({ ...o })) };
  }

  /** Which shard of this group `key` belongs to (shardOf(key, shards)). */
  shardOf(key: string): number {
    return shardOf(key, this.opts.shards);
  }

  /** Leaves the group: every shard's signal aborts, its work is waited for, it is released; then the slot. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.member.stop();
      if (this.ownsStore) await (this.store as unknown as { close(): Promise<void> }).close();
    })();
    return this.stopping;
  }

  private workStopped(shard: number): Promise<void> {
    const h = this.held.get(shard);
    if (!h) return Promise.resolve();
    return Promise.all([h.work, h.stopped]).then(() => {
      if (this.held.get(shard) === h) this.held.delete(shard);
    });
  }
}

const KNOWN = new Set([
  'store',
  'group',
  'shards',
  'identity',
  'maxMembers',
  'leaseDurationMs',
  'renewDeadlineMs',
  'retryPeriodMs',
  'drainTimeoutMs',
  'health',
  'signal',
  'callbacks',
  'log',
]);

/** The options' values once checked: the timings with their defaults, and the drain's bound. */
interface CheckedOptions {
  timings: Timings;
  drainTimeoutMs: number;
}

/** Checks every option once, before anything is opened, and resolves what the member is given. */
function checkOptions(opts: ShardGroupOptions): CheckedOptions {
  if (typeof opts !== 'object' || opts === null) throw new InvalidConfigError('ShardGroup.start needs an options object');
  const unknown = Object.keys(opts).find((k) => !KNOWN.has(k));
  if (unknown) throw new InvalidConfigError(`unknown option ${quoted(unknown)}: ShardGroup.start takes ${[...KNOWN].join(', ')}`);
  if (typeof opts.callbacks !== 'object' || opts.callbacks === null || typeof opts.callbacks.onShardGained !== 'function') {
    throw new InvalidConfigError('callbacks.onShardGained is required: a function that starts the work of the shard it is given');
  }
  if (opts.callbacks.onShardLost !== undefined && typeof opts.callbacks.onShardLost !== 'function')
    throw new InvalidConfigError('callbacks.onShardLost must be a function when given');
  if (typeof opts.store !== 'object' || opts.store === null)
    throw new InvalidConfigError('store is required: an open store, or settings such as { backend: "sqlite", db: "/path/leases.db" }');
  if (!isGroupStore(opts.store) && opts.store.backend === 'sqlite' && !opts.store.db)
    throw new InvalidConfigError('store.db is required with backend "sqlite"');
  if (typeof opts.group !== 'string' || opts.group === '') throw new InvalidConfigError('group is required: the name every member of the group shares');
  checkShardCount(opts.shards);
  const k = opts.maxMembers;
  if (k !== undefined && (!Number.isInteger(k) || k < 1 || k > MAX_MEMBER_SLOTS))
    throw new InvalidConfigError(`maxMembers must be a whole number from 1 to ${MAX_MEMBER_SLOTS}, got ${quoted(k)}`);
  validateIdentity(opts.identity);
  const timings = resolvedTimings(opts);
  validateTimings(timings, 'option');
  checkDrainTimeout(opts.drainTimeoutMs, timings, 'a shard must be let go');
  if (opts.log !== undefined && !isLogger(opts.log)) throw new InvalidConfigError('log must be an object with debug, info, warn and error methods when given');
  return { timings, drainTimeoutMs: opts.drainTimeoutMs ?? Math.max(0, maxDrainMs(timings)) };
}

function isGroupStore(s: ShardGroupOptions['store']): s is GroupStore {
  return typeof (s as GroupStore).listGroup === 'function';
}
