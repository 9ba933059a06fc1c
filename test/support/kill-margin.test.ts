import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { JUDGED_LATENESS_MS, judgeKillRounds, latenessIn } from './kill-margin.js';

describe('kill-margin: which rounds are judged', () => {
  const probe = ['ticking', 'late 1000 40', 'late 2000 7', 'late 3100 90', ''].join('\n');

  it('counts a late tick whose wait overlaps the window, and no other', () => {
    assert.equal(latenessIn(probe, 990, 1100), 40, 'the tick that came at 1000');
    assert.equal(latenessIn(probe, 1001, 1980), 0, 'no tick came late in between');
    assert.equal(latenessIn(probe, 1001, 1990), 7, 'the wait of the tick that came at 2000 began at 1988');
    assert.equal(latenessIn(probe, 1500, 2500), 7);
    assert.equal(latenessIn(probe, 3000, 3050), 90, "a stall from 3005 to 3100 covers the window's end");
    assert.equal(latenessIn(probe, 0, 5000), 90, 'the latest of them');
  });

  it('judges the median of the rounds on time only', () => {
    const onTime = JUDGED_LATENESS_MS;
    const verdict = judgeKillRounds([
      { marginMs: -300, latenessMs: onTime + 1 },
      { marginMs: 40, latenessMs: 0 },
      { marginMs: -5, latenessMs: onTime },
      { marginMs: 30, latenessMs: 3 },
    ]);
    assert.deepEqual(
      verdict.judged.map((r) => r.marginMs),
      [40, -5, 30],
    );
    assert.equal(verdict.medianMs, 30);
    assert.equal(judgeKillRounds([{ marginMs: 10, latenessMs: 999 }]).medianMs, null, 'nothing judged');
    assert.equal(judgeKillRounds([{ marginMs: -1, latenessMs: 0 }]).medianMs, -1, 'a round on time past the expiry fails');
  });
});
