/**
 * A seeded randomized simulation of 2-5 electors campaigning for one lease in one in-memory
 * store, with faults on the store (latency, hangs, lost answers, late writes, deletions), on the
 * watch (lost and late events, disconnects), and on the processes (pauses, clock-rate drift,
 * crashes, restarts under the same identity, graceful stops), and on each candidate's app (its
 * health flips, so leaders step down and standbys stand aside). Time is a FakeClock: nothing
 * sleeps, and a seed replays exactly.
 *
 * After every step it checks the elector's safety contract:
 *   - at most one valid leader at a time (a leader is valid until its term's validUntil);
 *   - every term's token is unique and greater than every earlier term's;
 *   - a leader that is not paused steps down by its renewDeadline;
 *   - nobody starts a term while another candidate's term is still valid (no takeover before
 *     the observed expiry);
 *   - no update lowers the record's token (a write from a view the store no longer holds).
 * With `versionsRestart`, the store counts each record's versions from 1 again when it is
 * re-created (PostgreSQL before its versions were drawn from transaction ids): a version read
 * before a deletion comes back, and only the elector's rule of never taking over from a view
 * older than one request timeout keeps the contract. One case no sender can prevent is counted
 * as the store's limit, not a violation: a write already sent when the record was deleted that
 * lands, late, on the re-created record; it is why every real store's versions never repeat.
 * Used by the unit tier (a few hundred seeds) and `npm run chaos -- --backend elector`.
 */
import { BackendUnavailableError } from '../../src/errors.js';
import type { Clock, Timer } from '../../src/clock.js';
import type { LeaseRecord, LeaseStore, SuccessorClaimSupport, VersionedRecord, WatchEvent } from '../../src/backends/lease-store.js';
import { CandidateLoop, type LeadershipTerm } from '../../src/election/candidate-loop.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { createLogger } from '../../src/log.js';
import { ManualHealth } from '../../src/health/manual-health.js';
import { MemoryLeaseStore } from '../../src/testing/memory-store.js';
import { prng } from './prng.js';
import { resolveElectionConfig } from '../../src/config/election-options.js';

const LEASE = 'sim';
const TIMINGS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
/** Clock rates differ by at most this much between candidates (client-go assumes they agree). */
const MAX_DRIFT = 0.01;

export interface SimulationResult {
  seed: number;
  violations: string[];
  terms: number;
  faults: Record<string, number>;
  /** What happened, in order: faults, terms, step-downs (to read a failing seed). */
  events: string[];
}

/** One OS process as the simulation sees it: its own clock rate, and it can be frozen or killed. */
export class SimProcess implements Clock {
  paused = false;
  dead = false;
  private deferred: (() => void)[] = [];
  /** Overdue callbacks of a resume (overdueOneAtATime) not run yet: one per clock step. */
  private overdue: (() => void)[] = [];
  constructor(
    private readonly base: FakeClock,
    readonly rate: number,
    /**
     * How a resumed process runs what fell due while it was frozen. false: all at once, with no
     * promise callback between them (a timer that fell due late still runs before any work the
     * first one started). true: as Node runs overdue timers, one at a time with the promise
     * callbacks each one starts settled in between, so synchronous work started by the first
     * (a better-sqlite3 call) happens before the later ones fire.
     */
    private readonly overdueOneAtATime = false,
  ) {}

