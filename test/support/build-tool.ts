/**
 * Runs one of the build scripts beside this file (build-helm.sh, build-prometheus.sh,
 * build-control-plane.sh, build-go-candidate.sh, build-kep-5866-vectors.sh): each builds its tool
 * once into ~/.cache/leasehold, prints progress on stderr and the path on its last stdout line,
 * which this returns.
 *
 * Under scripts/test.sh the tools step (build-test-tools.sh) has built them all before any test
 * started its clock, and LEASEHOLD_TOOLS_PREBUILT lists the scripts it ran. A script missing
 * from that list would build inside a test's timeout on a cold machine, so it is refused here on
 * every machine, warm or cold.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

export function buildTool(script: string, args: string[] = [], env: NodeJS.ProcessEnv = process.env): string {
  const prebuilt = env.LEASEHOLD_TOOLS_PREBUILT;
  if (prebuilt !== undefined && !prebuilt.split(' ').includes(script)) {
    throw new Error(
      `${script} was not run by the tools step (it ran: ${prebuilt || 'nothing'}); add it to test/support/build-test-tools.sh so that it is built before any test starts its clock`,
    );
  }
  const out = execFileSync('bash', [join(HERE, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env });
  return out.toString().trim().split('\n').at(-1)!;
}
