import { describeError } from '../errors.js';
import type { LogFields, Logger } from '../log.js';
import { Sidecar, type SidecarOptions } from '../sidecar/sidecar.js';
import type { LeadershipTerm } from '../election/candidate-loop.js';
import type { LeaseRecord } from '../backends/lease-store.js';
import { ChildProcessGroup, exitStatus, type ExitResult } from './child-process-group.js';
import { RecentRunGuard } from './recent-run-guard.js';
import { commandCgroupName, createCommandCgroup, removeStaleCgroups } from './command-cgroup.js';
import { StandBack } from '../election/stand-back.js';

export interface LeaderRunnerOptions extends Omit<SidecarOptions, 'listener'> {
  /** The command and its arguments. */
  argv: string[];
  /** Run to completion once while leader, then release and exit with the command's status. */
  once: boolean;
  /** SIGTERM → SIGKILL delay when leadership is lost; at most leaseDuration − renewDeadline. */
  gracePeriodMs: number;
  /** First restart delay in keep-running mode; doubles per quick exit up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** The command's environment for a term (the CLI strips its own configuration and adds the term). */
  childEnv: (term: LeadershipTerm) => NodeJS.ProcessEnv;
  /**
   * With once: exit 0 without running when the lease's last term began less than this ago (a
   * run of this tick already began elsewhere), and release keeping the term's acquireTime so
   * the record says so after the run. See RecentRunGuard.
   */
  skipIfRanWithinMs?: number;
  /** With once: give up (exit EXIT_NOT_ELECTED) if not elected within this. */
  tryMs?: number;
  /**
   * Without once: after this many failures of the command in a row within one term (a non-zero
   * status; a success resets the count), step down, release, and stand aside for a lease
   * duration so another candidate runs it. 0: never.
   */
  giveUpAfter?: number;
}

/**
 * How long, past the grace period, a term's end waits for CMD and its session to be gone after
 * SIGKILL: a process the kernel cannot kill at once (in uninterruptible sleep) is not gone for
 * certain, and then the lease is left to expire rather than released, and leasehold exits.
 */
const KILL_WAIT_MS = 2_000;

/**
 * How much later than the runner's own bound the end-of-term gate gives up on its own: the runner
 * decides at its bound (commandGone), standing aside before the gate returns, so the elector never
 * campaigns beside work it could not stop. Were the gate's timer first (timers fire in order of
 * their deadlines, and a synchronous store call can hold both past them), the elector would try
 * to take the lease again before the runner says it exits.
 */
const GATE_SLACK_MS = 250;

/** The exit status past the bound when CMD itself never exited: as if the SIGKILL sent had ended it. */
const EXIT_KILLED = 137;

/** How long the processes of CMD's session may take to die after its SIGKILL before the gate says it waits for them. */
const SETTLE_MS = 100;

/** The exit status of `leasehold run --once` when leadership was lost before the command finished. */
const EXIT_LOST_LEADERSHIP = 75;
/** The exit status of `leasehold run --once --try D` when not elected within D (timeout(1)'s). */
export const EXIT_NOT_ELECTED = 124;

/**
 * `leasehold run`: the command runs only while this candidate leads.
 * - elected: start the command with its fencing token in LEASEHOLD_FENCING_TOKEN;
 * - leadership lost (renewDeadline passed, or the lease taken): SIGTERM its process group,
 *   SIGKILL after the grace period counted from the last renewal's renew deadline (killBy),
 *   which leaves the clock margin before the lease's expiry, so it is gone before anyone else
 *   may be elected;
 * - whatever ends a term, the wait for CMD and every process of its session is bounded: past
 *   the grace period + KILL_WAIT_MS from the moment the term began to end, nothing is
 *   released, the lease is left to expire, and leasehold exits;
 * - the command exits while leading: --once releases and exits with its status; otherwise
 *   it is restarted with backoff, and after --give-up-after failures in a row the runner steps
 *   down, releases and stands aside for a lease duration (StandBack) so another host tries;
 * - SIGTERM/SIGINT/SIGHUP to leasehold: forwarded to the group; once the command has exited,
 *   the lease is released;
 * - --once --skip-if-ran-within (cron, docs/cron.md): a run of this tick seen (a term begun
 *   within the window, held or released) ends this runner with 0, before or during its
 *   campaign, and its release keeps the term's acquireTime;
 * - --once --try: not elected in time, it leaves with EXIT_NOT_ELECTED.
 */
