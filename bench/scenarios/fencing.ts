/**
 * The fencing part of `npm run bench` (issue 42): one row written by 1 and by 16 writer
 * processes, plain (autocommit), in a transaction of its own, and through the fence helpers
 * (withSqliteFence, withPostgresFence), on an SQLite file and on a real PostgreSQL started for
 * the run. The goal: a fenced write's p50 within 1.3× the same write's in a transaction, since
 * the fence adds one statement to it (on PostgreSQL sent with the BEGIN: no round trip).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { REPO, start, tempDir, waitFor, type Proc } from '../../test/support/cli.js';
import { startPostgres, type PostgresServer } from '../../test/support/postgres.js';
import { createPostgresFenceTable, createSqliteFenceTable } from '../../src/fencing/index.js';
import { quantiles, type Quantiles } from '../lib/quantile.js';
import { schedStat } from '../lib/proc-stats.js';
import type { FenceBenchMode } from '../lib/fence-worker.js';
import type { Phase, PhaseContext } from '../phase.js';

const WORKER = join(REPO, 'bench/lib/fence-worker.ts');
const SQLITE_MODES: FenceBenchMode[] = ['plain', 'transaction', 'fenced'];
const POSTGRES_MODES: FenceBenchMode[] = [...SQLITE_MODES, 'fenced-previous', 'sql-function'];
const WRITERS = [1, 16];
const GOAL = 1.3;

export interface FenceRow {
  store: string;
  writers: number;
  mode: FenceBenchMode;
  q: Quantiles;
  /** Per write: the writers' CPU time, the server's (PostgreSQL), the WAL written (PostgreSQL). */
  cost: { clientUs: number; serverUs?: number; walBytes?: number };
}

/** What the server spent, sampled around each slice (PostgreSQL: its processes' CPU time, its WAL position). */
interface ServerMeter {
  cpuNs: () => number;
  walBytes: () => Promise<number>;
}

export interface FencingBenchResult {
  markdown: string;
  rows: FenceRow[];
}

/**
 * Each row's seconds are spread over rounds of at most 2 s, the modes taking turns (each round
 * starting with the next mode), so a machine whose load changes during the run weighs on every
 * mode alike.
 */
export function fenceRounds(seconds: number, modes: readonly FenceBenchMode[]): { sliceMs: number; order: FenceBenchMode[][] } {
  const rounds = Math.max(1, Math.ceil(seconds / 2));
  const order = Array.from({ length: rounds }, (_, r) => modes.map((_, i) => modes[(r + i) % modes.length]!));
  return { sliceMs: Math.round((seconds * 1000) / rounds), order };
}

/** Runs every mode at each writer count on one store's 16 started workers. */
async function measure(
  store: string,
  target: string,
  modes: readonly FenceBenchMode[],
  seconds: number,
  log: (m: string) => void,
  server?: ServerMeter,
): Promise<FenceRow[]> {
  const workers: Proc[] = [];
  try {
    for (let i = 0; i < Math.max(...WRITERS); i++) workers.push(start(process.execPath, ['--import', 'tsx', WORKER, target, `w${i}`]));
    await waitFor(`${store} fence workers ready`, () => workers.every((w) => w.stdout().startsWith('ready')), 120_000, 100);
    const seen = workers.map(() => 0);
    const rows: FenceRow[] = [];
    const { sliceMs, order } = fenceRounds(seconds, modes);
    for (const writers of WRITERS) {
      const ms = new Map<FenceBenchMode, number[]>(modes.map((m) => [m, []]));
      const spent = new Map(modes.map((m) => [m, { clientUs: 0, serverNs: 0, walBytes: 0 }]));
      for (const round of order) {
        for (const mode of round) {
          const active = workers.slice(0, writers);
          const [cpu0, wal0] = server ? [server.cpuNs(), await server.walBytes()] : [0, 0];
          for (const w of active) w.child.stdin!.write(`go ${mode} ${sliceMs}\n`);
          const results = await waitFor(
            `${store} ${mode} ×${writers}`,
            () => {
              const lines = active.map(
                (w, i) =>
                  w
                    .stdout()
                    .split('\n')
                    .filter((l) => l.startsWith('{'))[seen[i]!],
              );
              return lines.every((l) => l !== undefined) ? lines : undefined;
            },
            sliceMs + 120_000,
            50,
          );
          active.forEach((_, i) => seen[i]!++);
          const s = spent.get(mode)!;
          if (server) {
            s.serverNs += server.cpuNs() - cpu0;
            s.walBytes += (await server.walBytes()) - wal0;
          }
          for (const l of results) {
            const r = JSON.parse(l) as { ms: number[]; cpuUs: number };
            ms.get(mode)!.push(...r.ms);
            s.clientUs += r.cpuUs;
          }
        }
      }
      for (const mode of modes) {
        const q = quantiles(ms.get(mode)!);
        const s = spent.get(mode)!;
        const per = (v: number) => (q.n > 0 ? Math.round(v / q.n) : 0);
        const cost = { clientUs: per(s.clientUs), ...(server ? { serverUs: per(s.serverNs / 1000), walBytes: per(s.walBytes) } : {}) };
        rows.push({ store, writers, mode, q, cost });
        log(`fencing ${store} ${mode} ×${writers}: ${q.n} writes, p50 ${q.median} ms, per write ${JSON.stringify(cost)}`);
      }
    }
    for (const w of workers) w.child.stdin!.write('exit\n');
    await Promise.all(workers.map((w) => w.exited));
    return rows;
  } finally {
    for (const w of workers) w.kill('SIGKILL');
  }
}

