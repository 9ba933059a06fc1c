/**
 * Runs one of the build scripts beside this file (build-helm.sh, build-prometheus.sh,
 * build-control-plane.sh): each builds its tool once into ~/.cache/leasehold, prints progress
 * on stderr and the path on its last stdout line, which this returns.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

export function buildTool(script: string): string {
  const out = execFileSync('bash', [join(HERE, script)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return out.toString().trim().split('\n').at(-1)!;
}