export class LeaderRunner {
  private readonly sidecar: Sidecar;
  private child: ChildProcessGroup | null = null;
  /** The last command started, running or not: the gate waits until its whole session is gone. */
  private lastChild: ChildProcessGroup | null = null;
  private childStop: Promise<unknown> | null = null;
  private term: LeadershipTerm | null = null;
  private shuttingDown = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  /** Failures of the command in a row in this term: --give-up-after counts these. */
  private failedInARow = 0;
  private readonly standBack = new StandBack();
  private lastStatus = 0;
  private finish!: (code: number) => void;
  readonly finished = new Promise<number>((resolve) => (this.finish = resolve));
  private readonly log: Logger;
  /** Between the elector and the store with --skip-if-ran-within or --try: see RecentRunGuard. */
  private readonly guard: RecentRunGuard | null;
  private tryTimer: NodeJS.Timeout | null = null;
  private campaigning = false;
  /** A run of this tick seen before the campaign started. */
  private recentRun: LeaseRecord | null = null;
  /**
   * performance.now() past which the end of this term waits no more for CMD and its session:
   * set by whatever begins to end the term (a signal, a lost term, a shutdown), once; cleared
   * when a command starts for a new term (which the gate lets happen only after it is over).
   */
  private endBy: number | null = null;
  /** Commands started by this runner: each has a cgroup of its own, named by its number. */
  private commandsStarted = 0;
  /**
   * performance.now() by which CMD gets its SIGKILL when the term ends on its own (not by a
   * signal to leasehold): the last renewal's renew deadline plus the grace period, which the
   * grace period's bound keeps the clock margin before the lease's expiry. Counted from there,
   * not from when the step-down is heard, so a late deadline timer or a busy event loop
   * shortens the grace period instead of pushing the kill towards the next leader's term.
   */
  private killBy: number | null = null;

  constructor(private readonly opts: LeaderRunnerOptions) {
    this.log = opts.log;
    const skipping = opts.skipIfRanWithinMs !== undefined;
    this.guard =
      skipping || opts.tryMs !== undefined
        ? new RecentRunGuard(opts.store, { withinMs: opts.skipIfRanWithinMs ?? null, now: Date.now, onRecentRun: (r) => this.onRecentRun(r) })
        : null;
    this.sidecar = new Sidecar({
      ...opts,
      store: this.guard ?? opts.store,
      releaseKeepsAcquireTime: skipping,
      eligibility: this.standBack,
      // CMD is the term's work: however the term ends, it is stopped (SIGTERM, then SIGKILL after
      // the grace period) and gone before the release and before the next term.
      termWork: { stopped: () => this.commandGone(), boundMs: opts.gracePeriodMs + KILL_WAIT_MS + GATE_SLACK_MS },
      listener: {
        onStartedLeading: (term) => {
          this.noteRenewal(term);
          this.guard?.disarm();
          this.clearTry();
          this.term = term;
          this.failures = 0;
          this.failedInARow = 0;
          this.startChild();
        },
        onRenewed: (term) => this.noteRenewal(term),
        onStoppedLeading: (reason) => {
          this.term = null;
          this.cancelRestart();
          if (!this.shuttingDown) void this.onLostLeadership(reason);
        },
      },
    });
  }

  private noteRenewal(term: LeadershipTerm): void {
    this.killBy = performance.now() + Math.max(0, term.validUntil.getTime() - Date.now()) + this.opts.gracePeriodMs;
  }

