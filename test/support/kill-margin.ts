/**
 * What the tests of a term's end before the lease's expiry share (`run`'s kill:
 * test/sqlite/run-renew-late, test/postgres/run-renew-margin; the library's abort:
 * test/sqlite/busy-timeout-bound): an observer that notes when a worker holding an exclusive
 * flock is gone, and a probe of this machine's timers.
 *
 * Why the probe: the kill keeps 50 ms + 0.1% of the lease before the expiry, and the 50 ms is
 * what leasehold assumes of its timers (docs/guarantees.md, "Clocks and timers": a timer fires
 * at most 50 ms late). A round during which the machine kept timers later than that tests the
 * machine, not leasehold: CI running four test tiers on two cores once held the kill 50-130 ms
 * past its moment in two rounds of three. So a round is judged only where a timer in a process
 * of its own, ticking every 5 ms beside it, was never late by more than half that allowance (the
 * other half is the kill's own effect: the worker's exit, its lock let go, the observer woken);
 * the others are printed, not judged.
 */
import { spawnSync } from 'node:child_process';
import { start, waitFor, type Proc } from './cli.js';
import { CLOCK_MARGIN_FIXED_MS } from '../../src/config/election-options.js';

/** Blocks on DIR/worker.lock once worker `a` holds it, then prints the wall time it got it (ms). */
const OBSERVER = [
  'import fcntl, os, sys, time',
  'work = sys.argv[1]',
  "while not os.path.exists(os.path.join(work, 'held-a')): time.sleep(0.01)",
  "fd = os.open(os.path.join(work, 'worker.lock'), os.O_RDWR)",
  "print('waiting', flush=True)",
  'fcntl.flock(fd, fcntl.LOCK_EX)',
  "print('free', time.time() * 1000, flush=True)",
].join('\n');

/**
 * `argv` run at a real-time priority (SCHED_FIFO) where this machine allows it (root), else as
 * it is. For the worker and the observer, which only sleep or block: at that priority the
 * worker's exit after its SIGKILL and the observer's wake-up on the lock run at once, so a round
 * measures when the kill went out, not how long a busy run queue kept those two waiting (CI,
 * five test runs on two cores: the kill sent on time and the worker seen gone 30-40 ms later).
 */
export function realtime(argv: readonly string[]): string[] {
  return REALTIME ? ['chrt', '-f', '10', ...argv] : [...argv];
}
const REALTIME = spawnSync('chrt', ['-f', '10', 'true']).status === 0;

/** An observer of worker `a` in `work` (test/support/session_worker.py): `freedAt` once it is gone. */
export function startObserver(work: string): Proc & { waiting: () => boolean; freedAt: () => number | undefined } {
  const [cmd, ...args] = realtime(['python3', '-c', OBSERVER, work]);
  const p = start(cmd!, args);
  return Object.assign(p, {
    waiting: () => p.stdout().includes('waiting'),
    freedAt: () => {
      const m = /free ([\d.]+)/.exec(p.stdout());
      return m ? Number(m[1]) : undefined;
    },
  });
}

/** The latest a probe's tick may come in a judged round: half the timer allowance. */
export const JUDGED_LATENESS_MS = CLOCK_MARGIN_FIXED_MS / 2;

/**
 * Ticks every 5 ms; prints `late <wall ms> <ms late>` for a tick later than 5 ms, and `at <wall
 * ms>` every 10th tick, so a reader knows how far its output reaches.
 *
 * Each tick reads the clock once, and that one reading is its lateness, the time the next tick
 * is due from, and the wall time it prints (the process's time origin plus it: within a
 * millisecond of Date.now()). Read apart, a stop between the readings went unseen: with the
 * next tick due from a second reading after the write, a SIGSTOP that landed after the lateness
 * was measured (during the write, say) counted in no tick at all (a 201 ms stall read as 10 ms
 * late), and a wall time read after the lateness could name a moment past the stall on a line
 * written before the stall's own.
 */
