/**
 * The tutorial's steps 5 and 6 on leasehold's parts, runnable:
 *   node dist/examples/split-brain/split-brain.js [workdir]                 (SQLite files in workdir)
 *   node dist/examples/split-brain/split-brain.js --postgres-url URL        (PostgreSQL; or LEASEHOLD_POSTGRES_URL)
 *
 * Two candidates share a lease (an SQLite file, or a PostgreSQL table). A acquires it (token N),
 * then "pauses" before its write, long enough for its lease to expire. B takes over (token N+1)
 * and writes. A wakes up, still believing it leads, and finishes its write:
 *   - unfenced, A's stale write silently replaces B's (step 5: split brain);
 *   - fenced, the resource rejects A's lower token and B's value stays (step 6).
 *
 * The pause is simulated with a fake clock for the candidates' own judgement of time, so the
 * demonstration is instant and deterministic; the lease store and the resource are real. On
 * PostgreSQL the resource is a row of `split_brain_resource` and the fence withPostgresFence's
 * `leasehold_fences` table (both created if absent), the leases in leasehold's `leases` table;
 * each run uses its own lease names and rows, so it can run again on the same database.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import type { LeaseStore } from '../../src/backends/lease-store.js';
import { CandidateLoop } from '../../src/election/candidate-loop.js';
import { FencedSqliteResource } from '../../src/fencing/fenced-resource.js';
import { writeUnfenced } from '../../src/fencing/unfenced-write.js';
import { createPostgresFenceTable, withPostgresFence } from '../../src/fencing/postgres-fence.js';
import { StaleTokenError } from '../../src/errors.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { resolveElectionConfig } from '../../src/config/election-options.js';

/** Where the demonstration runs: SQLite files in a folder, or a PostgreSQL database. */
export type DemoStore = { sqliteDir: string } | { postgresUrl: string };

/** The protected resource, fenced or not, on either store. */
interface DemoResource {
  write(value: string, writtenBy: string, token: number): Promise<{ accepted: boolean; reason: string }>;
  writeUnfenced(value: string, writtenBy: string): Promise<void>;
  read(): Promise<{ value: string | null; writtenBy: string | null }>;
  close(): Promise<void>;
}

function sqliteResource(path: string): DemoResource {
  const resource = new FencedSqliteResource(path);
  return {
    write: async (value, by, token) => resource.write(value, by, token),
    writeUnfenced: async (value, by) => writeUnfenced(path, value, by),
    read: async () => {
      const r = resource.read();
      return { value: r.value, writtenBy: r.writtenBy };
    },
    close: async () => resource.close(),
  };
}

/** One row of `split_brain_resource`, fenced under the key `split-brain/<name>`. */
async function postgresResource(url: string, name: string): Promise<DemoResource> {
  const { default: Pg } = await import('pg');
  const pool: pg.Pool = new Pg.Pool({ connectionString: url, max: 1 });
  await createPostgresFenceTable(pool);
  await pool.query('CREATE TABLE IF NOT EXISTS split_brain_resource (name text PRIMARY KEY, value text, written_by text)');
  await pool.query('INSERT INTO split_brain_resource (name) VALUES ($1) ON CONFLICT DO NOTHING', [name]);
  const update = (db: pg.ClientBase | pg.Pool, value: string, by: string) =>
    db.query('UPDATE split_brain_resource SET value = $1, written_by = $2 WHERE name = $3', [value, by, name]);
  return {
    write: async (value, by, token) => {
      try {
        await withPostgresFence(pool, { key: `split-brain/${name}`, token }, (tx) => update(tx, value, by));
        return { accepted: true, reason: `accepted with fencing token ${token}` };
      } catch (err) {
        if (err instanceof StaleTokenError) return { accepted: false, reason: err.message };
        throw err;
      }
    },
    writeUnfenced: async (value, by) => void (await update(pool, value, by)),
    read: async () => {
      const r = await pool.query<{ value: string | null; written_by: string | null }>('SELECT value, written_by FROM split_brain_resource WHERE name = $1', [
        name,
      ]);
      return { value: r.rows[0]!.value, writtenBy: r.rows[0]!.written_by };
    },
    close: () => pool.end(),
  };
}

export interface Outcome {
  tokenA: number;
  tokenB: number;
  unfenced: { value: string | null; writtenBy: string | null };
  fenced: { accepted: boolean; reason: string; value: string | null; writtenBy: string | null };
}

