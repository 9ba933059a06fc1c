/**
 * node --import tsx test/chaos/fingerprint.ts [--seeds N] [--seed FIRST]
 * One sha256 over the elector simulation's whole observable outcome (violations, terms, faults
 * and the ordered events: every fault, term start and step-down with its time) for seeds
 * FIRST..FIRST+N-1 (default 1..2000), each in both version modes. A refactoring of the election
 * that changes no behaviour leaves it identical: the simulation draws every delay, jitter and
 * fault from one seeded stream, so even one random draw taken in another order changes it.
 */
import { createHash } from 'node:crypto';
import { runSimulation } from '../support/elector-sim.js';
import { numberOption } from '../../bench/cli-args.js';

// The bench's and chaos driver's one flag table: a bad count is one line and exit 2.
const count = numberOption('seeds', 2000);
const first = numberOption('seed', 1);
const hash = createHash('sha256');
const t0 = Date.now();
let terms = 0;
for (let i = 0; i < count; i++) {
  for (const mode of ['unique', 'restart']) {
    const r = await runSimulation(first + i, undefined, false, { versionsRestart: mode === 'restart' });
    terms += r.terms;
    hash.update(JSON.stringify([mode, r.seed, r.violations, r.terms, Object.entries(r.faults).sort(), r.events]));
    hash.update('\n');
  }
}
console.log(`${hash.digest('hex')}  seeds ${first}..${first + count - 1}, both version modes, ${terms} terms, ${Math.round((Date.now() - t0) / 1000)} s`);
