/**
 * Jepsen's pair of lock workloads on leasehold (jepsen-io/etcd, lock.clj), and the fenced
 * register under 16 writers at once (issue 42), each recorded and judged by the independent
 * checker (test/porcupine; docs/testing.md "Recorded histories"):
 * - runLockSet, unfenced: processes take a short lease and, while leading, add to a set by
 *   read-modify-write; the leader is SIGSTOPped past its lease now and then. Acknowledged adds
 *   are lost: the negative control, which the checker must flag in every run;
 * - runLockSet, fenced: the same, each read and write through withSqliteFence with the term's
 *   token: no acknowledged add is ever lost;
 * - runFencedWriters: writers with random tokens on 32 keys (FENCED_KEYS) at once, each write through
 *   withSqliteFence or withPostgresFence (the same writer, fenced-writer.mjs): linearizable as a fenced register (tokens accepted per key never go down,
 *   and reads return the last accepted write).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import pg from 'pg';
import { REPO, start, waitFor, type Proc } from '../support/cli.js';
import { prng } from '../support/prng.js';
import { createPostgresFenceTable, createSqliteFenceTable } from '../../src/fencing/index.js';
import { checkHistory, historyFiles, type HistoryVerdict } from './check-history.js';
import { openHistory } from './history-recorder.mjs';

const LOCK_SET_WORKER = join(REPO, 'test/chaos/lock-set-worker.mjs');
const FENCED_WRITER = join(REPO, 'test/chaos/fenced-writer.mjs');
/** The workers' lease (lock-set-worker.mjs): a pause longer than this loses the lock. */
const LEASE_MS = 1_000;

export interface LockSetOptions {
  dir: string;
  fenced: boolean;
  seconds: number;
  seed: number;
  workers?: number;
  log?: (line: string) => void;
}

export interface LockSetReport {
  mode: 'fenced' | 'unfenced';
  pauses: number;
  /** Terms started, as the workers said them. */
  terms: number;
  verdict: HistoryVerdict;
}

export async function runLockSet(o: LockSetOptions): Promise<LockSetReport> {
  const rand = prng(o.seed);
  const mode = o.fenced ? 'fenced' : 'unfenced';
  const historyDir = join(o.dir, 'history');
  mkdirSync(historyDir);
  const leases = join(o.dir, 'leases.db');
  const setPath = join(o.dir, 'set.db');
  const db = new Database(setPath);
  db.pragma('journal_mode = WAL');
  db.exec("CREATE TABLE lock_set (id INTEGER PRIMARY KEY CHECK (id = 1), elements TEXT NOT NULL); INSERT INTO lock_set VALUES (1, '[]')");
  createSqliteFenceTable(db);
  const workers: Proc[] = [];
  for (let i = 0; i < (o.workers ?? 3); i++) workers.push(start(process.execPath, [LOCK_SET_WORKER, leases, setPath, `w${i}`, mode, historyDir]));
  // Who leads now: the worker that announced the highest token.
  const leader = (): Proc | undefined => {
    let best: { p: Proc; token: number } | undefined;
    for (const p of workers) {
      for (const line of p.stdout().split('\n').filter(Boolean)) {
        const { leading } = JSON.parse(line) as { leading: number };
        if (!best || leading > best.token) best = { p, token: leading };
      }
    }
    return best?.p;
  };
  let pauses = 0;
  try {
    await waitFor('a first leader among the set workers', () => leader(), 30_000);
    const deadline = Date.now() + o.seconds * 1000;
    while (Date.now() < deadline) {
      await sleep(300 + rand() * 400);
      // Paused past its lease, as a GC pause or a frozen VM would: the next leader adds meanwhile.
      const victim = leader()!;
      victim.child.kill('SIGSTOP');
      await sleep(LEASE_MS + 600 + rand() * 600);
      victim.child.kill('SIGCONT');
      pauses++;
      o.log?.(`${mode}: paused the leader (pid ${victim.pid}), pause ${pauses}`);
    }
  } finally {
    for (const w of workers) {
      w.kill('SIGCONT');
      w.kill('SIGTERM');
    }
    const killer = setTimeout(() => workers.forEach((w) => w.kill('SIGKILL')), 10_000);
    await Promise.all(workers.map((w) => w.exited));
    clearTimeout(killer);
  }
  // The final read, once every worker has gone.
  const driver = openHistory(historyDir, 'driver');
  const called = driver.stamp();
  const { elements } = db.prepare('SELECT elements FROM lock_set WHERE id = 1').get() as { elements: string };
  driver.whole('set', 'set', 'read', {}, called, { elements: JSON.parse(elements) as string[] });
  driver.close();
  db.close();
  const terms = workers.reduce((n, w) => n + w.stdout().split('\n').filter(Boolean).length, 0);
  return { mode, pauses, terms, verdict: await checkHistory(historyFiles(historyDir)) };
}

