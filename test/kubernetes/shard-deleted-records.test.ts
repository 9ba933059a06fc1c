/**
 * Issue 41, finding B's equivalent on Kubernetes: the group's shard Leases deleted by hand
 * (`kubectl delete lease -l leasehold.io/group=workers,leasehold.io/group-record=shard`) under a
 * running group, with every member running and while one is stopped (SIGSTOP).
 * test/support/shard-deleted-records.ts has the scenario; docs/testing.md the figures. N is small
 * here, as in shard-pause.test.ts: each shard is a Lease.
 */
import { describe, it } from 'node:test';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { backendArgs, env, freshNamespace } from '../support/kube.js';
import { SHORT_TIMING } from '../support/shard-pause.js';
import { deletedRecordsScenario, assertNothingReused, formatDeletionReport } from '../support/shard-deleted-records.js';

const N = Number(process.env.LEASEHOLD_SHARD_DELETE_N ?? 64);
/** One deletion with every member running, then one in each member's pause: shorter and longer than the lease. */
const ROUNDS_PAUSE_MS = [0, 1_500, SHORT_TIMING.leaseMs + 300, SHORT_TIMING.leaseMs + 600];

const SHARD_LEASES = 'leasehold.io/group=workers,leasehold.io/group-record=shard';

/** kubectl without blocking the event loop: the sampler keeps reading while the Leases go. */
async function kubectlLines(args: string[]): Promise<string[]> {
  const { stdout } = await promisify(execFile)(join(env().binDir, 'kubectl'), ['--kubeconfig', env().admin, ...args]);
  return stdout.split('\n').filter((l) => l !== '');
}

describe('shard Leases deleted by hand under a running group, and with every member stopped (Kubernetes)', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-delete-');

  it(`3 members, ${N} shards, ${ROUNDS_PAUSE_MS.length + 1} deletions: no shard listed by two members, no token reused`, { timeout: 300_000 }, async () => {
    const ns = await freshNamespace('shard-delete');
    const r = await deletedRecordsScenario({
      dir: dir.path,
      backendArgs: backendArgs(ns, 'workers'),
      shards: N,
      timing: SHORT_TIMING,
      roundsPauseMs: ROUNDS_PAUSE_MS,
      deleteShardRecords: async () => (await kubectlLines(['delete', 'lease', '-n', ns, '-l', SHARD_LEASES])).filter((l) => l.includes('" deleted')).length,
      countShardRecords: async () => (await kubectlLines(['get', 'lease', '-n', ns, '-l', SHARD_LEASES, '-o', 'name'])).length,
      restartRound: true,
      procs,
      say: (l) => console.log(l),
    });
    console.log(formatDeletionReport('kubernetes', N, r));
    assertNothingReused(r, 'Leases');
  });
});
