import { readFileSync } from 'node:fs';

/** Resident set size of a live process, MiB (VmRSS from /proc). */
export function rssMB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

/** CPU time of a process so far (utime + stime), in clock ticks (USER_HZ, 100 on Linux). */
export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** A thread's scheduler figures (/proc/PID/schedstat): time on a CPU, time runnable but waiting for one (ns), timeslices run. */
export interface SchedStat {
  cpuNs: number;
  waitNs: number;
  slices: number;
}

export function parseSchedstat(text: string): SchedStat {
  const [cpuNs, waitNs, slices] = text.trim().split(/\s+/).map(Number);
  if (![cpuNs, waitNs, slices].every((n) => Number.isFinite(n))) throw new Error(`not a schedstat line: ${JSON.stringify(text)}`);
  return { cpuNs: cpuNs!, waitNs: waitNs!, slices: slices! };
}

/** The main thread's scheduler figures (for Node, the thread that runs JavaScript). */
export function schedStat(pid: number): SchedStat {
  return parseSchedstat(readFileSync(`/proc/${pid}/schedstat`, 'utf8'));
}
