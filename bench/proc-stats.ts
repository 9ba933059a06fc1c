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