  now(): Date {
    return this.base.now();
  }
  monotonic(): number {
    return this.base.monotonic() * this.rate;
  }
  setTimer(fn: () => void, ms: number): Timer {
    // Whole milliseconds, as real timers: a sub-ms float step could otherwise leave time unmoved.
    return this.base.setTimer(() => this.run(fn), Math.ceil(Math.max(0, ms) / this.rate));
  }
  /** Runs `fn` now, or when the process resumes; never once it is dead. */
  run(fn: () => void): void {
    if (this.dead) return;
    if (this.paused) this.deferred.push(fn);
    // What comes while the overdue callbacks run one at a time waits behind them, in order.
    else if (this.overdue.length > 0) this.overdue.push(fn);
    else fn();
  }
  resume(): void {
    this.paused = false;
    const queued = this.deferred;
    this.deferred = [];
    if (!this.overdueOneAtATime) {
      for (const fn of queued) this.run(fn);
      return;
    }
    const pumping = this.overdue.length > 0;
    this.overdue.push(...queued);
    if (!pumping && this.overdue.length > 0) this.base.setTimer(() => this.runOneOverdue(), 0);
  }
  private runOneOverdue(): void {
    if (this.paused || this.dead) {
      // Frozen again (or killed) midway: what is left waits for the next resume.
      this.deferred.unshift(...this.overdue.splice(0));
      return;
    }
    const fn = this.overdue.shift();
    fn?.();
    if (this.overdue.length > 0) this.base.setTimer(() => this.runOneOverdue(), 0);
  }
}

/**
 * The network between one process and the store: every fault happens here. It ignores the
 * calls' abort signals on purpose, as a request already on the wire may still land: the
 * elector must stay safe when a cancelled write is applied late.
 */
class FaultyLink implements LeaseStore {
  readonly backend = 'memory';
  readonly location = 'sim';
  /** While cut off, requests get no answer and land nowhere, and the watch is down. */
  private cut = false;
  private readonly linkHealth = new Set<(healthy: boolean) => void>();
  constructor(
    private readonly mem: MemoryLeaseStore,
    private readonly proc: SimProcess,
    private readonly base: FakeClock,
    private readonly rand: () => number,
    private readonly count: (fault: string) => void,
    private readonly violation: (what: string) => void,
    /** A write sent before a deletion landed on the re-created record (versionsRestart only). */
    private readonly storeLimit: (what: string) => void,
  ) {}

  get(name: string): Promise<VersionedRecord | null> {
    return this.send('get', () => this.mem.get(name));
  }
  create(name: string, record: LeaseRecord): Promise<string> {
    return this.send('create', () => this.mem.create(name, record));
  }
  update(name: string, record: LeaseRecord, expectedVersion: string): Promise<string> {
    const deletionsAtSend = this.mem.deletions;
    return this.send('update', async () => {
      const before = this.mem.peek(name)?.leaseTransitions;
      const version = await this.mem.update(name, record, expectedVersion);
      if (before !== undefined && record.leaseTransitions < before) {
        const what = `an update (from version ${expectedVersion}) took the record's token from ${before} back to ${record.leaseTransitions}`;
        // A write already on the wire when the record was deleted can land, within its request
        // timeout, on a re-created record that has reached the version it names: no check by
        // the sender can stop that, only versions that never repeat (the store contract). With
        // restarting versions it is the store's limit; a write sent after the deletion is not.
        if (this.mem.versionsRestartOnCreate && this.mem.deletions > deletionsAtSend) this.storeLimit(what);
        else this.violation(what);
      }
      return version;
    });
  }

  /**
   * A watch as the backends give it: events arrive in order, a little late, and none is lost
   * while the watch is connected; a disconnect loses what happens until it reconnects, and
   * says so (onHealth false).
   */
  watch(name: string, onEvent: (e: WatchEvent) => void, onHealth?: (healthy: boolean) => void): () => void {
    let closed = false;
    let connected = true;
    let lastDue = 0;
    let storeUp = true;
    const health = (healthy: boolean) => {
      if (closed) return;
      const was = connected;
      connected = healthy && storeUp && !this.cut;
      if (connected === was) return;
      this.proc.run(() => onHealth?.(connected));
      // A reconnected watch starts from the current state, as a Kubernetes watch without a
      // resourceVersion does.
      if (connected && this.mem.eventsCarryRecords) {
        const row = this.mem.peekVersioned(name);
        this.base.setTimer(() => !closed && this.proc.run(() => onEvent({ record: row })), 0);
      }
    };
    this.linkHealth.add(health);
    const stop = this.mem.watch(
      name,
      (e) => {
        if (closed || !connected) return;
        // Hints (SQLite's change detection polls every 50 ms) come at most 50 ms late; record
        // events at most a second, in order.
        const late = this.rand() * (e.record === undefined ? 50 : 1_000);
        const due = Math.max(lastDue, this.base.monotonic() + late);
        lastDue = due;
        this.base.setTimer(() => !closed && this.proc.run(() => onEvent(e)), due - this.base.monotonic());
      },
      (healthy) => {
        storeUp = healthy;
        health(healthy);
      },
    );
    return () => {
      closed = true;
      this.linkHealth.delete(health);
      stop();
    };
  }

