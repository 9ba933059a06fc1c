/**
 * node --import tsx test/chaos/shard-fingerprint.ts [--seeds N] [--seed FIRST]
 * One sha256 over the shard simulation's whole observable outcome (violations, gains, faults and
 * the ordered events with the members' debug log lines: every fault, gain, loss and log line with
 * its time) for seeds FIRST..FIRST+N-1 (default 1..500). A refactoring of the shard member that
 * changes no behaviour leaves it identical: the simulation draws every delay and fault from
 * seeded streams, so a store call made in another order changes it. The elector's twin is
 * fingerprint.ts.
 */
import { createHash } from 'node:crypto';
import { runShardSimulation } from '../support/shard-sim.js';
import { numberOption } from '../../bench/cli-args.js';

const count = numberOption('seeds', 500);
const first = numberOption('seed', 1);
const hash = createHash('sha256');
const t0 = Date.now();
let gains = 0;
for (let i = 0; i < count; i++) {
  const r = await runShardSimulation(first + i, undefined, true);
  gains += r.gains;
  // A log line's own "time" is the machine's wall clock, not the simulation's: left out.
  const events = r.events.map((e) => e.replace(/"time":"[^"]*",/, ''));
  hash.update(JSON.stringify([r.seed, r.shards, r.violations, r.gains, Object.entries(r.faults).sort(), events]));
  hash.update('\n');
}
console.log(`${hash.digest('hex')}  shard seeds ${first}..${first + count - 1}, ${gains} changes of owner, ${Math.round((Date.now() - t0) / 1000)} s`);
