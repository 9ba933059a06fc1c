import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { leaderlessGaps } from './leaderless-gaps.js';

const at = (holder: string, acquireMs: number, renewMs: number) => ({ at: 0, holder, acquireMs, renewMs });

describe('leaderlessGaps', () => {
  it('measures a release from its renewTime to the next acquireTime, and ignores renewals and replays', () => {
    const gaps = leaderlessGaps(
      [at('a', 1_000, 1_000), at('a', 1_000, 3_000), at('a', 1_000, 3_000), at('', 3_100, 3_100), at('b', 3_350, 3_350), at('b', 3_350, 5_000)],
      15_000,
    );
    assert.deepEqual(gaps, [{ from: 'a', to: 'b', gapMs: 250, released: true, acquireMs: 3_350 }]);
  });

  it('measures a takeover without a release from the expiry, and a new term of the same holder as a handoff', () => {
    const gaps = leaderlessGaps([at('a', 0, 10_000), at('b', 25_040, 25_040), at('b', 40_100, 40_100)], 15_000);
    assert.deepEqual(gaps, [
      { from: 'a', to: 'b', gapMs: 40, released: false, acquireMs: 25_040 },
      { from: 'b', to: 'b', gapMs: 60, released: false, acquireMs: 40_100 },
    ]);
  });

  it('counts nothing before the first holder it saw', () => {
    assert.deepEqual(leaderlessGaps([at('', 0, 0), at('a', 500, 500)], 15_000), []);
  });
});
