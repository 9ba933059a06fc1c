/**
 * One of the writers of the fenced-register check (issue 42: "16 writers with random tokens at
 * once: the accepted tokens per key never go down and no accepted write is lost"). Until its
 * deadline it writes a unique value to one of `keys` keys through withSqliteFence with a random
 * token near a shared clock-driven one (so some writes are accepted and some refused), and
 * every fifth operation reads a key's value and fence token in one transaction. Every
 * operation is recorded as a fenced register's (docs/testing.md "Recorded histories"). It
 * starts writing at `beginAtMs`, so that all the writers write at once.
 *   fenced-writer.mjs <data.db> <keys> <beginAtMs> <untilMs> <historyDir>
 */
import process from 'node:process';
import { setImmediate, setTimeout } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { withSqliteFence } from '../../dist/src/fencing/index.js';
import { openHistory } from './history-recorder.mjs';

const [path, keysArg, startedArg, untilArg, historyDir] = process.argv.slice(2);
const keys = Number(keysArg);
const startedAt = Number(startedArg);
await setTimeout(Math.max(0, startedAt - Date.now()));
const until = Number(untilArg);
const db = new Database(path, { timeout: 10_000 });
const history = openHistory(historyDir, 'writer');
const write = db.prepare('INSERT INTO fenced_value (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
const readValue = db.prepare('SELECT value FROM fenced_value WHERE key = ?');
const readFence = db.prepare('SELECT token FROM leasehold_fences WHERE key = ?');
const readBoth = db.transaction((key) => ({ value: readValue.get(key)?.value ?? '', token: readFence.get(key)?.token ?? 0 }));
const randomInt = (n) => Math.floor(Math.random() * n);
let seq = 0;

while (Date.now() < until) {
  const key = `key-${randomInt(keys)}`;
  if (seq % 5 === 4) {
    seq++;
    const call = history.call('fenced', key, 'read');
    history.done(call, readBoth(key));
    continue;
  }
  // A token that grows with time (a new term every 20 ms), give or take 10: writers at once
  // hold older and newer terms, as leaders past and present do.
  const token = Math.max(1, Math.floor((Date.now() - startedAt) / 20) + randomInt(21) - 10);
  const value = `${process.pid}-${seq++}`;
  const call = history.call('fenced', key, 'write', { token, value });
  try {
    withSqliteFence(db, { key, token }, () => write.run(key, value));
    history.done(call, { accepted: true });
  } catch (err) {
    // Refused: certainly not written. Anything else (a busy timeout): the outcome is unknown.
    if (err?.code === 'LEASEHOLD_ERR_STALE_TOKEN') history.done(call, { accepted: false });
  }
  // Let the others in: a writer in a tight loop would hold the write lock most of the time.
  await setImmediate();
}
history.close();
db.close();