  /** The memory store keeps successor claims: the simulation runs the claim's writes and timing too. */
  readonly successorClaims: SuccessorClaimSupport = { kept: () => true };

  async close(): Promise<void> {}

  /**
   * Cuts this process off from the store for `ms` (its network, not the store's): what it
   * sends meanwhile is lost, and its watch is down. Its view of the record grows old while the
   * others carry on, which is where a write from an old view would do harm.
   */
  cutOff(ms: number): void {
    if (this.cut) return;
    this.cut = true;
    for (const h of this.linkHealth) h(false);
    this.base.setTimer(() => {
      this.cut = false;
      for (const h of this.linkHealth) h(true);
    }, ms);
  }

  /** Sends one request: it may be slow, hang, fail, lose its answer, or land late. */
  private send<T>(op: string, apply: () => Promise<T>): Promise<T> {
    const r = this.rand();
    return new Promise<T>((resolve, reject) => {
      const answer = (fn: () => void) => this.proc.run(fn);
      if (this.cut) {
        this.count('request cut off');
        return;
      }
      if (r < 0.03) {
        this.count('request hangs');
        return;
      }
      if (r < 0.08) {
        this.count('request fails');
        this.base.setTimer(() => answer(() => reject(new BackendUnavailableError('sim: connection refused'))), this.rand() * 500);
        return;
      }
      const lostAnswer = r < 0.12 && op !== 'get';
      const late = r >= 0.12 && r < 0.17;
      const delay = late ? 2_000 + this.rand() * 8_000 : this.rand() * 300;
      if (lostAnswer) this.count('write applied, answer lost');
      if (late) this.count('request late');
      // The server applies the request after half the delay and answers after the rest; a cut
      // link loses what is on it.
      this.base.setTimer(() => {
        if (this.cut) return;
        apply().then(
          (v) =>
            this.base.setTimer(
              () => this.cut || answer(() => (lostAnswer ? reject(new BackendUnavailableError('sim: connection reset')) : resolve(v))),
              delay / 2,
            ),
          (e: unknown) => this.base.setTimer(() => this.cut || answer(() => reject(e)), delay / 2),
        );
      }, delay / 2);
    });
  }
}

interface Candidate {
  name: string;
  identity: string;
  proc: SimProcess;
  link: FaultyLink;
  elector: CandidateLoop;
  /** Its app's health, as the caller's signal; flipped by the simulation. */
  health: ManualHealth;
  term: LeadershipTerm | null;
  /** The highest token this candidate had seen at the end of the last step. */
  knew: number;
  /** Its app: the work each term starts, and how the wrapper waits for it (SimApp). */
  app: SimApp;
}

/**
 * How the work of a term is wired to the elector, as each wrapper wires it:
 * - `library`: LeaderElection. The work is the term's promise; the end-of-term gate waits for
 *   it, at most drainTimeoutMs (renewDeadline by default); work past that cannot be stopped from
 *   outside, and the lease is left to expire.
 * - `run`: `leasehold run`. The work is CMD: SIGTERM when the term ends, SIGKILL after the grace
 *   period, so it always stops; a graceful stop forwards the signal and waits for CMD first.
 */
type AppKind = 'library' | 'run';
/** `leasehold run`'s default grace period: at most leaseDuration − renewDeadline, 5 s. */
const GRACE_MS = 5_000;

/** One term's work: it starts at onStartedLeading and stops some time after the term ends. */
interface Work {
  token: number;
  owner: string;
  /** Wall ms at which the term's last successful renewal (or its acquisition) started. */
  renewedAt: number;
  stopped: boolean;
  /** Why its term ended, once it has. */
  endedBy: string | null;
}

