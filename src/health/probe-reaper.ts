/**
 * Finds and kills every process an exec probe started, also those that left its process group
 * or its session (`setsid`, a daemon's double fork), which a kill of the group misses: run every
 * period, each such check would leave one more process behind.
 *
 * A process is the probe's when, in /proc:
 * - its environment holds the probe's marker (PROBE_MARKER_VARIABLE=<marker>), which every
 *   process inherits unless it is started with another environment;
 * - or it is in the probe's session (the probe leads a session of its own);
 * - or it descends (by parent PID) from such a process, so a child started with an empty
 *   environment is found while its parent lives.
 * What is found is stopped first (SIGSTOP: a stopped process forks nothing more), the search is
 * repeated until it finds nothing new, then everything found is killed (SIGKILL).
 * Out of reach: a process that was started with an environment without the marker and whose
 * parent is gone by then, outside the probe's session (`env -i setsid daemon`); and on systems
 * without /proc, all but the group. PR_SET_CHILD_SUBREAPER, which would keep every orphan a
 * child of this process, is not reachable from Node, and a cgroup needs a delegation the
 * sidecar usually lacks.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';

/** The variable that marks a probe's processes; its value is one probe's own (probeMarker()). */
export const PROBE_MARKER_VARIABLE = 'LEASEHOLD_HEALTH_PROBE';

/** Searches before the kill: each one stops what it finds, so a second rarely finds anything. */
const MAX_PASSES = 10;

/** A new marker: unguessable, so no other process carries it by chance. */
export function probeMarker(): string {
  return randomBytes(12).toString('hex');
}

interface ProcEntry {
  pid: number;
  ppid: number;
  session: number;
  /** When it started, in clock ticks since boot. */
  started: number;
}

/** One process's line of /proc/PID/stat, or null when it is gone. */
function stat(pid: number | 'self'): ProcEntry | null {
  try {
    // "pid (comm) state ppid pgrp session ... starttime(22nd) ...": comm may hold spaces and parentheses.
    const line = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
    return { pid: Number(line.slice(0, line.indexOf(' '))), ppid: Number(fields[1]), session: Number(fields[3]), started: Number(fields[19]) };
  } catch {
    return null;
  }
}

/**
 * When this process started: whatever a probe started is younger, so older processes (most of a
 * host's) are passed over without reading their environment. Read once; null without /proc.
 */
let ownStart: number | null | undefined;
function startedAt(): number {
  if (ownStart === undefined) ownStart = stat('self')?.started ?? null;
  return ownStart ?? 0;
}

/** Every process in /proc younger than this one, with its parent and session; none where /proc cannot be read. */
function processes(): ProcEntry[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const since = startedAt();
  const out: ProcEntry[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const p = stat(Number(name));
    if (p && p.started >= since) out.push(p);
  }
  return out;
}

/** Whether the process's environment holds `entry` (NAME=value) as a whole entry. */
function carries(pid: number, entry: Buffer): boolean {
  let environ: Buffer;
  try {
    environ = readFileSync(`/proc/${pid}/environ`);
  } catch {
    // Gone, or another user's: not readable, and not ours to kill either.
    return false;
  }
  for (let at = environ.indexOf(entry); at >= 0; at = environ.indexOf(entry, at + 1)) {
    if ((at === 0 || environ[at - 1] === 0) && (at + entry.length === environ.length || environ[at + entry.length] === 0)) return true;
  }
  return false;
}

/**
 * Kills every process of the probe marked `marker` (and of the session `session`, when given:
 * the probe's PID, as it leads its own session). Returns how many it killed.
 */
export function reapProbe(marker: string, session?: number): number {
  const entry = Buffer.from(`${PROBE_MARKER_VARIABLE}=${marker}`);
  const found = new Set<number>();
  const checked = new Set<number>();
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const all = processes();
    const mine = new Set<number>();
    for (const p of all) {
      if (found.has(p.pid) || (session !== undefined && p.session === session)) mine.add(p.pid);
      else if (!checked.has(p.pid)) {
        // The environment a process started with never changes: read once per process.
        checked.add(p.pid);
        if (carries(p.pid, entry)) mine.add(p.pid);
      }
    }
    // Their descendants, however deep, by parent PID.
    for (let grew = true; grew;) {
      grew = false;
      for (const p of all) {
        if (!mine.has(p.pid) && mine.has(p.ppid)) {
          mine.add(p.pid);
          grew = true;
        }
      }
    }
    const fresh = [...mine].filter((pid) => !found.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      found.add(pid);
      signal(pid, 'SIGSTOP');
    }
  }
  for (const pid of found) signal(pid, 'SIGKILL');
  return found.size;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Gone already.
  }
}
