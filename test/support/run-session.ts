/**
 * What the `leasehold run` session tests share (test/sqlite/run-session*.test.ts): CMDs that
 * start a worker (session_worker.py) in each of the ways a worker leaves CMD's process group,
 * and what the worker and the status files say.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { REPO, start, waitFor, type Proc } from './cli.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { ConflictError } from '../../src/errors.js';
import { createCommandCgroup, removeStaleCgroups } from '../../src/run/command-cgroup.js';

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

/** A neighbour holding the database's write lock (BEGIN IMMEDIATE) until killed: every write is refused busy. */
export function holdWriteLock(db: string): Proc {
  const script = [
    'import sqlite3, time',
    `c = sqlite3.connect(${JSON.stringify(db)}, isolation_level=None)`,
    "c.execute('BEGIN IMMEDIATE')",
    "print('locked', flush=True)",
    'time.sleep(60)',
  ].join('\n');
  return start('python3', ['-c', script]);
}

/** The lease written by another writer (compare-and-swap on the real file), for one second. */
export async function takeLease(db: string, lease: string): Promise<void> {
  const store = new SqliteLeaseStore(db);
  try {
    for (;;) {
      const got = (await store.get(lease))!;
      const taken = {
        ...got.record,
        holderIdentity: 'intruder',
        leaseDurationSeconds: 1,
        renewTime: new Date(),
        leaseTransitions: got.record.leaseTransitions + 1,
      };
      try {
        await store.update(lease, taken, got.version);
        return;
      } catch (err) {
        // The leader renewed between the read and the write: read again.
        if (!(err instanceof ConflictError)) throw err;
      }
    }
  } finally {
    await store.close();
  }
}

/** The lease's row deleted by hand, as a neighbour with sqlite3 would. */
export async function deleteRecord(db: string, lease: string): Promise<void> {
  const script = [
    'import sqlite3, sys',
    `c = sqlite3.connect(${JSON.stringify(db)}, timeout=10)`,
    "c.execute('DELETE FROM leases WHERE name = ?', (sys.argv[1],))",
    'c.commit()',
  ];
  const p = start('python3', ['-c', script.join('\n'), lease]);
  const exit = await p.exited;
  assert.equal(exit.code, 0, p.stderr());
}

/**
 * A `run` test file's teardown: every process it started SIGKILLed and awaited, then the command
 * cgroups its runners left (a leasehold killed by kill -9 leaves its CMD's behind, emptied by
 * its watcher) removed once empty. Only this file's runners': a file beside it may hold a
 * process the kernel cannot kill yet.
 */
export async function stopRunners(procs: readonly Proc[]): Promise<void> {
  for (const p of procs) {
    p.kill('SIGKILL');
    await p.exited;
  }
  await waitFor(
    "the cgroups of this file's runners gone to be removed",
    () => removeStaleCgroups(undefined, new Set(procs.map((p) => p.pid))) === 0,
    10_000,
    20,
  );
}
