/**
 * One process of Jepsen's lock-protected set (jepsen-io/etcd, lock.clj), on leasehold: it takes
 * the lease `lock` through the library (a short lease) and, while leading, adds unique
 * elements to a set kept as one row of a SQLite table by read-modify-write: read the set, pause
 * (30-100 ms of "work"), write the set back with its element. A pause of the process longer
 * than the lease between the read and the write (the driver's SIGSTOP) writes back a stale set
 * over the next leader's adds: lost updates.
 *   unfenced: nothing checks the term at the resource: the negative control, which must lose.
 *   fenced:   the read and the write each run in withSqliteFence with the term's token (the read
 *             raises the fence, so a stale writer's write is refused): must never lose an
 *             acknowledged add.
 * Plain JavaScript on the built library (dist/), so 16 of them start fast; every add is
 * recorded (docs/testing.md "Recorded histories"): acknowledged, refused by the fence
 * (StaleTokenError: not written), or unknown (anything else, or the process killed).
 *   lock-set-worker.mjs <leases.db> <set.db> <identity> <unfenced|fenced> <historyDir>
 */
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { LeaderElection } from '../../dist/src/index.js';
import { withSqliteFence } from '../../dist/src/fencing/index.js';
import { openHistory } from './history-recorder.mjs';

const [leases, setPath, identity, mode, historyDir] = process.argv.slice(2);
if (mode !== 'fenced' && mode !== 'unfenced') throw new Error(`mode ${mode}: expected fenced or unfenced`);
const KEY = 'set';
const db = new Database(setPath, { timeout: 10_000 });
const history = openHistory(historyDir, `set-${identity}`);
const readSet = () => JSON.parse(db.prepare('SELECT elements FROM lock_set WHERE id = 1').get().elements);
const writeSet = (elements) => db.prepare('UPDATE lock_set SET elements = ? WHERE id = 1').run(JSON.stringify(elements));
let seq = 0;

/** Adds one element; false when the fence refused this term's token (a newer term has written). */
async function addOne(token) {
  const element = `${identity}-${process.pid}-${seq++}`;
  const call = history.call('set', KEY, 'add', { element });
  try {
    const seen = mode === 'fenced' ? withSqliteFence(db, { key: KEY, token }, readSet) : readSet();
    await sleep(30 + Math.random() * 70);
    if (mode === 'fenced') withSqliteFence(db, { key: KEY, token }, () => writeSet([...seen, element]));
    else writeSet([...seen, element]);
    history.done(call, { ok: true });
    return true;
  } catch (err) {
    // Refused by the fence: certainly not written. Anything else: the outcome is unknown.
    if (err?.code !== 'LEASEHOLD_ERR_STALE_TOKEN') throw err;
    history.done(call, { ok: false });
    return false;
  }
}

const election = await LeaderElection.start({
  store: { backend: 'sqlite', db: leases },
  lease: 'lock',
  identity,
  leaseDurationMs: 1_000,
  renewDeadlineMs: 700,
  retryPeriodMs: 200,
  callbacks: {
    async onStartedLeading({ token, signal }) {
      process.stdout.write(JSON.stringify({ leading: token }) + '\n');
      // A refusal ends this term's work: the resource has seen a newer term.
      while (!signal.aborted && (await addOne(token)));
    },
  },
});
process.on('SIGTERM', () => {
  void election.stop().finally(() => {
    db.close();
    process.exit(0);
  });
});
