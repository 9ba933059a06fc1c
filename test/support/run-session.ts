/**
 * What the `leasehold run` session tests share (test/sqlite/run-session*.test.ts): CMDs that
 * start a worker (session_worker.py) in each of the ways a worker leaves CMD's process group,
 * and what the worker and the status files say.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './cli.js';
import { createCommandCgroup } from '../../src/run/command-cgroup.js';

export const WORKER = join(REPO, 'test/support/session_worker.py');
const SETPGID = join(REPO, 'test/support/setpgid_spawn.py');

/** CMD for candidate `name`, by how it starts its worker. */
export const COMMANDS: Record<string, (work: string, name: string) => string[]> = {
  // A job script that guards its step with timeout(1), which calls setpgid(0, 0). (As CMD itself
  // timeout cannot leave: CMD leads its session, where setpgid fails.)
  "sh -c 'timeout 60 worker'": (work, name) => ['sh', '-c', 'timeout 60 python3 "$0" "$1" "$2"; exit', WORKER, work, name],
  "sh -c 'worker & wait'": (work, name) => ['sh', '-c', 'python3 "$0" "$1" "$2" & wait', WORKER, work, name],
  'nohup worker &': (work, name) => ['sh', '-c', 'nohup python3 "$0" "$1" "$2" >/dev/null 2>&1 & sleep 60', WORKER, work, name],
  'os.setpgid(0, 0)': (work, name) => ['python3', SETPGID, 'python3', WORKER, work, name],
};

/** A worker in a session of its own: only a cgroup of CMD's holds it (docs/drain.md). */
export const SETSID = "sh -c 'setsid -f worker; sleep 60'";
COMMANDS[SETSID] = (work, name) => ['sh', '-c', 'setsid -f python3 "$0" "$1" "$2"; sleep 60', WORKER, work, name];

/** Whether `run` can give CMD a cgroup v2 of its own here (as it would: command-cgroup.ts). */
export function cgroupAvailable(): boolean {
  const { cgroup } = createCommandCgroup(`leasehold-test-probe-${process.pid}`);
  cgroup?.remove();
  return cgroup !== null;
}

/** The PID worker `name` wrote, once it runs. */
export function workerPid(work: string, name: string): number | undefined {
  try {
    return Number(readFileSync(join(work, `worker-${name}`), 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

/** The holder a candidate's status.json names. */
export function holder(statusDir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(statusDir, 'status.json'), 'utf8')) as { holder: string | null }).holder ?? undefined;
  } catch {
    return undefined;
  }
}
