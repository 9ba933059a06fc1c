/**
 * The PostgreSQL part of `npm run bench` (bench/run.ts), on a real server started for the run
 * (test/support/postgres.ts): acquire/renew attempts per second through the real elector, and the
 * failover latency of two `leasehold sidecar` processes after SIGKILL and SIGTERM.
 */
import { join } from 'node:path';
import { summary } from './cli-args.js';
import { REPO, start, tempDir, waitFor, type Proc } from '../test/support/cli.js';
import { startSidecar, validLeaders, type Candidate } from '../test/support/sidecars.js';
import { startPostgres } from '../test/support/postgres.js';

const WORKER = join(REPO, 'bench/store-worker.ts');
const TIMING = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };

export interface PostgresBenchResult {
  markdown: string;
  kill: ReturnType<typeof summary>;
  term: ReturnType<typeof summary>;
}

export async function benchPostgres({ trials, seconds, log }: { trials: number; seconds: number; log: (m: string) => void }): Promise<PostgresBenchResult> {
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
    const failover = async (signal: 'SIGKILL' | 'SIGTERM') => {
      const backend = ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', `failover-${signal.toLowerCase()}`];
      let cands: Candidate[] = [startSidecar(dir.path, `${signal}-a`, backend, TIMING), startSidecar(dir.path, `${signal}-b`, backend, TIMING)];
      const out: number[] = [];
      try {
        for (let i = 0; i < trials; i++) {
          const leader = await waitFor('a leader', () => validLeaders(cands)[0], 20_000);
          await new Promise((r) => setTimeout(r, 500));
          const t0 = performance.now();
          leader.c.proc.kill(signal);
          await waitFor('the standby to lead', () => validLeaders(cands).find((l) => l.c !== leader.c), 20_000, 2);
          out.push(Math.round(performance.now() - t0));
          await leader.c.proc.exited;
          cands = cands.map((c) => (c === leader.c ? startSidecar(dir.path, c.id, backend, TIMING) : c));
          log(`postgres ${signal} trial ${i + 1}/${trials}: ${out.at(-1)} ms`);
        }
      } finally {
        for (const c of cands) c.proc.kill('SIGKILL');
        await Promise.all(cands.map((c) => c.proc.exited));
      }
      return out;
    };
    log(`postgres throughput: ${seconds} s per run (about ${3 * seconds + 10} s)`);
    const one = await throughput(1, 1);
    const eightOne = await throughput(8, 1);
    const eightEight = await throughput(8, 8);
    log(`postgres failover: ${trials} trials per signal (about ${Math.round((trials * 4) / 60) + 1} min)`);
    const kill = summary(await failover('SIGKILL'));
    const term = summary(await failover('SIGTERM'));
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

### Failover latency, two \`leasehold sidecar\` processes on one PostgreSQL table

Timings \`--lease-duration 2s --renew-deadline 1500ms --retry-period 400ms\`, ${trials} trials per
signal, from the signal to the standby's status file saying leader, polled every 2 ms.

| event | min | median | p95 | bound |
| --- | ---: | ---: | ---: | --- |
| SIGKILL (no release; the lease must expire) | ${kill.min} ms | ${kill.median} ms | ${kill.p95} ms | leaseDuration + 2.2 × retryPeriod = 2880 ms |
| SIGTERM (release on exit, NOTIFY to the standby) | ${term.min} ms | ${term.median} ms | ${term.p95} ms | |
`;
    return { markdown, kill, term };
  } finally {
    dir.cleanup();
    await pg.stop();
  }
}
