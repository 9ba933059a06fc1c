/**
 * A container's memory read from the host, through its process (so a `FROM scratch` container,
 * with no `cat`, is read the same way): its working set from its memory cgroup, as the kubelet
 * computes it and compares it with the limit (usage − inactive file pages), and the process's
 * RSS from /proc, split into anonymous memory (this process alone: V8 heap, malloc) and pages of
 * mapped files (the binary: shared, reclaimable). Shared by bench/scenarios/pod-memory.ts and
 * bench/scenarios/operator-admission.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ContainerMemory {
  workingSetMB: number;
  rssMB: number;
  anonMB: number;
  fileMB: number;
}

export function statusKB(pid: number, key: string): number {
  return Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
}

/** A process's memory cgroup (v1, cgroupfs driver: …/kubepods/…/pod<uid>/<container id>; or v2). */
export function memoryCgroupDir(pid: number): string {
  const cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  const path = /^\d+:memory:(.*)$/m.exec(cgroup)?.[1] ?? /^0::(.*)$/m.exec(cgroup)?.[1];
  if (path !== undefined && existsSync(join('/sys/fs/cgroup/memory', path, 'memory.stat'))) return join('/sys/fs/cgroup/memory', path);
  if (path !== undefined && existsSync(join('/sys/fs/cgroup', path, 'memory.stat'))) return join('/sys/fs/cgroup', path);
  throw new Error(`no memory cgroup found for PID ${pid} (${path ?? 'no memory line in /proc/PID/cgroup'})`);
}

/** Usage − inactive file pages, bytes (cgroup v1 or v2). */
export function workingSetBytes(dir: string): number {
  const v1 = existsSync(join(dir, 'memory.usage_in_bytes'));
  const usage = Number(readFileSync(join(dir, v1 ? 'memory.usage_in_bytes' : 'memory.current'), 'utf8'));
  const stat = readFileSync(join(dir, 'memory.stat'), 'utf8');
  return usage - Number((v1 ? /^total_inactive_file (\d+)$/m : /^inactive_file (\d+)$/m).exec(stat)![1]);
}

/** The working set of the process's cgroup and the process's RSS, MiB. */
export function containerMemory(pid: number): ContainerMemory {
  return {
    workingSetMB: workingSetBytes(memoryCgroupDir(pid)) / 2 ** 20,
    rssMB: statusKB(pid, 'VmRSS') / 1024,
    anonMB: statusKB(pid, 'RssAnon') / 1024,
    fileMB: statusKB(pid, 'RssFile') / 1024,
  };
}
