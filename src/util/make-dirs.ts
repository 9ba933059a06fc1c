import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

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
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // another process made it
    }
  }
}
