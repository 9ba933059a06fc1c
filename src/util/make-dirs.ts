import { mkdirSync, statSync, statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Filesystems the kernel fills itself (statfs f_type from linux/magic.h): access() lets root
 * "write" there, yet no directory can be made. Found before anything is written.
 */
const KERNEL_FILESYSTEMS: Record<number, string> = {
  0x9fa0: 'proc',
  0x62656572: 'sysfs',
  0x63677270: 'cgroup2',
  0x27e0eb: 'cgroup',
  0x64626720: 'debugfs',
  0x74726163: 'tracefs',
  0x73636673: 'securityfs',
  0x1cd1: 'devpts',
};

/** A directory that could not be made, named with the reason; `code` is the system's. */
export class MakeDirsError extends Error {
  readonly code: string | undefined;
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'MakeDirsError';
    this.code = (cause as NodeJS.ErrnoException).code;
  }
}

/** The kernel filesystem `path` is on (proc, sysfs, ...), or undefined for any other. */
export function kernelFilesystem(path: string): string | undefined {
  return KERNEL_FILESYSTEMS[statfsSync(path).type >>> 0];
}

/**
 * Why no directory can be made under `existing`, the nearest existing ancestor, when the
 * kernel's filesystems say "no such file" instead: else the error itself.
 */
export function explainMkdirFailure(existing: string, err: unknown): string {
  const kernel = kernelFilesystem(existing);
  if (kernel) return `${existing} is a ${kernel} filesystem, where the kernel makes every entry`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * `mkdir -p`, one level at a time from the nearest existing ancestor. Node's own recursive
 * mkdirSync loops forever where mkdir answers ENOENT under an existing directory (in /proc:
 * `--db /proc/x/y.db` hung at 80 % CPU); here every failure is thrown at once.
 */
export function makeDirs(dir: string): void {
  const missing: string[] = [];
  let probe = resolve(dir);
  for (;;) {
    try {
      if (statSync(probe).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: ${probe} is not a directory`), { code: 'ENOTDIR' });
    } catch (err) {
      const parent = dirname(probe);
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || parent === probe) throw err;
      missing.push(probe);
      probe = parent;
    }
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (err) {
      // EEXIST: another process made it. Else the error names the directory and the reason.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new MakeDirsError(`${d} cannot be created: ${explainMkdirFailure(dirname(d), err)}`, err);
    }
  }
}
