/**
 * The SQLite part of `npm run bench` (bench/run.ts): the store's throughput and local failover.
 *   - acquire/renew attempts per second (each a real, fsynced SQLite transaction): 1 process;
 *     8 processes on one lease (1 renews, 7 contend); 8 processes on 8 leases;
 *   - failover latency of `leasehold sidecar` processes (bench/lib/sidecar-failover.ts): 2 after
 *     SIGKILL, 2 and 3 after SIGTERM, min / median / p95 over TRIALS trials each;
 *   - durable renewals against the disk's raw sync rate (bench/scenarios/sqlite-disk.ts).
 */
import { benchSqliteDisk } from './sqlite-disk.js';
import { SIDECAR_TIMING, sidecarFailover } from '../lib/sidecar-failover.js';
import { join } from 'node:path';
import { quantile, summary } from '../lib/quantile.js';
import { REPO, start, tempDir, waitFor, type Proc } from '../../test/support/cli.js';
import type { Phase } from '../phase.js';

export interface SqliteBenchOptions {
  trials: number;
  /** Seconds per throughput run. */
  seconds: number;
  log: (m: string) => void;
  /** Only the failover rows (`--only failover`): no throughput, no disk. */
  latencyOnly?: boolean;
}

export interface SqliteBenchResult {
  markdown: string;
  /** Durable renewals against the disk's raw fdatasync'ed overwrites (bench/scenarios/sqlite-disk.ts), the middle of its repeats; NaN when latencyOnly. */
  syncRatio: number;
  kill: ReturnType<typeof summary>;
  term: ReturnType<typeof summary>;
  /** SIGTERM with 3 candidates (2 standbys). */
  term3: ReturnType<typeof summary>;
  afterExpiry: ReturnType<typeof summary>;
}

const WORKER = join(REPO, 'bench/lib/store-worker.ts');