const PROBE = [
  'let due = performance.now() + 5;',
  'let ticks = 0;',
  'const tick = () => {',
  '  const now = performance.now();',
  '  const late = now - due;',
  '  due = now + 5;',
  '  const at = Math.round(performance.timeOrigin + now);',
  '  if (late > 5) process.stdout.write(`late ${at} ${Math.round(late)}\\n`);',
  '  else if (++ticks % 10 === 0) process.stdout.write(`at ${at}\\n`);',
  '  setTimeout(tick, 5);',
  '};',
  'setTimeout(tick, 5);',
  "process.stdout.write('ticking\\n');",
].join('\n');

export interface TimerProbe extends Proc {
  ticking: () => boolean;
  /**
   * The latest any tick came whose wait overlapped [fromWall, toWall] (ms; 0: none past 5 ms),
   * once the probe has ticked past `toWall`: a probe kept off the CPU over the window's end has
   * not printed that tick yet, and read at once would say it was on time. A line past `toWall`
   * was measured past it (one clock reading a tick), so the tick that waited across the
   * window's end is printed by then, at that line or before it.
   */
  latenessIn: (fromWall: number, toWall: number) => Promise<number>;
}

export function startTimerProbe(): TimerProbe {
  const p = start(process.execPath, ['-e', PROBE]);
  return Object.assign(p, {
    ticking: () => p.stdout().includes('ticking'),
    latenessIn: async (fromWall: number, toWall: number) => {
      await waitFor('the timer probe to tick past the window', () => reachedMs(p.stdout()) >= toWall, 60_000, 5);
      return latenessIn(p.stdout(), fromWall, toWall);
    },
  });
}

/** The wall time of the probe's last whole line (0 before any). */
export function reachedMs(probeOutput: string): number {
  const end = probeOutput.lastIndexOf('\n');
  if (end < 0) return 0;
  const m = /^(?:at|late) (\d+)/.exec(probeOutput.slice(probeOutput.lastIndexOf('\n', end - 1) + 1, end));
  return m ? Number(m[1]) : 0;
}

/** From a probe's output: the latest a tick came whose wait overlapped [fromWall, toWall] (ms). */
export function latenessIn(probeOutput: string, fromWall: number, toWall: number): number {
  let worst = 0;
  for (const m of probeOutput.matchAll(/^late (\d+) (\d+)$/gm)) {
    const at = Number(m[1]);
    const late = Number(m[2]);
    // The tick's wait ran over [at - late - 5, at]: it overlaps the window or not.
    if (at >= fromWall && at - late - 5 <= toWall) worst = Math.max(worst, late);
  }
  return worst;
}

export interface KillRound {
  /** The lease's possible expiry minus the moment the worker was gone (ms; > 0: before it). */
  marginMs: number;
  /** The probe's latest tick over the round's end (renew deadline to the worker gone). */
  latenessMs: number;
}

/**
 * The verdict on `rounds`: the judged ones (the probe within JUDGED_LATENESS_MS), and the worst
 * margin among them. Every judged round must keep the worker's end before the expiry: a median
 * would let one of three rounds with timers on time have CMD outlive the lease (hostile review).
 */
export function judgeKillRounds<R extends KillRound>(rounds: R[]): { judged: R[]; worstMs: number | null } {
  const judged = rounds.filter((r) => r.latenessMs <= JUDGED_LATENESS_MS);
  return { judged, worstMs: judged.length ? Math.min(...judged.map((r) => r.marginMs)) : null };
}

/**
 * From `leasehold run`'s log: when its SIGKILL at the grace period's end was due (wall time) and
 * how late its timer sent it (ms), once that line is written.
 */
export function killLogged(stderr: string): { killDueAt: string; killLateMs: number } | undefined {
  for (const line of stderr.split('\n')) {
    if (!line.includes('command killed after grace period')) continue;
    let l: { killDueAt?: unknown; killLateMs?: unknown };
    try {
      l = JSON.parse(line) as typeof l;
    } catch {
      continue; // not whole yet, or not a JSON line
    }
    if (typeof l.killDueAt === 'string' && typeof l.killLateMs === 'number') return { killDueAt: l.killDueAt, killLateMs: l.killLateMs };
  }
  return undefined;
}
