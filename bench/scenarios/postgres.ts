/**
 * The PostgreSQL part of `npm run bench` (bench/run.ts), on a real server started for the run
 * (test/support/postgres.ts): acquire/renew attempts per second through the real elector, and the
 * failover latency of `leasehold sidecar` processes (bench/lib/sidecar-failover.ts): 2 after SIGKILL,
 * 2 and 3 after SIGTERM.
 */
import { join } from 'node:path';
import { summary } from '../lib/quantile.js';
import { REPO, start, tempDir, waitFor, type Proc } from '../../test/support/cli.js';
import { SIDECAR_TIMING, sidecarFailover } from '../lib/sidecar-failover.js';
import { startPostgres } from '../../test/support/postgres.js';
import type { Phase } from '../phase.js';

const WORKER = join(REPO, 'bench/lib/store-worker.ts');

export interface PostgresBenchResult {
  markdown: string;
  kill: ReturnType<typeof summary>;
  term: ReturnType<typeof summary>;
  /** SIGTERM with 3 candidates (2 standbys). */
  term3: ReturnType<typeof summary>;
  /** After SIGKILL, the new leader's own `sinceFreeMs`. */
  afterExpiry: ReturnType<typeof summary>;
}

export async function benchPostgres({
  trials,
  seconds,
  log,
  latencyOnly = false,
}: {
  trials: number;
  seconds: number;
  log: (m: string) => void;
  /** Only the failover rows (`--only failover`): no throughput. */
  latencyOnly?: boolean;
}): Promise<PostgresBenchResult> {
  const pg = await startPostgres();
  const dir = tempDir('leasehold-bench-pg-');
  try {
    const throughput = async (procs: number, leases: number) => {
      const ws: Proc[] = [];
      for (let i = 0; i < procs; i++)
        ws.push(start(process.execPath, ['--import', 'tsx', WORKER, pg.url(), `tp-${procs}-${leases}-${i % leases}`, `w${i}`, String(seconds * 1000)]));
      await waitFor('workers ready', () => ws.every((w) => w.stdout().includes('ready')), 60_000);
      for (const w of ws) w.child.stdin!.write('go\n');
      await Promise.all(ws.map((w) => w.exited));
      const rs = ws.map((w) => JSON.parse(w.stdout().split('\n')[1]!) as { ops: number; leaderOps: number });
      return { ops: rs.reduce((a, r) => a + r.ops, 0) / seconds, leaderOps: rs.reduce((a, r) => a + r.leaderOps, 0) / seconds };
    };
    const failover = (signal: 'SIGKILL' | 'SIGTERM', candidates: number) =>
      sidecarFailover({
        dir: dir.path,
        backend: ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', `failover-${signal.toLowerCase()}-${candidates}`],
        signal,
        candidates,
        trials,
        label: `postgres-${signal.toLowerCase()}-${candidates}`,
        log,
      });
    log(`postgres failover: ${trials} trials per row (about ${Math.round((trials * 9) / 60) + 1} min)`);
    const killed = await failover('SIGKILL', 2);
    const kill = summary(killed.fromSignal);
    const afterExpiry = summary(killed.sinceFree);
    const term = summary((await failover('SIGTERM', 2)).fromSignal);
    const term3 = summary((await failover('SIGTERM', 3)).fromSignal);
    const t = SIDECAR_TIMING;
    const failoverMd = `### Failover latency, \`leasehold sidecar\` processes on one PostgreSQL table

Timings \`--lease-duration ${t.leaseDuration} --renew-deadline ${t.renewDeadline} --retry-period ${t.retryPeriod}\`, ${trials} trials per row,
two candidates unless said otherwise; from the signal to a standby's status file saying leader,
polled every 2 ms; every standby has seen the leader before the signal.

| event | min | median | p95 | bound |
| --- | ---: | ---: | ---: | --- |
| SIGKILL (no release; the lease must expire) | ${kill.min} ms | ${kill.median} ms | ${kill.p95} ms | leaseDuration + 2.2 × retryPeriod = 2880 ms |
| SIGTERM (release on exit, NOTIFY to the standby) | ${term.min} ms | ${term.median} ms | ${term.p95} ms | |
| SIGTERM, 3 candidates (release on exit, NOTIFY to 2 standbys) | ${term3.min} ms | ${term3.median} ms | ${term3.p95} ms | |
| SIGKILL, from the expiry the standby observed to its takeover (its log's \`sinceFreeMs\`) | ${afterExpiry.min} ms | ${afterExpiry.median} ms | ${afterExpiry.p95} ms | ≤ 50 ms (goal); never < 0 |
`;
    if (latencyOnly) return { markdown: failoverMd, kill, term, term3, afterExpiry };
    log(`postgres throughput: ${seconds} s per run (about ${3 * seconds + 10} s)`);
    const one = await throughput(1, 1);
    const eightOne = await throughput(8, 1);
    const eightEight = await throughput(8, 8);
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    const markdown = `### PostgreSQL store: acquire/renew attempts per second

A local PostgreSQL ${pg.version} started for the run (\`test/support/postgres.ts\`, fsync on), reached
over TCP on loopback. Each attempt is one \`tryAcquireOrRenew\` through the real elector; a write
is an \`UPDATE ... WHERE version = $2\` committed with \`synchronous_commit = on\`.

| processes | leases | attempts/s (all processes) | of which succeeded as leader |
| --- | --- | ---: | ---: |
| 1 | 1 | ${fmt(one.ops)} | ${fmt(one.leaderOps)} |
| 8 | 1 (one renews, seven contend) | ${fmt(eightOne.ops)} | ${fmt(eightOne.leaderOps)} |
| 8 | 8 (one each) | ${fmt(eightEight.ops)} | ${fmt(eightEight.leaderOps)} |

${failoverMd}`;
    return { markdown, kill, term, term3, afterExpiry };
  } finally {
    dir.cleanup();
    await pg.stop();
  }
}

export const POSTGRES_HEADING = '## PostgreSQL';

export const postgresPhase: Phase<PostgresBenchResult> = {
  name: 'postgres',
  what: () => 'PostgreSQL attempts per second and failover',
  needsRoot: false,
  inFullRun: true,
  estimateS: (o) => 30 + 3 * o.trials * 3,
  heading: () => POSTGRES_HEADING,
  run: (ctx) => benchPostgres({ trials: ctx.opts.trials, seconds: ctx.opts.seconds ?? 3, log: ctx.log }),
};
