/**
 * A process stuck in the kernel, for tests: the cgroup v1 freezer holds the processes put in it
 * in the kernel, where a SIGKILL stays pending until they are thawed, as for a process in
 * uninterruptible sleep (a hung disk or network filesystem). Needs root and a v1 freezer
 * hierarchy; `freezerAvailable()` says whether this machine has both.
 */
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './cli.js';

const ROOT = '/sys/fs/cgroup/freezer';

export function freezerAvailable(): boolean {
  if (process.getuid?.() !== 0 || !existsSync(join(ROOT, 'tasks'))) return false;
  try {
    accessSync(ROOT, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

export interface Freezer {
  /** Moves `pid` into the cgroup and freezes it; resolves once the kernel says it is frozen. */
  freeze(pid: number): Promise<void>;
  thaw(): void;
  /** Thaws and removes the cgroup, once its processes (killed by then) have left it. */
  remove(): Promise<void>;
}

export function freezer(name: string): Freezer {
  const dir = join(ROOT, `leasehold-test-${name}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const thaw = () => {
    try {
      writeFileSync(join(dir, 'freezer.state'), 'THAWED');
    } catch {
      // removed already
    }
  };
  return {
    async freeze(pid) {
      writeFileSync(join(dir, 'tasks'), String(pid));
      writeFileSync(join(dir, 'freezer.state'), 'FROZEN');
      await waitFor('the freezer to freeze', () => readFileSync(join(dir, 'freezer.state'), 'utf8').trim() === 'FROZEN', 5_000, 10);
    },
    thaw,
    async remove() {
      thaw();
      if (!existsSync(dir)) return;
      // A killed process leaves the cgroup once it has exited.
      await waitFor(
        'the cgroup to be empty',
        () => {
          try {
            rmdirSync(dir);
            return true;
          } catch {
            return false;
          }
        },
        5_000,
        10,
      );
    },
  };
}