export interface FencedWritersOptions {
  dir: string;
  seconds: number;
  writers?: number;
  keys?: number;
  /** Where the writers write: a SQLite file in `dir` (the default), or PostgreSQL at `postgresUrl`. */
  store?: 'sqlite' | 'postgres';
  /** A database the writers may create their tables in (test/support/postgres.ts's server). */
  postgresUrl?: string;
}

export interface FencedWritersReport {
  store: 'sqlite' | 'postgres';
  writers: number;
  keys: number;
  /** The writers' own counts, summed: writes accepted, refused as stale, of unknown outcome; reads. */
  counts: WriterCounts;
  verdict: HistoryVerdict;
}

export interface WriterCounts {
  accepted: number;
  refused: number;
  unknown: number;
  reads: number;
}

/**
 * Keys the writers spread over by default. The checker searches one key at a time, and a key of
 * n operations may take about n²/8 bytes of its search memory (test/porcupine/partitions.go): 16
 * writers on SQLite recorded up to 1.19 million operations in 60 s, which on 2 keys took the
 * checker past 23 GB. On 32 keys that is about 37,000 operations and 175 MB for the largest key,
 * while 16 writers on 32 keys still meet on one key at once often (the tests on 2 keys keep
 * the contention high for their 3 s).
 */
export const FENCED_KEYS = 32;

const VALUE_TABLE = 'CREATE TABLE fenced_value (key TEXT PRIMARY KEY, value TEXT NOT NULL)';

/** Creates the value and fence tables; returns what the writers are told to open. */
async function prepareStore(o: FencedWritersOptions): Promise<string> {
  if (o.store === 'postgres') {
    if (!o.postgresUrl) throw new Error('runFencedWriters: store postgres needs postgresUrl');
    const client = new pg.Client({ connectionString: o.postgresUrl });
    await client.connect();
    try {
      await client.query(VALUE_TABLE);
      await createPostgresFenceTable(client);
    } finally {
      await client.end();
    }
    return o.postgresUrl;
  }
  const path = join(o.dir, 'fenced.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(VALUE_TABLE);
  createSqliteFenceTable(db);
  db.close();
  return path;
}

export async function runFencedWriters(o: FencedWritersOptions): Promise<FencedWritersReport> {
  const store = o.store ?? 'sqlite';
  const writers = o.writers ?? 16;
  const keys = o.keys ?? FENCED_KEYS;
  const historyDir = join(o.dir, 'history');
  mkdirSync(historyDir);
  const target = await prepareStore(o);
  const procs = Array.from({ length: writers }, () =>
    start(process.execPath, [FENCED_WRITER, store, historyDir, String(keys)], { LEASEHOLD_FENCED_STORE: target }),
  );
  // Every writer starts, then all write for the same window: a start-up under load is not in it.
  try {
    await waitFor(
      `the ${writers} fenced writers to open their store`,
      () => procs.every((p) => p.stdout().startsWith('ready\n')) || procs.some((p) => p.child.exitCode !== null),
      120_000,
    );
    const exitedEarly = procs.findIndex((p) => p.child.exitCode !== null);
    if (exitedEarly >= 0) throw new Error(`fenced writer ${exitedEarly} exited before the window: ${procs[exitedEarly]!.stderr()}`);
  } catch (err) {
    procs.forEach((p) => p.kill('SIGKILL'));
    await Promise.all(procs.map((p) => p.exited));
    throw err;
  }
  const startedAt = Date.now() + 100;
  const until = startedAt + o.seconds * 1000;
  for (const p of procs) p.child.stdin!.end(`go ${startedAt} ${until}\n`);
  const killer = setTimeout(() => procs.forEach((p) => p.kill('SIGKILL')), until - Date.now() + 30_000);
  const exits = await Promise.all(procs.map((p) => p.exited));
  clearTimeout(killer);
  const failed = exits.findIndex((e) => e.code !== 0);
  if (failed >= 0) throw new Error(`fenced writer ${failed} exited ${JSON.stringify(exits[failed])}: ${procs[failed]!.stderr()}`);
  const counts: WriterCounts = { accepted: 0, refused: 0, unknown: 0, reads: 0 };
  for (const p of procs) {
    const own = JSON.parse(p.stdout().trim().split('\n').at(-1)!) as WriterCounts;
    for (const k of Object.keys(counts) as (keyof WriterCounts)[]) counts[k] += own[k];
  }
  return { store, writers, keys, counts, verdict: await checkHistory(historyFiles(historyDir)) };
}

/** One line for a report: the figures docs/testing.md records. */
export function formatFencedWriters(r: FencedWritersReport, seconds: number): string {
  const c = r.counts;
  return `fenced register on ${r.store}, ${r.writers} writers at once on ${r.keys} keys for ${seconds} s: ${c.accepted} writes accepted, ${c.refused} refused, ${c.unknown} unknown, ${c.reads} reads; checker: ${r.verdict.output}`;
}
