import { readFileSync, readdirSync } from 'node:fs';

/**
 * The processes of one session, found in /proc: what `leasehold run` waits for and kills at the
 * end of a term. CMD starts a session of its own (setsid), and a process stays in its session
 * unless it calls setsid itself, whereas a process group is left by any setpgid (GNU `timeout`,
 * shells with job control, `python -c 'os.setpgid(0, 0)'`): the session is what a worker cannot
 * leave by accident.
 *
 * The cost: one scan reads /proc/N/stat for every process on the machine (a few milliseconds
 * for a thousand processes), and runs only at a term's end, a few times a second at most.
 */

/** "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses. */
function statFields(line: string): string[] {
  return line.slice(line.lastIndexOf(')') + 2).split(' ');
}

/**
 * The PIDs of session `sid`'s live processes (neither a zombie nor dead: state Z or X), or null
 * without a readable /proc. A zombie has let go of everything it held and does not count (an
 * orphan's may never be reaped where leasehold is PID 1).
 */
export function sessionMembers(sid: number): number[] | null {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return null;
  }
  const found: number[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let line: string;
    try {
      line = readFileSync(`/proc/${name}/stat`, 'latin1');
    } catch {
      continue; // gone meanwhile
    }
    const [state, , , session] = statFields(line);
    if (Number(session) === sid && state !== 'Z' && state !== 'X') found.push(Number(name));
  }
  return found;
}

/**
 * Whether a process of session `sid` (whose group `sid` is too: its leader's) lives. Without
 * /proc, whether a signal reaches group `sid`.
 */
export function sessionAlive(sid: number): boolean {
  const members = sessionMembers(sid);
  if (members !== null) return members.length > 0;
  try {
    process.kill(-sid, 0);
    return true;
  } catch (err) {
    // ESRCH: nobody is left; EPERM: somebody is, of another user (a setuid program).
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Sends `signal` to group `sid` and to every process of session `sid` by its PID (a process
 * that left the group for one of its own is reached only so). False when nobody was reached.
 */
export function signalSession(sid: number, signal: NodeJS.Signals): boolean {
  let reached = false;
  try {
    process.kill(-sid, signal);
    reached = true;
  } catch {
    // the group is gone, or of another user: its members are tried one by one below
  }
  for (const pid of sessionMembers(sid) ?? []) {
    try {
      process.kill(pid, signal);
      reached = true;
    } catch {
      // gone meanwhile, or of another user (a setuid program)
    }
  }
  return reached;
}