export async function benchSqlite({ trials: TRIALS, seconds: SECONDS, log, latencyOnly = false }: SqliteBenchOptions): Promise<SqliteBenchResult> {
  const throughput = async (procs: number, leases: number, dir: string, mode = ''): Promise<{ ops: number; leaderOps: number; durableOps: number }> => {
    const db = join(dir, `tp-${procs}-${leases}${mode}.db`);
    const ws: Proc[] = [];
    for (let i = 0; i < procs; i++) {
      ws.push(start(process.execPath, ['--import', 'tsx', WORKER, db, `bench-${i % leases}`, `w${i}`, String(SECONDS * 1000), ...(mode ? [mode] : [])]));
    }
    await waitFor('workers ready', () => ws.every((w) => w.stdout().includes('ready')), 60_000);
    for (const w of ws) w.child.stdin!.write('go\n');
    await Promise.all(ws.map((w) => w.exited));
    const rs = ws.map((w) => JSON.parse(w.stdout().split('\n')[1]!) as { ops: number; leaderOps: number; durableOps: number });
    const perS = (k: 'ops' | 'leaderOps' | 'durableOps') => rs.reduce((a, r) => a + r[k], 0) / SECONDS;
    return { ops: perS('ops'), leaderOps: perS('leaderOps'), durableOps: perS('durableOps') };
  };

  const failover = (signal: 'SIGKILL' | 'SIGTERM', candidates: number, dir: string) =>
    sidecarFailover({
      dir,
      backend: ['--db', join(dir, `failover-${signal}-${candidates}.db`), '--lease', 'bench'],
      signal,
      candidates,
      trials: TRIALS,
      label: `sqlite-${signal.toLowerCase()}-${candidates}`,
      log,
    });

  const dir = tempDir('leasehold-bench-');
  try {
    log('failover: SIGKILL');
    const killed = await failover('SIGKILL', 2, dir.path);
    const kill = summary(killed.fromSignal);
    const after = summary(killed.sinceFree);
    log('failover: SIGTERM, 2 and 3 candidates');
    const term = summary((await failover('SIGTERM', 2, dir.path)).fromSignal);
    const term3 = summary((await failover('SIGTERM', 3, dir.path)).fromSignal);
    const t = SIDECAR_TIMING;
    const failoverMd = `### Failover latency, \`leasehold sidecar\` processes on one SQLite file

Timings \`--lease-duration ${t.leaseDuration} --renew-deadline ${t.renewDeadline} --retry-period ${t.retryPeriod}\`, ${TRIALS} trials per row,
two candidates unless said otherwise. Measured from the signal to a standby's status file saying
leader (the app's view), polled every 2 ms; every standby has seen the leader before the signal.

| event | min | median | p95 | bound |
| --- | ---: | ---: | ---: | --- |
| SIGKILL (no release; the lease must expire) | ${kill.min} ms | ${kill.median} ms | ${kill.p95} ms | leaseDuration + 2.2 × retryPeriod = 2880 ms |
| SIGTERM (release on exit) | ${term.min} ms | ${term.median} ms | ${term.p95} ms | the standby's watch (50 ms poll of \`PRAGMA data_version\`) |
| SIGTERM, 3 candidates (release on exit, 2 standbys) | ${term3.min} ms | ${term3.median} ms | ${term3.p95} ms | the same |
| SIGKILL, from the expiry the standby observed to its takeover (its log's \`sinceFreeMs\`) | ${after.min} ms | ${after.median} ms | ${after.p95} ms | ≤ 50 ms (goal); never < 0 |

The standby learns of the leader's renewals through its watch, a 50 ms poll of
\`PRAGMA data_version\`, so its expiry is up to 50 ms later than the leader's last renewal + 2 s.
`;
    if (latencyOnly) return { markdown: failoverMd, kill, term, term3, afterExpiry: after, syncRatio: NaN };
    log(`throughput: ${SECONDS}s per run`);
    const one = await throughput(1, 1, dir.path);
    log(`sqlite: ${Math.round(one.leaderOps)} renewals/s by one writer (${Math.round(one.durableOps)} distinct milliseconds)`);
    const eightOne = await throughput(8, 1, dir.path);
    const eightEight = await throughput(8, 8, dir.path);
    log('durable renewals against the disk');
    const disk = await benchSqliteDisk({ seconds: 2 * SECONDS, repeats: 3, log });
    const ratio = quantile(disk.ratios, 0.5);
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    const md = `### SQLite store: acquire/renew attempts per second

Each attempt is one \`tryAcquireOrRenew\` through the real elector. A renewal or an
acquisition is a \`BEGIN IMMEDIATE\` transaction on the shared file, fsynced (WAL,
\`synchronous=FULL\`); a standby that finds the lease held only reads (no lock, no fsync), which
is why seven contending processes make many more attempts than one writer.

| processes | leases | attempts/s (all processes) | of which succeeded as leader |
| --- | --- | ---: | ---: |
| 1 | 1 | ${fmt(one.ops)} | ${fmt(one.leaderOps)} |
| 8 | 1 (one renews, seven contend) | ${fmt(eightOne.ops)} | ${fmt(eightOne.leaderOps)} |
| 8 | 8 (one each) | ${fmt(eightEight.ops)} | ${fmt(eightEight.leaderOps)} |

A sidecar makes one attempt per \`retryPeriod\` (2 s by default), so one file serves far more
candidates than one machine runs.

One writer made ${fmt(one.leaderOps)} renewals per second, but SQLite skips the write and the sync
of an update that stores the same bytes, which a renewal in the same millisecond as the previous
one does (its \`renewTime\` has millisecond resolution, so at most 1,000 of them a second can
differ). The store's durable renewals are therefore measured on their own, against the disk's
raw sync, in "SQLite durable renewals against the disk" below.

${SECONDS} s per throughput run.

${failoverMd}
${disk.markdown}`;
    return { markdown: md, kill, term, term3, afterExpiry: after, syncRatio: ratio };
  } finally {
    dir.cleanup();
  }
}

export const SQLITE_HEADING = '## SQLite (local mode)';

export const sqlitePhase: Phase<SqliteBenchResult> = {
  name: 'sqlite',
  what: () => "SQLite attempts per second, the disk's fsync rate, local failover",
  needsRoot: false,
  inFullRun: true,
  // 3 failover rows of about 3 s a trial, the rest throughput and disk.
  estimateS: (o) => 30 + 3 * o.trials * 3,
  heading: () => SQLITE_HEADING,
  section: (r, ctx) =>
    `${SQLITE_HEADING}\n\n_This section was re-measured by \`npm run bench -- --only sqlite --splice\` on ${ctx.today}, after the full run; the summary tables above quote the full run's SQLite figures._\n\n${r.markdown}`,
  run: (ctx) => benchSqlite({ trials: ctx.opts.trials, seconds: ctx.opts.seconds ?? 3, log: ctx.log }),
};
