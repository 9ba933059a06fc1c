import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { JUDGED_LATENESS_MS, judgeKillRounds, latenessIn, reachedMs } from './kill-margin.js';

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

  it('judges the rounds on time only, each of them', () => {
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
    assert.equal(verdict.worstMs, -5, 'the worst judged round');
    assert.equal(judgeKillRounds([{ marginMs: 10, latenessMs: 999 }]).worstMs, null, 'nothing judged');
    assert.equal(judgeKillRounds([{ marginMs: -1, latenessMs: 0 }]).worstMs, -1, 'a round on time past the expiry fails');
  });

  it('one judged round past the expiry fails the verdict, whatever the others (hostile review: a median hid it)', () => {
    const verdict = judgeKillRounds([
      { marginMs: 40, latenessMs: 0 },
      { marginMs: -400, latenessMs: 0 },
      { marginMs: 45, latenessMs: 3 },
    ]);
    assert.equal(verdict.judged.length, 3);
    assert.equal(verdict.worstMs, -400);
  });

  it("knows how far the probe's output reaches: its last whole line", () => {
    assert.equal(reachedMs(''), 0);
    assert.equal(reachedMs('ticking\n'), 0);
    assert.equal(reachedMs('ticking\nat 1000\nlate 1090 80\n'), 1090);
    assert.equal(reachedMs('ticking\nat 1000\nlate 10'), 1000, 'a line not yet whole');
  });
});