/** The server's processes (the postmaster's children: the writers' backends, the WAL writer...) and its WAL insert position. */
function postgresMeter(server: PostgresServer, client: pg.Client): ServerMeter {
  const postmaster = Number(readFileSync(join(server.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    cpuNs: () => {
      let ns = 0;
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
          const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
          if (ppid === postmaster || Number(entry) === postmaster) ns += schedStat(Number(entry)).cpuNs;
        } catch {
          // Gone meanwhile (a backend that ended): its time is no longer counted either way.
        }
      }
      return ns;
    },
    walBytes: async () => Number((await client.query<{ b: string }>("SELECT pg_current_wal_insert_lsn() - '0/0' AS b")).rows[0]!.b),
  };
}

export async function benchFencing({ seconds, log }: { seconds: number; log: (m: string) => void }): Promise<FencingBenchResult> {
  const load = [loadavg()[0]!];
  const dir = tempDir('leasehold-bench-fence-');
  const server = await startPostgres();
  try {
    const file = join(dir.path, 'fenced.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    createSqliteFenceTable(db);
    db.exec("CREATE TABLE bench_row (id INTEGER PRIMARY KEY, value INTEGER, writer TEXT); INSERT INTO bench_row VALUES (1, 0, '')");
    db.close();
    const admin = new pg.Client({ connectionString: server.url() });
    await admin.connect();
    await createPostgresFenceTable(admin, { withFunction: true });
    await admin.query("CREATE TABLE bench_row (id int PRIMARY KEY, value bigint, writer text); INSERT INTO bench_row VALUES (1, 0, '')");
    await admin.end();
    const meterClient = new pg.Client({ connectionString: server.url('postgres') });
    await meterClient.connect();
    let rows: FenceRow[];
    try {
      rows = [
        ...(await measure('SQLite', file, SQLITE_MODES, seconds, log)),
        ...(await measure(`PostgreSQL ${server.version}`, server.url(), POSTGRES_MODES, seconds, log, postgresMeter(server, meterClient))),
      ];
    } finally {
      await meterClient.end();
    }
    load.push(loadavg()[0]!);
    return { markdown: fencingMarkdown(rows, seconds, load), rows };
  } finally {
    await server.stop();
    dir.cleanup();
  }
}

export function fencingMarkdown(rows: FenceRow[], seconds: number, load: number[]): string {
  const find = (r: FenceRow, mode: FenceBenchMode) => rows.find((x) => x.store === r.store && x.writers === r.writers && x.mode === mode)!;
  const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : '–');
  const label: Record<FenceBenchMode, string> = {
    plain: 'unfenced, autocommit',
    transaction: 'unfenced, in a transaction',
    fenced: 'fenced (the helper)',
    'fenced-previous': 'fenced, the previous check (raw SQL)',
    'sql-function': 'fenced, the SQL function (raw SQL)',
  };
  const lines = rows.map((r) => {
    const tx = find(r, 'transaction');
    const goal = r.mode === 'fenced' ? (r.q.median <= GOAL * tx.q.median ? 'met' : '**not met**') : '';
    const cost = `${r.cost.clientUs} µs | ${r.cost.serverUs === undefined ? '–' : `${r.cost.serverUs} µs`} | ${r.cost.walBytes === undefined ? '–' : `${r.cost.walBytes} B`}`;
    return `| ${r.store} | ${r.writers} | ${label[r.mode]} | ${r.q.n} | ${r.q.median} ms | ${r.q.p99} ms | ${ratio(r.q.median, tx.q.median)} | ${ratio(r.q.median, find(r, 'plain').q.median)} | ${goal} | ${cost} |`;
  });
  return `One row (\`UPDATE bench_row SET value = ..., writer = ... WHERE id = 1\`) written by 1 and by 16
writer processes at once for ${seconds} s per row, each write timed alone by its writer: plain (autocommit),
in a transaction of its own, and through the helper (withSqliteFence, withPostgresFence: the
fence checked and locked in the same transaction), every writer presenting the same token
(one leader's term, the path of every accepted write). Each row's seconds are spread over
rounds of at most 2 s in which the modes take turns, so a change of the machine's load weighs
on each alike. SQLite: one file, WAL, \`synchronous = FULL\`, \`BEGIN IMMEDIATE\`; PostgreSQL: a
local server started for the run, fsync on, over TCP on loopback, one connection per writer,
read committed. The 1-minute load average was ${load[0]!.toFixed(1)} when it began and
${load[1]!.toFixed(1)} when it ended (2 cores): on a busy machine the figures are noisy, the ratios more
telling than the times.

| store | writers | write | writes | p50 | p99 | p50 vs in a transaction | p50 vs autocommit | goal: p50 ≤ ${GOAL}× in a transaction | writers' CPU / write | server's CPU / write | WAL / write |
| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |
${lines.join('\n')}

The last three columns are what a write cost, summed over each slice and divided by its writes:
the writer processes' CPU time (\`process.cpuUsage\`), the PostgreSQL server processes' (their
\`/proc/PID/schedstat\`), and the WAL written (\`pg_current_wal_insert_lsn\`). On a loaded machine
they move far less than the latencies (the CPU times still grow with the load: caches are shared).

On PostgreSQL the fence adds a statement but no round trip to a write of the fence's term in
a transaction: \`BEGIN\` and the check go as one query, then the write, then \`COMMIT\`, three
round trips either way; against a single autocommit statement it adds two (BEGIN with the
check, COMMIT), since the check and the write must commit together. The check of a writer of
the fence's term is one statement, the token read \`FOR SHARE\`; a new term's first writes
(and a key's) find the token below their own and send their \`ROLLBACK\` with the full
check (a raise, an insert, the read), one more round trip (docs/fencing.md, "PostgreSQL"). What
it still costs: the read parsed and planned at each write (a multi-statement query cannot be
prepared, and a prepared one would be a round trip of its own), and the share lock written to
the fence row: with several writers holding it, a MultiXact made anew at each write, written to
the row's page and logged in the WAL (the WAL column), the page's lock taken by every writer in
turn. Measured beside it as raw SQL: "the previous check", the three statements the helper sent
at every write before, and "the SQL function", \`SELECT public.leasehold_fence(key, token)\`
after the \`BEGIN\`, whose three statements' plans are cached per session but which runs them
all (and sets its own \`search_path\`) at each call. The helper's own JavaScript is in the
writers' CPU: the checks around the work, the turn on a shared \`Client\`, and its
AsyncLocalStorage (it tells a fenced call from inside its own work from another request's,
which waits its turn). On Node 20 a storage once used tracks every promise of the process: the
rows of one writer count run in the same processes, so after the first fenced slice the
unfenced rows pay that too.
With 16 writers every write also queues on the one data row's lock, on 2 cores shared with
the server, so what each adds to a write is paid many times over in the p50. On SQLite the fence adds one read of the fence row
(prepared once per connection) inside the write lock, and no write to it while the token stays
the same.
`;
}

export const FENCING_HEADING = '## Fenced writes';

export const fencingPhase: Phase<FencingBenchResult> = {
  name: 'fencing',
  what: (o) => `a fenced one-row write against the same write unfenced, SQLite and PostgreSQL, 1 and 16 writers (${o.seconds ?? 3} s per row)`,
  needsRoot: false,
  inFullRun: true,
  estimateS: (o) => 60 + 16 * (o.seconds ?? 3),
  heading: () => FENCING_HEADING,
  section: (r, ctx: PhaseContext) =>
    `${FENCING_HEADING}\n\n_This section was measured by \`npm run bench -- --only fencing${ctx.opts.seconds === undefined ? '' : ` --seconds ${ctx.opts.seconds}`} --splice\` on ${ctx.today}, apart from the full run._\n\n${r.markdown}`,
  run: (ctx) => benchFencing({ seconds: ctx.opts.seconds ?? 3, log: ctx.log }),
};
