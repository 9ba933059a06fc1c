/**
 * One of the writers of the fenced-register check (issue 42: "16 writers with random tokens at
 * once: the accepted tokens per key never go down and no accepted write is lost"). Until its
 * deadline it writes a unique value to one of `keys` keys through the store's fence
 * (withSqliteFence or withPostgresFence: fenced-writer-stores.mjs) with a random token near a
 * shared clock-driven one (so some writes are accepted and some refused), and every fifth
 * operation reads a key's value and fence token as one snapshot. Every operation is recorded
 * as a fenced register's (docs/testing.md "Recorded histories"). Once its store is open it
 * prints `ready` and waits for one line on stdin, `go <beginAtMs> <untilMs>`: the window all the
 * writers write in, at once, given only when every one of them is ready (a fixed start-up
 * allowance was once too short for 16 writers under load, and nothing was written). At the end
 * it prints its counts as one JSON line: {"accepted","refused","unknown","reads"}.
 *   fenced-writer.mjs <sqlite|postgres> <historyDir> <keys>
 * with the store's target in LEASEHOLD_FENCED_STORE: the SQLite file's path or the
 * PostgreSQL URL (in the environment, not the argument list, as it holds a password).
 */
import process from 'node:process';
import { createInterface } from 'node:readline';
import { setImmediate, setTimeout } from 'node:timers/promises';
import { openPostgresStore, openSqliteStore } from './fenced-writer-stores.mjs';
import { openHistory } from './history-recorder.mjs';

const [storeKind, historyDir, keysArg] = process.argv.slice(2);
const target = process.env.LEASEHOLD_FENCED_STORE;
if (!target || (storeKind !== 'sqlite' && storeKind !== 'postgres')) {
  process.stderr.write(
    'usage: fenced-writer.mjs <sqlite|postgres> <historyDir> <keys>, LEASEHOLD_FENCED_STORE set, then `go <beginAtMs> <untilMs>` on stdin\n',
  );
  process.exit(2);
}
const keys = Number(keysArg);
const store = storeKind === 'sqlite' ? openSqliteStore(target) : openPostgresStore(target);
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
const [word, startedArg, untilArg] = ((await lines[Symbol.asyncIterator]().next()).value ?? '').split(' ');
lines.close();
if (word !== 'go') {
  process.stderr.write('fenced-writer.mjs: expected `go <beginAtMs> <untilMs>` on stdin\n');
  process.exit(2);
}
const startedAt = Number(startedArg);
const until = Number(untilArg);
await setTimeout(Math.max(0, startedAt - Date.now()));
const history = openHistory(historyDir, 'writer');
const randomInt = (n) => Math.floor(Math.random() * n);
const counts = { accepted: 0, refused: 0, unknown: 0, reads: 0 };
let seq = 0;

while (Date.now() < until) {
  const key = `key-${randomInt(keys)}`;
  if (seq % 5 === 4) {
    seq++;
    const call = history.call('fenced', key, 'read');
    // A failed read is left without a completion: a read changes nothing, so that is honest.
    const seen = await store.read(key).catch(() => undefined);
    if (seen) {
      history.done(call, seen);
      counts.reads++;
    }
    continue;
  }
  // A token that grows with time (a new term every 20 ms), give or take 10: writers at once
  // hold older and newer terms, as leaders past and present do.
  const token = Math.max(1, Math.floor((Date.now() - startedAt) / 20) + randomInt(21) - 10);
  const value = `${process.pid}-${seq++}`;
  const call = history.call('fenced', key, 'write', { token, value });
  const outcome = await store.write(key, token, value);
  // An unknown outcome gets no completion line: the checker lets it have happened or not.
  if (outcome !== 'unknown') history.done(call, { accepted: outcome === 'accepted' });
  counts[outcome]++;
  // Let the others in: a writer in a tight loop would hold the write lock most of the time.
  await setImmediate();
}
history.close();
await store.close();
process.stdout.write(JSON.stringify(counts) + '\n');
