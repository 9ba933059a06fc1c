/**
 * node --import tsx test/chaos/fingerprint.ts [--seeds N] [--seed FIRST]
 * One sha256 over the elector simulation's whole observable outcome (violations, terms, faults
 * and the ordered events: every fault, term start and step-down with its time) for seeds
 * FIRST..FIRST+N-1 (default 1..2000), each in both version modes. A refactoring of the election
 * that changes no behaviour leaves it identical: the simulation draws every delay, jitter and
 * fault from one seeded stream, so even one random draw taken in another order changes it.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { runSimulation } from '../support/elector-sim.js';

const { values } = parseArgs({ options: { seeds: { type: 'string', default: '2000' }, seed: { type: 'string', default: '1' } } });
const count = Number(values.seeds);
const first = Number(values.seed);
if (!Number.isSafeInteger(count) || count < 1 || !Number.isSafeInteger(first)) {
  console.error(`--seeds ${values.seeds} --seed ${values.seed}: expected whole numbers, --seeds at least 1`);
  process.exit(2);
}
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