class SimApp {
  /** The work of this candidate's terms that has not stopped yet (a pause freezes it, it stays). */
  readonly running: Work[] = [];
  private readonly waiters = new Set<() => void>();
  /** `run` after its signal: it starts no command any more (LeaderRunner's shuttingDown). */
  private shuttingDown = false;
  constructor(
    readonly kind: AppKind,
    private readonly proc: SimProcess,
    private readonly rand: () => number,
  ) {}

  start(token: number, renewedAt: Date, owner: string): Work | null {
    if (this.shuttingDown) return null;
    const w: Work = { token, owner, renewedAt: renewedAt.getTime(), stopped: false, endedBy: null };
    this.running.push(w);
    return w;
  }

  renewed(token: number, renewedAt: Date): void {
    for (const w of this.running) if (w.token === token) w.renewedAt = renewedAt.getTime();
  }

  /**
   * The term ended (or, for run, its signal came): the work stops some time later. Most stop
   * within a second or two, some take longer than any drain bound, a few far longer (a hung
   * batch); `run`'s CMD is killed at the grace period. On the process's own timers: a paused
   * process stops nothing until it resumes.
   */
  /** `run` got SIGTERM: CMD gets it too, and no command starts after it. */
  signalled(): void {
    this.shuttingDown = true;
    this.askToStop('signalled');
  }

  askToStop(reason: string): void {
    for (const w of this.running) w.endedBy ??= reason;
    const pending = this.running.filter((w) => !w.stopped);
    if (pending.length === 0) return;
    const r = this.rand();
    let ms = r < 0.6 ? this.rand() * 1_500 : r < 0.85 ? 1_500 + this.rand() * 10_000 : 10_000 + this.rand() * 40_000;
    if (this.kind === 'run') ms = Math.min(ms, GRACE_MS);
    this.proc.setTimer(() => this.stopAll(pending), ms);
  }

