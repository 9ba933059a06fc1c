/**
 * One writer of the fencing bench (bench/scenarios/fencing.ts): the same one-row write, plain
 * (autocommit), in a transaction of its own, or through withSqliteFence / withPostgresFence,
 * each timed alone. Commands on stdin: `go <mode> <ms>` runs that write in a loop for <ms> and
 * prints {"mode","ms":[latencies],"cpuUs": this process's CPU time meanwhile}; `exit` closes the connection.
 *   fence-worker.ts <sqlite file | postgres URL> <writer id>
 * Every writer presents the same token (one leader writing in its term): the path every
 * accepted write takes. The fence row is raised once, by the first write. PostgreSQL also has
 * two checks sent as raw SQL, for comparison: `fenced-previous`, the helper's check before it
 * read the token alone on a term's later writes, and `sql-function`, the SQL form.
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pg from 'pg';
import { withPostgresFence, withSqliteFence } from '../../src/fencing/index.js';

export type FenceBenchMode = 'plain' | 'transaction' | 'fenced' | 'fenced-previous' | 'sql-function';

/**
 * PostgreSQL only, as raw SQL with the BEGIN: the check withPostgresFence sent at every write
 * before 2026-12-06 (a raise, an insert, the token read FOR SHARE), and the SQL function
 * (`SELECT public.leasehold_fence(key, token)`, its statements' plans cached per session).
 */
function rawCheck(mode: 'fenced-previous' | 'sql-function', table: string, keyLiteral: string, token: number): string {
  if (mode === 'sql-function') return `BEGIN; SELECT "public"."leasehold_fence"(${keyLiteral}, ${token})`;
  const [eq, lt] = ['OPERATOR(pg_catalog.=)', 'OPERATOR(pg_catalog.<)'];
  return [
    'BEGIN',
    `UPDATE ${table} SET token = ${token}, updated_at = pg_catalog.now() WHERE key ${eq} ${keyLiteral} AND token ${lt} ${token}`,
    `INSERT INTO ${table} (key, token) VALUES (${keyLiteral}, ${token}) ON CONFLICT (key) DO NOTHING`,
    `SELECT token FROM ${table} WHERE key ${eq} ${keyLiteral} FOR SHARE`,
  ].join('; ');
}

const [target, id] = process.argv.slice(2) as [string, string];
const claim = { key: 'bench-row', token: 7 };
let n = 0;

async function writer(): Promise<{ write: (mode: FenceBenchMode) => Promise<unknown>; close: () => Promise<void> }> {
  if (target.startsWith('postgres://')) {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    const update = (c: pg.ClientBase) => c.query('UPDATE bench_row SET value = $1, writer = $2 WHERE id = 1', [n++, id]);
    return {
      write: async (mode) => {
        if (mode === 'plain') return update(client);
        if (mode === 'fenced') return withPostgresFence(client, claim, update);
        const raw = mode === 'fenced-previous' || mode === 'sql-function';
        await client.query(raw ? rawCheck(mode, '"public"."leasehold_fences"', client.escapeLiteral(claim.key), claim.token) : 'BEGIN');
        await update(client);
        return client.query('COMMIT');
      },
      close: () => client.end(),
    };
  }
  const db = new Database(target, { timeout: 30_000 });
  db.pragma('synchronous = FULL'); // per connection: every commit synced, as the store's are
  const stmt = db.prepare('UPDATE bench_row SET value = ?, writer = ? WHERE id = 1');
  const update = () => stmt.run(n++, id);
  const inTransaction = db.transaction(update);
  return {
    write: async (mode) => (mode === 'plain' ? update() : mode === 'fenced' ? withSqliteFence(db, claim, update) : inTransaction.immediate()),
    close: async () => void db.close(),
  };
}

const w = await writer();
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, mode, ms] = line.trim().split(' ');
  if (cmd === 'exit') break;
  if (cmd !== 'go') continue;
  const lat: number[] = [];
  const cpu0 = process.cpuUsage();
  const until = performance.now() + Number(ms);
  while (performance.now() < until) {
    const t0 = performance.now();
    await w.write(mode as FenceBenchMode);
    lat.push(Math.round((performance.now() - t0) * 1000) / 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(JSON.stringify({ mode, ms: lat, cpuUs: cpu.user + cpu.system }) + '\n');
}
await w.close();
process.exit(0);
