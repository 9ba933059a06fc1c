import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * leasehold's own version, from the package.json above this file (dist/cmd/ built, cmd/ run
 * from source) that is leasehold's: installed as a dependency, the nearest package.json above
 * node_modules is the app's.
 */
export function ownVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'leasehold' && pkg.version) return pkg.version;
    } catch {
      // none here: look further up
    }
    const parent = dirname(dir);
    if (parent === dir) return 'unknown';
    dir = parent;
  }
}