async function scenario(where: DemoStore, fenced: boolean, say: (line: string) => void): Promise<Outcome['fenced'] & { tokenA: number; tokenB: number }> {
  const tag = fenced ? 'fenced' : 'unfenced';
  const clock = new FakeClock();
  const timings = { leaseDurationMs: 1_000, renewDeadlineMs: 800, retryPeriodMs: 200 };
  let store: LeaseStore & { close(): Promise<void> | void };
  let resource: DemoResource;
  let lease = 'resource-writer';
  if ('sqliteDir' in where) {
    store = new SqliteLeaseStore(join(where.sqliteDir, `${tag}-leases.db`));
    resource = sqliteResource(join(where.sqliteDir, `${tag}-resource.db`));
  } else {
    // Names of their own: a run again on the same database starts from a lease nobody holds.
    lease = `split-brain-${tag}-${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
    store = await PostgresLeaseStore.open({ url: where.postgresUrl });
    resource = await postgresResource(where.postgresUrl, lease);
  }
  try {
    const a = new CandidateLoop({ ...resolveElectionConfig({ ...timings, lease, identity: 'candidate-a' }), store, clock });
    const b = new CandidateLoop({ ...resolveElectionConfig({ ...timings, lease, identity: 'candidate-b' }), store, clock });

    // A new lease is created only after it has been seen absent for a lease duration (a deleted
    // lease's holder could still be acting), so A keeps looking, every retry period.
    while (!(await a.tryAcquireOrRenew())) await clock.advance(timings.retryPeriodMs);
    const tokenA = a.snapshot().fencingToken!;
    say(`A becomes leader with fencing token ${tokenA}`);
    await b.tryAcquireOrRenew(); // B sees A's fresh lease and waits
    say('A is about to write, and pauses (GC, a stalled disk, a descheduled thread): no write, no renewal');
    await clock.advance(1_300);

    await b.tryAcquireOrRenew();
    const tokenB = b.snapshot().fencingToken!;
    say(`A's lease expired; B takes over with fencing token ${tokenB}`);
    if (fenced) await resource.write("B's fresh value", 'candidate-b', tokenB);
    else await resource.writeUnfenced("B's fresh value", 'candidate-b');
    say(`B writes: ${JSON.stringify(await resource.read())}`);

    say('A wakes up; in its own memory it still leads, so it finishes the write it started');
    let result = { accepted: true, reason: 'no check' };
    if (fenced) result = await resource.write("A's STALE value", 'candidate-a', tokenA);
    else await resource.writeUnfenced("A's STALE value", 'candidate-a');
    const after = await resource.read();
    say(fenced ? `A's write: ${result.accepted ? 'accepted' : 'rejected'}: ${result.reason}` : "A's write: nothing checked it");
    say(`resource is now: ${JSON.stringify(after)}`);
    return { ...result, value: after.value, writtenBy: after.writtenBy, tokenA, tokenB };
  } finally {
    await resource.close();
    await store.close();
  }
}

/** Runs both steps; `where` a folder (SQLite files in it) or `{ postgresUrl }`. */
export async function runSplitBrainDemo(where: string | DemoStore, say: (line: string) => void = () => {}): Promise<Outcome> {
  const dir: DemoStore = typeof where === 'string' ? { sqliteDir: where } : where;
  say('=== Step 5: the same leases, an unfenced resource ===');
  const u = await scenario(dir, false, say);
  say('');
  say('=== Step 6: the same sequence, the resource checks the fencing token ===');
  const f = await scenario(dir, true, say);
  return { tokenA: f.tokenA, tokenB: f.tokenB, unfenced: { value: u.value, writtenBy: u.writtenBy }, fenced: f };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const flag = args.indexOf('--postgres-url');
  const postgresUrl = flag >= 0 ? args[flag + 1] : process.env.LEASEHOLD_POSTGRES_URL;
  if (flag >= 0 && !postgresUrl) {
    console.error('split-brain: --postgres-url needs a postgres:// URL');
    process.exit(2);
  }
  if (postgresUrl) {
    await runSplitBrainDemo({ postgresUrl }, (line) => console.log(line));
  } else {
    const dir = args.find((a) => !a.startsWith('--')) ?? mkdtempSync(join(tmpdir(), 'leasehold-split-brain-'));
    await runSplitBrainDemo(dir, (line) => console.log(line));
    console.log(`\n(files in ${dir})`);
  }
}
