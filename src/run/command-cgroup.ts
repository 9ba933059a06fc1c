import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A cgroup v2 of CMD's own, where the machine gives one: a process cannot leave it by setsid or
 * a double fork (only by a write to another cgroup's cgroup.procs, which needs the rights over
 * both), so it holds what a session cannot (session-processes.ts). Created under leasehold's own
 * cgroup (in a container with a cgroup namespace, or as root: a writable cgroup2 mount), removed
 * once empty. Without one (cgroup v1 only, no rights, a kernel without cgroup.kill: before
 * 5.14), `run` tracks CMD's session alone.
 */
export interface CommandCgroup {
  readonly dir: string;
  /** Whether a process is left in it (a zombie has left it already). */
  alive(): boolean;
  /** The PIDs in it, for a signal other than SIGKILL. */
  pids(): number[];
  /** SIGKILL to every process in it, forks under way included (cgroup.kill). */
  kill(): void;
  /** Removes it once empty; false while a process is left (it stays, empty later). */
  remove(): boolean;
}

/** Where leasehold's own cgroup v2 is, as a directory: the cgroup2 mount and /proc/self/cgroup's "0::" path. */
export function ownCgroupDir(): string | null {
  let mounts: string;
  let own: string;
  try {
    mounts = readFileSync('/proc/self/mountinfo', 'utf8');
    own = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return null;
  }
  const path = /^0::(\/.*)$/m.exec(own)?.[1];
  if (path === undefined) return null;
  for (const line of mounts.split('\n')) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPEROPTIONS"
    const [left, right] = line.split(' - ');
    if (!right?.startsWith('cgroup2 ')) continue;
    const [, , , root, mountPoint] = left!.split(' ');
    if (!root || !mountPoint || !(path === root || path.startsWith(root === '/' ? '/' : `${root}/`))) continue;
    return join(mountPoint, path.slice(root === '/' ? 0 : root.length));
  }
  return null;
}

/** The name of the cgroup of a runner's `n`th CMD: the runner's PID tells a stale one. */
export function commandCgroupName(runnerPid: number, n: number): string {
  return `leasehold-run-${runnerPid}-${n}`;
}

/**
 * Removes the empty cgroups of runners that are gone: one that left past the bound (a process
 * the kernel could not kill still in it) or was killed (its watcher empties it, but cannot
 * remove the cgroup it is in) leaves its cgroup behind; the next runner under the same parent
 * removes it. A cgroup still holding a process stays. Returns how many stay. `runners`: only
 * the cgroups of these runner PIDs (a test's teardown: another test running beside it may hold
 * a process the kernel cannot kill yet in a cgroup of its own).
 */
export function removeStaleCgroups(parent: string | null = ownCgroupDir(), runners?: ReadonlySet<number>): number {
  let names: string[];
  try {
    names = parent === null ? [] : readdirSync(parent);
  } catch {
    return 0;
  }
  let left = 0;
  for (const name of names) {
    const pid = /^leasehold-run-(\d+)-\d+$/.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || (runners !== undefined && !runners.has(Number(pid))) || existsSync(`/proc/${pid}`)) continue;
    try {
      rmdirSync(join(parent!, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') left++; // a process is still in it
    }
  }
  return left;
}

/**
 * A new cgroup for one CMD under `parent` (default: leasehold's own), or null where the machine
 * does not give one, with why (for the log at start).
 */
export function createCommandCgroup(name: string, parent: string | null = ownCgroupDir()): { cgroup: CommandCgroup | null; why: string } {
  if (parent === null) return { cgroup: null, why: 'no cgroup v2 mount holds this process' };
  const dir = join(parent, name);
  try {
    mkdirSync(dir);
  } catch (err) {
    return { cgroup: null, why: `cannot create a cgroup in ${parent} (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  if (!existsSync(join(dir, 'cgroup.kill'))) {
    rmdirSync(dir);
    return { cgroup: null, why: 'the kernel has no cgroup.kill (before Linux 5.14)' };
  }
  const pids = (): number[] => {
    try {
      return readFileSync(join(dir, 'cgroup.procs'), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map(Number);
    } catch {
      return []; // removed
    }
  };
  return {
    cgroup: {
      dir,
      pids,
      alive: () => pids().length > 0,
      kill: () => {
        try {
          writeFileSync(join(dir, 'cgroup.kill'), '1');
        } catch {
          // removed already
        }
      },
      remove: () => {
        try {
          rmdirSync(dir);
          return true;
        } catch (err) {
          return (err as NodeJS.ErrnoException).code === 'ENOENT';
        }
      },
    },
    why: '',
  };
}
