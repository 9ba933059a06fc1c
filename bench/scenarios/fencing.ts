/**
 * The fencing part of `npm run bench` (issue 42): one row written by 1 and by 16 writer
 * processes, plain (autocommit), in a transaction of its own, and through the fence helpers
 * (withSqliteFence, withPostgresFence), on an SQLite file and on a real PostgreSQL started for
 * the run. The goal: a fenced write's p50 within 1.3× the same write's in a transaction, since
 * the fence adds one statement to it (on PostgreSQL sent with the BEGIN: no round trip).
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { REPO, start, tempDir, waitFor, type Proc } from '../../test/support/cli.js';
import { startPostgres } from '../../test/support/postgres.js';
import { createPostgresFenceTable, createSqliteFenceTable } from '../../src/fencing/index.js';
import { quantiles, type Quantiles } from '../lib/quantile.js';
import type { FenceBenchMode } from '../lib/fence-worker.js';
import type { Phase, PhaseContext } from '../phase.js';

const WORKER = join(REPO, 'bench/lib/fence-worker.ts');
const MODES: FenceBenchMode[] = ['plain', 'transaction', 'fenced'];
const WRITERS = [1, 16];
const GOAL = 1.3;

export interface FenceRow {
  store: string;
  writers: number;
  mode: FenceBenchMode;
  q: Quantiles;
}

export interface FencingBenchResult {
  markdown: string;
  rows: FenceRow[];
}

/** Runs every mode at each writer count on one store's 16 started workers. */
async function measure(store: string, target: string, seconds: number, log: (m: string) => void): Promise<FenceRow[]> {
  const workers: Proc[] = [];
  try {
    for (let i = 0; i < Math.max(...WRITERS); i++) workers.push(start(process.execPath, ['--import', 'tsx', WORKER, target, `w${i}`]));
    await waitFor(`${store} fence workers ready`, () => workers.every((w) => w.stdout().startsWith('ready')), 120_000, 100);
    const seen = workers.map(() => 0);
    const rows: FenceRow[] = [];
    for (const writers of WRITERS) {
      for (const mode of MODES) {
        const active = workers.slice(0, writers);
        for (const w of active) w.child.stdin!.write(`go ${mode} ${seconds * 1000}\n`);
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
          seconds * 1000 + 120_000,
          50,
        );
        active.forEach((_, i) => seen[i]!++);
        const ms = results.flatMap((l) => (JSON.parse(l) as { ms: number[] }).ms);
        rows.push({ store, writers, mode, q: quantiles(ms) });
        log(`fencing ${store} ${mode} ×${writers}: ${ms.length} writes, p50 ${quantiles(ms).median} ms`);
      }
    }
    for (const w of workers) w.child.stdin!.write('exit\n');
    await Promise.all(workers.map((w) => w.exited));
    return rows;
  } finally {
    for (const w of workers) w.kill('SIGKILL');
  }
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
    await createPostgresFenceTable(admin);
    await admin.query("CREATE TABLE bench_row (id int PRIMARY KEY, value bigint, writer text); INSERT INTO bench_row VALUES (1, 0, '')");
    await admin.end();
    const rows = [...(await measure('SQLite', file, seconds, log)), ...(await measure(`PostgreSQL ${server.version}`, server.url(), seconds, log))];
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
  const label: Record<FenceBenchMode, string> = { plain: 'unfenced, autocommit', transaction: 'unfenced, in a transaction', fenced: 'fenced (the helper)' };
  const lines = rows.map((r) => {
    const tx = find(r, 'transaction');
    const goal = r.mode === 'fenced' ? (r.q.median <= GOAL * tx.q.median ? 'met' : '**not met**') : '';
    return `| ${r.store} | ${r.writers} | ${label[r.mode]} | ${r.q.n} | ${r.q.median} ms | ${r.q.p99} ms | ${ratio(r.q.median, tx.q.median)} | ${ratio(r.q.median, find(r, 'plain').q.median)} | ${goal} |`;
  });
  return `One row (\`UPDATE bench_row SET value = ..., writer = ... WHERE id = 1\`) written by 1 and by 16
writer processes at once for ${seconds} s per row, each write timed alone by its writer: plain (autocommit),
in a transaction of its own, and through the helper (withSqliteFence, withPostgresFence: the
fence row checked and locked in the same transaction), every writer presenting the same token
(one leader's term, the path of every accepted write). SQLite: one file, WAL,
\`synchronous = FULL\`, \`BEGIN IMMEDIATE\`; PostgreSQL: a local server started for the run, fsync
on, over TCP on loopback, one connection per writer. The 1-minute load average was
${load[0]!.toFixed(1)} when it began and ${load[1]!.toFixed(1)} when it ended: on a busy machine the
figures are noisy, the ratios more telling than the times.

| store | writers | write | writes | p50 | p99 | p50 vs in a transaction | p50 vs autocommit | goal: p50 ≤ ${GOAL}× in a transaction |
| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |
${lines.join('\n')}

On PostgreSQL the fence adds statements but no round trip to a write in a transaction:
\`BEGIN\` and the fence's check (a raise when the token is new, an insert for a new key, the
token read \`FOR SHARE\`) go as one query, then the write, then \`COMMIT\`, three round trips
either way; against a single autocommit statement it adds two (BEGIN with the fence, COMMIT),
since the check and the write must commit together. What it still costs: the simple protocol
parses and plans the check's statements at each write (a multi-statement query cannot be
prepared), and each share lock is written to the row (a MultiXact when several writers hold
it), while 16 writers of the one row queue on its lock anyway. On SQLite the fence adds one
read of the fence row (prepared once per connection) inside the write lock, and no write to it
while the token stays the same.
`;
}

export const FENCING_HEADING = '## Fenced writes';

export const fencingPhase: Phase<FencingBenchResult> = {
  name: 'fencing',
  what: (o) => `a fenced one-row write against the same write unfenced, SQLite and PostgreSQL, 1 and 16 writers (${o.seconds ?? 3} s per row)`,
  needsRoot: false,
  inFullRun: true,
  estimateS: (o) => 60 + 12 * (o.seconds ?? 3),
  heading: () => FENCING_HEADING,
  section: (r, ctx: PhaseContext) =>
    `${FENCING_HEADING}\n\n_This section was measured by \`npm run bench -- --only fencing${ctx.opts.seconds === undefined ? '' : ` --seconds ${ctx.opts.seconds}`} --splice\` on ${ctx.today}, apart from the full run._\n\n${r.markdown}`,
  run: (ctx) => benchFencing({ seconds: ctx.opts.seconds ?? 3, log: ctx.log }),
};