  async start(): Promise<void> {
    if (this.guard && this.opts.skipIfRanWithinMs !== undefined) {
      // One read before campaigning: a runner of a tick that already ran leaves without a
      // campaign (nothing written, no status files). A failed read is left to the campaign,
      // which retries and reports it.
      await this.guard.get(this.opts.lease).catch(() => null);
      if (this.recentRun) {
        this.logSkip(this.recentRun);
        await this.opts.store.close();
        this.finish(0);
        return;
      }
    }
    if (this.opts.tryMs !== undefined) this.tryTimer = setTimeout(() => void this.tryRanOut(), this.opts.tryMs);
    this.campaigning = true;
    await this.sidecar.start();
  }

  /** The guard saw a term that began within --skip-if-ran-within (and will take no more). */
  private onRecentRun(record: LeaseRecord): void {
    if (!this.campaigning) {
      this.recentRun = record;
      return;
    }
    void this.giveUp(() => {
      this.logSkip(record);
      return 0;
    });
  }

  private logSkip(r: LeaseRecord): void {
    const at = r.acquireTime!;
    this.log.info('skipping: a run began within skipIfRanWithinMs', {
      ranAt: at.toISOString(),
      holder: r.holderIdentity, // '' once that run has finished and released
      token: r.leaseTransitions,
      agoMs: Date.now() - at.getTime(),
      withinMs: this.opts.skipIfRanWithinMs,
    });
  }

  private async tryRanOut(): Promise<void> {
    this.tryTimer = null;
    this.guard?.stopTaking();
    await this.giveUp(() => {
      this.log.error('not elected within tryMs: giving up', { tryMs: this.opts.tryMs, holder: this.sidecar.elector.snapshot().holder });
      return EXIT_NOT_ELECTED;
    });
  }

  /**
   * Leaves without running, unless a takeover already sent lands: the guard takes no more, so
   * once those are answered (and the elector has handled the answer) whether this candidate
   * leads is final. If it does, the command runs as for any term.
   */
  private async giveUp(exit: () => number): Promise<void> {
    if (this.shuttingDown || this.term) return;
    await this.guard?.settled();
    await new Promise((resolve) => setImmediate(resolve));
    if (this.shuttingDown || this.term || this.sidecar.elector.isLeader()) return;
    this.clearTry();
    await this.shutdown(exit());
  }

  private clearTry(): void {
    if (this.tryTimer) clearTimeout(this.tryTimer);
    this.tryTimer = null;
  }

  private startChild(): void {
    const term = this.term;
    if (!term || this.shuttingDown || this.child?.running) return;
    const env = this.opts.childEnv(term);
    const started = Date.now();
    let child: ChildProcessGroup;
    // A cgroup of CMD's own where the machine gives one (command-cgroup.ts), else its session alone.
    if (this.commandsStarted === 0) removeStaleCgroups();
    const { cgroup, why } = createCommandCgroup(commandCgroupName(process.pid, ++this.commandsStarted));
    try {
      child = new ChildProcessGroup(this.opts.argv, env, cgroup);
    } catch (err) {
      cgroup?.remove();
      this.log.error('cannot start command', { command: this.opts.argv[0], error: describeError(err) });
      void this.shutdown(127);
      return;
    }
    this.child = child;
    this.lastChild = child;
    this.endBy = null;
    const tracking = child.tracking;
    this.log.info('started command', {
      command: this.opts.argv[0],
      pid: child.pid,
      token: term.token,
      tracking: tracking.kind,
      ...(tracking.kind === 'cgroup' ? { cgroup: tracking.dir } : { session: child.pid, noCgroup: why || 'the shell could not be moved into it' }),
    });
    void child.exited.then((r) => this.onChildExit(child, r, Date.now() - started));
  }

