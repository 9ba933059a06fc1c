import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runSimulation } from './elector-sim.js';

/**
 * The seeded randomized simulation (test/support/elector-sim.ts) over many seeds, within the
 * unit tier's budget; `npm run chaos -- --backend elector --seeds N` runs more. A failing seed
 * replays exactly: LEASEHOLD_SIM_SEED=N runs that one alone.
 */
const SEEDS = Number(process.env.LEASEHOLD_SIM_SEEDS ?? 200);
const ONLY = process.env.LEASEHOLD_SIM_SEED;
/** `restart`: versions start again when the record is re-created (the store mode of elector-sim.ts). */
const MODES = process.env.LEASEHOLD_SIM_VERSIONS ? [process.env.LEASEHOLD_SIM_VERSIONS] : ['unique', 'restart'];

describe('elector under randomized faults (seeded simulation)', () => {
  for (const mode of MODES)
    it(`keeps every safety invariant over ${ONLY ? `seed ${ONLY}` : `${SEEDS} seeds`}, versions ${mode}`, async () => {
      await simulate(mode);
    });
});

async function simulate(mode: string): Promise<void> {
  const seeds = ONLY ? [Number(ONLY)] : Array.from({ length: SEEDS }, (_, i) => i + 1);
  let terms = 0;
  const faults: Record<string, number> = {};
  for (const seed of seeds) {
    const r = await runSimulation(seed, undefined, false, { versionsRestart: mode === 'restart' });
    assert.deepEqual(r.violations, [], `seed ${seed} (replay with LEASEHOLD_SIM_SEED=${seed} LEASEHOLD_SIM_VERSIONS=${mode})`);
    terms += r.terms;
    for (const [k, v] of Object.entries(r.faults)) faults[k] = (faults[k] ?? 0) + v;
  }
  // The simulation must actually exercise elections and faults, or it proves nothing.
  assert.ok(terms >= seeds.length, `only ${terms} terms in ${seeds.length} seeds`);
  if (!ONLY)
    for (const f of [
      'pause',
      'crash and restart',
      'lease deleted',
      'request hangs',
      'write applied, answer lost',
      'link cut off',
      'leader stepped down for its app',
    ])
      assert.ok(faults[f], `no "${f}" fault was injected`);
}

describe('restarting versions: a write on the wire when the record is deleted', () => {
  it('lands on the re-created record as the store allows, and counts as its limit, not the elector’s fault (seed 452)', async () => {
    // Seed 452: a standby's claim write, sent from a fresh view, is 4.4 s late; meanwhile the
    // record is deleted, re-created and renewed to the version the write names.
    const r = await runSimulation(452, undefined, false, { versionsRestart: true });
    assert.deepEqual(r.violations, []);
    assert.ok(r.faults['write in flight across a deletion landed (versions restart: store limit)'], JSON.stringify(r.faults));
  });
});

describe('one term’s work at a time: the seeds that found the overlaps (issue 36)', () => {
  // Each failed before the end-of-term gate (the simulation of commit a75652d, on the elector of
  // that day): a step-down that released, or a new term that began, while the work of the term
  // that ended still ran and its lease could not have expired.
  const found = [
    { seed: 17, what: 'a run app’s leader steps down for its health and releases while CMD still runs; another candidate starts' },
    { seed: 9, what: 'a library leader misses its renew deadline and takes a new term on its own record while token 1’s promise runs' },
    { seed: 2, what: 'a sitting leader finds its record deleted and recreates it at once while its work still runs' },
    // Found after the gate: the sitting leader recreated at once from an absence seen before a
    // gate that took long (a pause), while another had created and lost the record meanwhile.
    { seed: 1985, what: 'a sitting leader recreates its vanished record only if its gate was quick; else it waits out the absence' },
  ];
  for (const { seed, what } of found)
    it(`seed ${seed}: ${what}`, async () => {
      for (const versionsRestart of [false, true]) {
        const r = await runSimulation(seed, undefined, false, { versionsRestart });
        assert.deepEqual(r.violations, [], `seed ${seed}, versions ${versionsRestart ? 'restart' : 'unique'}`);
        assert.ok(r.terms >= 1, `seed ${seed} exercised ${r.terms} terms`);
      }
    });
});
