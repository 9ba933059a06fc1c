import { realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, isAbsolute } from 'node:path';

/**
 * `path` as the system will reach it once its missing parts are made: the real path of its
 * nearest existing ancestor (links and `..` resolved), then the rest as given. Two flags naming
 * one place through a link or a relative path compare equal.
 */
export function resolveThroughExisting(path: string): string {
  const missing: string[] = [];
  let probe = resolve(path);
  for (;;) {
    try {
      return join(realpathSync(probe), ...missing.reverse());
    } catch {
      const parent = dirname(probe);
      if (parent === probe) return resolve(path);
      missing.push(basename(probe));
      probe = parent;
    }
  }
}

/** True when `inner` is `outer` or under it (both already resolved). */
export function isInside(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}