  /** Resolves once every work of this candidate has stopped. */
  stopped(): Promise<void> {
    if (this.running.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (this.running.length > 0) return;
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  /** The process died: its work dies with it. */
  killed(): void {
    this.stopAll([...this.running]);
  }

  private stopAll(works: Work[]): void {
    for (const w of works) {
      w.stopped = true;
      const i = this.running.indexOf(w);
      if (i >= 0) this.running.splice(i, 1);
    }
    for (const fn of [...this.waiters]) fn();
  }
}

export interface SimulationOptions {
  /** The store's versions start again at 1 when the record is re-created (see the header). */
  versionsRestart?: boolean;
}

export async function runSimulation(seed: number, steps = 300, trace = false, opts: SimulationOptions = {}): Promise<SimulationResult> {
  const rand = prng(seed);
  // The apps' work draws from its own stream, so the fault schedule of a seed stays what it was.
  const appRand = prng(seed + 0x9e3779b9);
  const base = new FakeClock();
  const epoch = base.now().getTime();
  const mem = new MemoryLeaseStore();
  mem.versionsRestartOnCreate = opts.versionsRestart ?? false;
  mem.eventsCarryRecords = rand() < 0.5; // Kubernetes-like watches, or SQLite-like hints
  const violations: string[] = [];
  const faults: Record<string, number> = {};
  const events: string[] = [];
  const count = (f: string, who = '') => {
    faults[f] = (faults[f] ?? 0) + 1;
    events.push(`${t()} ${f}${who ? ` ${who}` : ''}`);
  };
  const tokens: number[] = [];
  const candidates: Candidate[] = [];
  const stopping = new Set<Candidate>();
  let deletedSinceHighest = false;
  const t = () => `t=${base.monotonic()}ms`;

  const validLeaders = (except?: Candidate) =>
    candidates.filter((c) => c !== except && !c.proc.dead && c.term && base.now().getTime() < c.term.validUntil.getTime());

  const spawn = (identity: string): Candidate => {
    const proc = new SimProcess(base, 1 + (rand() * 2 - 1) * MAX_DRIFT);
    const c = { name: `${identity}#${candidates.length}`, identity, proc, term: null, knew: 0 } as Candidate;
    c.app = new SimApp(appRand() < 0.5 ? 'library' : 'run', proc, appRand);
    c.link = new FaultyLink(
      mem,
      proc,
      base,
      rand,
      (f) => count(f, identity),
      (what) => violations.push(`${t()}: ${what} (${c.name})`),
      () => {
        count('write in flight across a deletion landed (versions restart: store limit)', c.name);
        deletedSinceHighest = true;
      },
    );
    // Each signal counts at once; the hold-down is off or a few seconds, on the process's own clock.
    c.health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: rand() < 0.5 ? 0 : 5_000 }, proc);
    // Most apps are up when their candidate starts; some come up later.
    if (rand() < 0.8) c.health.healthy();
    else base.setTimer(() => proc.run(() => c.health.healthy()), rand() * 20_000);
    c.elector = new CandidateLoop({
      ...resolveElectionConfig({ ...TIMINGS, lease: LEASE, identity }),
      store: c.link,
      clock: proc,
      random: rand,
      eligibility: c.health,
      // The end-of-term gate waits for the term's work, as each wrapper wires it: LeaderElection
      // for its promises, at most drainTimeoutMs (renewDeadline by default); run for CMD, killed at
      // the grace period, at most the grace period and the kill's wait (LeaderRunner's KILL_WAIT_MS).
      drain: () => c.app.stopped(),
      drainTimeoutMs: c.app.kind === 'library' ? TIMINGS.renewDeadlineMs : GRACE_MS + 2_000,
      log: trace ? createLogger({ level: 'debug', write: (line) => events.push(`${t()} ${c.name} ${line}`) }) : undefined,
      listener: {
        onStartedLeading: (term) => {
          const others = validLeaders(c);
          if (others.length)
            violations.push(
              `${t()}: ${c.name} started token ${term.token} while ${others.map((o) => `${o.name} (token ${o.term!.token})`).join(', ')} still valid`,
            );
          const highest = tokens.length ? Math.max(...tokens) : 0;
          // (Equal is allowed here: a write whose answer came late may have been seen first.)
          if (term.token < c.knew) {
            violations.push(`${t()}: ${c.name} started token ${term.token} although it had seen token ${c.knew}`);
          } else if (term.token <= highest) {
            // The documented limit: once the record is deleted, a candidate that never saw the
            // latest token cannot go past it. Anything else is a violation.
            if (deletedSinceHighest) {
              count('token reissued after a deletion (documented limit)', c.name);
              tokens.length = 0;
            } else violations.push(`${t()}: ${c.name} started token ${term.token}, not above ${highest}`);
          }
          // A term is announced when its write's answer arrives; the record may have been deleted
          // meanwhile, and then the deletion still counts against this token.
          if (term.token > highest && mem.peek(LEASE)?.leaseTransitions === term.token) deletedSinceHighest = false;
          tokens.push(term.token);
          events.push(`${t()} ${c.name} started token ${term.token}`);
          c.term = term;
          // One term's work at a time: any other still running must belong to a term whose lease
          // could have expired (its last renewal plus the lease duration, with the clocks' drift).
          for (const o of candidates)
            for (const w of o.app.running)
              if (base.now().getTime() < w.renewedAt + TIMINGS.leaseDurationMs * (1 - MAX_DRIFT * 1.1))
                violations.push(
                  `${t()}: ${c.name} started the work of token ${term.token} while ${w.owner === c.name ? 'its own' : `${w.owner}'s`} work of token ${w.token} (${o.app.kind}) still ran, its lease unexpired (renewed at ${w.renewedAt - epoch} ms, ended by "${w.endedBy}")`,
                );
          c.app.start(term.token, term.renewedAt, c.name);
        },
        onRenewed: (term) => {
          c.term = term;
          c.app.renewed(term.token, term.renewedAt);
        },
        onStoppedLeading: (reason) => {
          events.push(`${t()} ${c.name} stopped: ${reason}`);
          if (reason.startsWith('app ')) count('leader stepped down for its app', c.name);
          c.term = null;
          c.app.askToStop(reason);
        },
      },
    });
    candidates.push(c);
    c.elector.start();
    return c;
  };

