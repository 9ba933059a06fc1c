/**
 * A writer process for the fenced-transaction tests: it holds a claim (key, token) in memory,
 * says it is about to write, and writes through withSqliteFence or withPostgresFence when a
 * line `write` arrives on stdin. A test can SIGSTOP it between the two, as a GC pause or a
 * stalled VM would, and resume it after a newer writer's write.
 *
 * argv[2]: JSON { store: 'sqlite' | 'postgres', target: file path or URL, key, token, label }.
 * It inserts (key, token, label) into `fenced_data` and prints one JSON line: the outcome, or
 * the error's code and fields.
 */
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import pg from 'pg';
import { withPostgresFence, withSqliteFence } from '../../src/fencing/index.js';

const { store, target, key, token, label } = JSON.parse(process.argv[2]!) as { store: string; target: string; key: string; token: number; label: string };
const say = (o: object) => process.stdout.write(JSON.stringify(o) + '\n');

async function writeOnce(): Promise<void> {
  if (store === 'sqlite') {
    const db = new Database(target, { timeout: 10_000 });
    try {
      withSqliteFence(db, { key, token }, (tx) => tx.prepare('INSERT INTO fenced_data (key, token, label) VALUES (?, ?, ?)').run(key, token, label));
    } finally {
      db.close();
    }
  } else {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    try {
      await withPostgresFence(client, { key, token }, (tx) => tx.query('INSERT INTO fenced_data (key, token, label) VALUES ($1, $2, $3)', [key, token, label]));
    } finally {
      await client.end();
    }
  }
}

/**
 * The loop mode (`loop: { ms, seed, keys }` in argv[2]): fenced writes with random tokens on
 * random keys for `ms` from a line `go`, then one line { accepted: [labels], stale, busy }. SQLite only.
 */
const { loop } = JSON.parse(process.argv[2]!) as { loop?: { ms: number; seed: number; keys: string[] } };
if (loop) {
  const db = new Database(target, { timeout: 10_000 });
  // Every writer starts on the same `go`, so that they all overlap.
  say({ ready: true, pid: process.pid });
  for await (const line of createInterface({ input: process.stdin })) if (line.trim() === 'go') break;
  let seed = loop.seed >>> 0;
  const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const accepted: string[] = [];
  let stale = 0;
  const until = Date.now() + loop.ms;
  for (let i = 0; Date.now() < until; i++) {
    const k = loop.keys[Math.floor(random() * loop.keys.length)]!;
    const t = 1 + Math.floor(random() * 10) + Math.floor(i / 4);
    const l = `${label}-${i}`;
    try {
      withSqliteFence(db, { key: k, token: t }, (tx) => tx.prepare('INSERT INTO fenced_data (key, token, label) VALUES (?, ?, ?)').run(k, t, l));
      accepted.push(l);
    } catch (err) {
      if ((err as { code?: string }).code !== 'LEASEHOLD_ERR_STALE_TOKEN') throw err;
      stale++;
    }
  }
  db.close();
  // Exit only once the report is written: a pipe's writes can be queued, and process.exit
  // drops what is queued (Node 24 cut this line at 146,176 characters, twice).
  process.stdout.write(JSON.stringify({ accepted, stale }) + '\n', () => process.exit(0));
  await new Promise(() => {});
}

say({ ready: true, pid: process.pid });
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() !== 'write') continue;
  try {
    await writeOnce();
    say({ written: true });
  } catch (err) {
    const e = err as { code?: string; message?: string; key?: string; presented?: number; highest?: number };
    say({ written: false, code: e.code, message: e.message, key: e.key, presented: e.presented, highest: e.highest });
  }
  break;
}
lines.close();
