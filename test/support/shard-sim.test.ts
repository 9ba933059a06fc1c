import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runShardSimulation } from './shard-sim.js';

/**
 * The shard groups' seeded simulation (test/support/shard-sim.ts) over a few seeds, within the
 * unit tier's budget; `npm run chaos -- --backend elector --only shards --seeds N` runs more. A
 * failing seed replays exactly: LEASEHOLD_SHARD_SIM_SEED=N runs that one alone.
 */
const SEEDS = Number(process.env.LEASEHOLD_SHARD_SIM_SEEDS ?? 10);
const ONLY = process.env.LEASEHOLD_SHARD_SIM_SEED;

describe('shard groups under randomized faults (seeded simulation)', () => {
  it(`no shard with two owners, tokens that grow, one owner's work at a time, balance once settled, over ${ONLY ? `seed ${ONLY}` : `${SEEDS} seeds`}`, async () => {
    const seeds = ONLY ? [Number(ONLY)] : Array.from({ length: SEEDS }, (_, i) => i + 1);
    let gains = 0;
    const faults: Record<string, number> = {};
    for (const seed of seeds) {
      const r = await runShardSimulation(seed);
      assert.deepEqual(r.violations, [], `seed ${seed} (replay with LEASEHOLD_SHARD_SIM_SEED=${seed})`);
      gains += r.gains;
      for (const [k, v] of Object.entries(r.faults)) faults[k] = (faults[k] ?? 0) + v;
    }
    // The simulation must exercise moves and faults, or it proves nothing.
    assert.ok(gains >= seeds.length * 5, `only ${gains} changes of owner in ${seeds.length} seeds`);
    if (!ONLY)
      for (const f of [
        'pause',
        'crash and restart',
        'graceful restart',
        'link cut off',
        'app unhealthy',
        'write applied, answer lost',
        'watch lags',
        'watch drops, then resumes',
        'watch drops, then lists again (410 Gone)',
      ])
        assert.ok(faults[f], `no "${f}" fault was injected`);
  });
});

describe('shard groups: the seeds that found faults in the member', () => {
  // Each failed on the member of its day and passes since its fix; each runs as it was found,
  // before the simulation's groups could read from a watch's copy.
  const found = [
    { seed: 453, what: 'a list that showed a shard record deleted renewed its validity before ending it (fixed in 9ccbe86)' },
    { seed: 559, what: 'a break in a member’s lists did not restart an absence wait: a record created and deleted unseen (fixed in c148df0)' },
    { seed: 1576, what: 'a member paused between two batches of takes took a live owner’s shard with its pre-pause view (fixed in dcd83b4)' },
    {
      seed: 4,
      what: 'a shard created just before its store was replaced was created again at once by a member that had waited out its absence (fixed in e5b42b6)',
    },
    {
      seed: 49,
      what: 'a member on a longer lease was judged over by another’s shorter lease and its shards taken while it still owned them (fixed in 1a3bf32)',
    },
    {
      seed: 154,
      what: 'the store replaced while a member on a longer lease was paused: its slot gone, an absent shard was waited out for the shorter leases left and created while it still worked (fixed with the high-water token)',
    },
    { seed: 73, what: 'an absent shard was created after the creator’s own lease while its owner on a longer lease still worked on it (fixed in 1a3bf32)' },
    {
      seed: 21,
      what: 'a record written back by its holder on a longer lease after the store was replaced was taken after the taker’s own lease, its work still running (fixed in 70fb0ef)',
    },
    {
      seed: 15,
      what: 'a member whose session had ended wrote back a deleted record as it last knew it, erasing the newer owner’s, and a rejoined member took it at once while that owner still worked (fixed: only the live session’s records are written back)',
    },
  ];
  for (const { seed, what } of found)
    it(`seed ${seed}: ${what}`, async () => {
      const r = await runShardSimulation(seed, undefined, false, { watchFed: false, wakeAtFlips: false });
      assert.deepEqual(r.violations, [], `seed ${seed}`);
      assert.ok(r.gains > 0);
    });
});

describe('shard groups: the seed that found a documented limit, closed since', () => {
  // Seed 1400 was counted apart as "A longer lease lost with its slot" until the group header
  // carried the longest lease announced: the member restarted at the store's replacement never
  // listed the slot of the member on a 30 s lease, cut off from the store, and created its shards
  // after its own 15 s. The running members that saw the 30 s now write it back with the header,
  // and the newcomer waits it out: neither a violation nor the limit.
  it('seed 1400: a member restarted as the store was replaced waits out the longer lease of a member cut off from it, read from the header (docs/shards.md, "A longer lease lost with its slot")', async () => {
    // As it ran when found: the members' wake when a session could have expired (later) changes its course.
    const r = await runShardSimulation(1400, undefined, false, { wakeAtFlips: false });
    assert.deepEqual(r.violations, [], 'seed 1400');
    assert.ok(r.faults['store replaced'], 'seed 1400 no longer replaces the store: it proves nothing');
    assert.equal(r.faults['two owners: a longer lease lost with its slot (documented limit)'] ?? 0, 0, 'seed 1400 still reaches the limit');
  });
});

describe('shard groups: seeds that found a bug, fixed since', () => {
  // Seed 1031 (found by the 2,000-seed run): the store replaced twice. After the first, a member
  // on a 30 s lease wrote its shards' records back before its slot, so another member noticed its
  // session out of its slot; the slot came back with the same session. After the second, the
  // other member counted the session's absence from its first notice, 31 s before, and took two
  // of its shards 340 ms after the replacement while their work still ran. GroupView now forgets
  // that notice once it sees the session in its slot again (src/shards/group-view.test.ts).
  it('seed 1031: a session out of its slot a second time counts as live for its lease from then', async () => {
    // As it ran when found: greeting a newcomer, the stores' own raise and the wake when a
    // session could have expired (all later) change the run's course.
    const r = await runShardSimulation(1031, undefined, false, { greet: false, storeRaise: false, wakeAtFlips: false });
    assert.deepEqual(r.violations, [], 'seed 1031');
    assert.ok((r.faults['store replaced'] ?? 0) >= 2, 'seed 1031 no longer replaces the store twice: it proves nothing');
  });
});