  const n = 2 + Math.floor(rand() * 4);
  for (let i = 0; i < n; i++) spawn(`c${i}`);
  if (rand() < 0.5) mem.put(LEASE, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: null, leaseTransitions: 0 });

  let recordSince = 0;
  let hadRecord = false;
  for (let step = 0; step < steps && violations.length === 0; step++) {
    await base.advance(1 + Math.floor(rand() * 1_500));
    const has = mem.peek(LEASE) !== undefined;
    if (has && !hadRecord) recordSince = base.monotonic();
    hadRecord = has;
    const live = candidates.filter((c) => !c.proc.dead && !stopping.has(c));
    const pick = live[Math.floor(rand() * live.length)];
    const r = rand();
    if (pick && r < 0.04 && !pick.proc.paused) {
      count('pause', pick.name);
      pick.proc.paused = true;
      base.setTimer(() => pick.proc.resume(), rand() * 30_000);
    } else if (pick && r < 0.06) {
      count('crash and restart', pick.name);
      pick.proc.dead = true;
      pick.app.killed();
      pick.term = null;
      base.setTimer(() => void spawn(pick.identity), rand() * 20_000);
    } else if (pick && r < 0.07 && !pick.proc.paused && !stopping.has(pick)) {
      count('graceful restart', pick.name);
      stopping.add(pick);
      // run forwards the signal to CMD and waits for it (at most the grace period) before its stop.
      const before = pick.app.kind === 'run' ? (pick.app.signalled(), pick.app.stopped()) : Promise.resolve();
      void before
        .then(() => pick.elector.stop())
        .then(() => {
          pick.proc.dead = true;
          pick.app.killed();
          base.setTimer(() => void spawn(pick.identity), rand() * 5_000);
        });
    } else if (r < 0.085 && base.monotonic() - recordSince >= 5_000) {
      // An operator deletes the record (never within 5 s of its creation: see docs/kubernetes.md
      // for what a deletion faster than a candidate's view can do).
      count('lease deleted');
      mem.delete(LEASE);
      hadRecord = false;
      deletedSinceHighest = true;
    } else if (pick && r < 0.1) {
      count('watch disconnect');
      mem.setWatchHealth(false);
      base.setTimer(() => mem.setWatchHealth(true), rand() * 10_000);
    } else if (pick && r < 0.12) {
      count('link cut off', pick.name);
      pick.link.cutOff(rand() * 40_000);
    } else if (pick && r < 0.14) {
      // The app fails (for a while) or recovers; the signal reaches the process when it runs.
      const up = pick.health.snapshot().state === 'healthy';
      count(up ? 'app unhealthy' : 'app healthy', pick.name);
      pick.proc.run(() => (up ? pick.health.unhealthy('sim: app down') : pick.health.healthy()));
      if (up && rand() < 0.7) base.setTimer(() => pick.proc.run(() => pick.health.healthy()), rand() * 20_000);
    }

    for (const c of candidates) if (!c.proc.dead) c.knew = c.elector.snapshot().highestToken;

    // Invariants after the step.
    const valid = validLeaders();
    if (valid.length > 1) violations.push(`${t()}: ${valid.length} valid leaders: ${valid.map((c) => `${c.name}/${c.term!.token}`).join(', ')}`);
    const slack = TIMINGS.renewDeadlineMs * MAX_DRIFT * 1.1 + 1;
    for (const c of candidates) {
      if (c.proc.dead || c.proc.paused || !c.elector.isLeader() || !c.term) continue;
      if (base.now().getTime() > c.term.validUntil.getTime() + slack) {
        violations.push(`${t()}: ${c.name} still leads ${base.now().getTime() - c.term.validUntil.getTime()} ms past its validUntil`);
      }
    }
  }
  for (const c of candidates) {
    c.proc.dead = true;
  }
  return { seed, violations, terms: tokens.length, faults, events };
}