  private onChildExit(child: ChildProcessGroup, r: ExitResult, ranMs: number): void {
    const status = exitStatus(r);
    this.lastStatus = status;
    // Its session got SIGKILL with its exit: once they are gone, its cgroup is removed.
    void child.emptied(KILL_WAIT_MS);
    if (this.child === child) this.child = null;
    if (this.childStop || this.shuttingDown) return; // stopped on purpose; logged there
    this.log.info('command exited', { code: r.code, signal: r.signal, status, ranMs });
    if (!this.sidecar.elector.isLeader()) return;
    if (this.opts.once) {
      void this.shutdown(status);
      return;
    }
    this.failedInARow = status === 0 ? 0 : this.failedInARow + 1;
    const giveUpAfter = this.opts.giveUpAfter ?? 0;
    if (giveUpAfter > 0 && this.failedInARow >= giveUpAfter) {
      // Another candidate may be able to run it (its disk, its network, its credentials): the
      // lease is released, and this one campaigns again only after a lease duration, by which
      // time a healthy standby holds it.
      const standBackMs = this.opts.leaseDurationMs;
      this.log.warn('the command failed too often while leading: giving the lease up', { failures: this.failedInARow, status, standBackMs });
      this.standBack.standBack(`the command failed ${this.failedInARow} times in a row (last status ${status})`, standBackMs);
      return;
    }
    this.failures = ranMs >= 10_000 ? 0 : this.failures + 1;
    const delay = Math.min(this.opts.maxBackoffMs ?? 30_000, (this.opts.minBackoffMs ?? 1_000) * 2 ** Math.max(0, this.failures - 1));
    this.log.info('restarting command while leader', { inMs: delay });
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.startChild();
    }, delay);
  }

  private async onLostLeadership(reason: string): Promise<void> {
    await this.stopChild(`lost leadership: ${reason}`, true);
    if (this.opts.once && !this.shuttingDown) {
      this.log.error('lost leadership before the command finished', { reason });
      await this.shutdown(EXIT_LOST_LEADERSHIP);
      return;
    }
    // Re-elected while the old command was still inside its grace period: onStartedLeading
    // could not start it then (one command at a time), so start it for the new term now.
    if (this.term && !this.shuttingDown) this.startChild();
  }

  /** Milliseconds left before the bound of this term's end, which begins now if it had not. */
  private leftMs(): number {
    this.endBy ??= performance.now() + this.opts.gracePeriodMs + KILL_WAIT_MS;
    return Math.max(0, this.endBy - performance.now());
  }

  /**
   * The end-of-term gate's drain: CMD stopped and gone, and with it every process of its
   * session. The listener's onStoppedLeading already began stopping it (SIGTERM, SIGKILL after
   * the grace period); a CMD waiting to be restarted is not running. CMD's exit sent its session
   * SIGKILL, but a process there that the kernel cannot kill at once still runs, and still holds
   * what it held: true once no process of the session is left. Past the bound, false: the gate
   * leaves the lease to expire, and leasehold exits (exitPastBound).
   */
  private async commandGone(): Promise<boolean> {
    this.leftMs();
    if (this.childStop) await this.childStop;
    else if (this.child?.running) await this.stopChild('the term ended', !this.shuttingDown);
    const last = this.lastChild;
    if (!last) return true;
    // The session's SIGKILL went out with CMD's exit: its processes (the guard's watcher at
    // least) take a moment to die. Only one still there after that is worth a line.
    if (await last.emptied(Math.min(SETTLE_MS, this.leftMs()))) return true;
    if (!last.running) {
      this.log.warn('the command exited, but processes of its session still run: waiting for them before the release', { pid: last.pid });
      if (await last.emptied(this.leftMs())) return true;
    }
    this.exitPastBound(last);
    return false;
  }

  /**
   * CMD or a process of its session outlived the bound: the gate leaves the lease to expire, and
   * leasehold exits rather than campaign again beside work it could not stop. Its status: CMD's
   * (--once: EXIT_LOST_LEADERSHIP), or EXIT_KILLED when CMD itself never exited.
   */
  private exitPastBound(last: ChildProcessGroup): void {
    if (this.shuttingDown) return;
    // Before the gate hears "not stopped": no attempt may follow it while leasehold leaves.
    this.standBack.standBack('the command or a process of its session outlived SIGKILL: exiting', this.opts.leaseDurationMs);
    this.log.error('the command or a process of its session outlived SIGKILL past the bound: exiting, the lease left to expire', {
      pid: last.pid,
      commandExited: !last.running,
      boundMs: this.opts.gracePeriodMs + KILL_WAIT_MS,
    });
    void this.shutdown(this.opts.once ? EXIT_LOST_LEADERSHIP : last.running ? EXIT_KILLED : this.lastStatus);
  }

  /** `termEnded`: the term ended on its own, so the SIGKILL comes by killBy at the latest. */
  private async stopChild(reason: string, termEnded = false): Promise<void> {
    const child = this.child;
    if (!child?.running) return;
    const left = this.leftMs();
    const byDeadline = termEnded && this.killBy !== null ? Math.max(0, this.killBy - performance.now()) : Infinity;
    const graceMs = Math.min(this.opts.gracePeriodMs, left, byDeadline);
    // The kill is due at killBy when that is what bounds the grace period (even if it has passed).
    const dueInMs = graceMs === byDeadline ? this.killBy! - performance.now() : graceMs;
    const killDue = { mono: performance.now() + dueInMs, wall: Date.now() + dueInMs };
    const stopping = child.terminate(graceMs, left - graceMs);
    this.childStop = stopping;
    const r = await stopping;
    this.childStop = null;
    if (this.child === child && !child.running) this.child = null;
    const fields: LogFields = { reason, pid: child.pid, code: r.result?.code, signal: r.result?.signal, gracePeriodMs: this.opts.gracePeriodMs };
    // When the SIGKILL was due and how late its timer sent it: the clock margin before the
    // lease's expiry assumes a timer at most 50 ms late (docs/guarantees.md), and this says
    // whether this machine kept to that when it mattered.
    if (r.killedAt !== null) Object.assign(fields, { killDueAt: new Date(killDue.wall).toISOString(), killLateMs: Math.round(r.killedAt - killDue.mono) });
    if (!r.result) this.log.error('the command did not exit after SIGKILL (the kernel cannot kill it yet)', fields);
    else this.log.warn(r.killedAt !== null ? 'command killed after grace period' : 'command stopped', fields);
  }

  private cancelRestart(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
  }

  /**
   * A signal to leasehold: pass it to the command's session, wait for it to exit (SIGKILL after
   * the grace period), then stop the sidecar, whose gate releases once the session is empty.
   * Every wait ends at the bound (leftMs): a command the kernel cannot kill leaves the lease to
   * expire, and leasehold exits.
   */
  async forwardSignalAndStop(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.clearTry();
    this.cancelRestart();
    if (child?.running) {
      this.log.info('forwarding signal to command', { signal, pid: child.pid });
      this.leftMs();
      child.signal(signal);
      let r = await child.exitWithin(Math.min(this.opts.gracePeriodMs, this.leftMs()));
      if (!r) {
        this.log.warn('command ignored the signal; killing it', { signal, gracePeriodMs: this.opts.gracePeriodMs });
        child.signal('SIGKILL');
        r = await child.exitWithin(this.leftMs());
      }
      child.signal('SIGKILL'); // leftovers of the session
      this.lastStatus = r ? exitStatus(r) : EXIT_KILLED;
      if (r) this.log.info('command exited', { code: r.code, signal: r.signal });
      else this.log.error('the command did not exit after SIGKILL (the kernel cannot kill it yet): the lease is left to expire', { pid: child.pid });
    }
    this.standBack.close();
    await this.sidecar.stop();
    this.lastChild?.letGo();
    this.finish(child ? this.lastStatus : 0);
  }

  private async shutdown(code: number): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.clearTry();
    this.cancelRestart();
    if (this.child?.running) await this.stopChild('shutting down');
    this.standBack.close();
    await this.sidecar.stop();
    this.lastChild?.letGo();
    this.finish(code);
  }
}
