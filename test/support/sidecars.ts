import { join } from 'node:path';
import { readLeadership } from '../../src/status/status-reader.js';
import { readFileSync } from 'node:fs';
import { startCli, type Proc } from './cli.js';

export interface Candidate {
  id: string;
  statusDir: string;
  proc: Proc;
}

export interface Timing {
  leaseDuration: string;
  renewDeadline: string;
  retryPeriod: string;
}

/** Starts one `leasehold sidecar` with its own status dir and no HTTP listener. */
export function startSidecar(dir: string, id: string, backendArgs: string[], t: Timing, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Candidate {
  const statusDir = join(dir, `status-${id}`);
  const proc = startCli(
    [
      'sidecar',
      ...backendArgs,
      '--identity',
      id,
      '--status-dir',
      statusDir,
      '--listen',
      'off',
      '--lease-duration',
      t.leaseDuration,
      '--renew-deadline',
      t.renewDeadline,
      '--retry-period',
      t.retryPeriod,
      ...extra,
    ],
    env,
  );
  return { id, statusDir, proc };
}

/** Candidates whose status volume currently says leader (raw isLeader, not judged by validUntil). */
export function leadersByStatus(cands: Candidate[]): { c: Candidate; token: number }[] {
  const out: { c: Candidate; token: number }[] = [];
  for (const c of cands) {
    try {
      const s = JSON.parse(readFileSync(join(c.statusDir, 'status.json'), 'utf8')) as { isLeader: boolean; fencingToken: number };
      if (s.isLeader) out.push({ c, token: s.fencingToken });
    } catch {
      // not written yet
    }
  }
  return out;
}

/** Candidates that are leader by the app-side rule (isLeader and validUntil in the future). */
export function validLeaders(cands: Candidate[]): { c: Candidate; token: number }[] {
  return cands.flatMap((c) => {
    const v = readLeadership(c.statusDir);
    return v.isLeader ? [{ c, token: v.fencingToken! }] : [];
  });
}
