import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { couldHaveExpiredAtMono, drainedEachWithin, drainedWithin } from './end-of-term-rule.js';

describe('the end-of-term rule, shared by a lease’s gate and each shard’s', () => {
  it('a drain that resolves within its bound: stopped, and its timer does not outlive it', async () => {
    const clock = new FakeClock();
    assert.equal(await drainedWithin(clock, 1_000, async () => {}), true);
    assert.equal(await drainedWithin(clock, 1_000, async () => true), true);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('drains ended together share one bound: one timer, each verdict its own and as soon as its drain answers, the rest aborted at the bound', async () => {
    const clock = new FakeClock();
    const aborted: boolean[] = [];
    // Work that never says it stopped: only the bound ends the wait, and the wait hears of it.
    const never = (bound: AbortSignal) => new Promise<void>(() => bound.addEventListener('abort', () => aborted.push(true)));
    const verdicts = drainedEachWithin(clock, 1_000, [async () => {}, never, null, async () => false, never]);
    assert.equal(clock.pendingTimers(), 1, 'one timer for five drains');
    const early = await Promise.all([verdicts[0], verdicts[2], verdicts[3]]);
    assert.deepEqual(early, [true, true, false], 'the quick ones answer before the bound');
    const [late] = await Promise.all([Promise.all([verdicts[1], verdicts[4]]), clock.advance(1_000)]);
    assert.deepEqual(late, [false, false], 'the slow ones are not stopped at the bound');
    assert.equal(aborted.length, 2, 'their waits were told the bound passed');
    const quick = drainedEachWithin(clock, 1_000, [async () => {}, async () => true]);
    assert.deepEqual(await Promise.all(quick), [true, true]);
    assert.equal(clock.pendingTimers(), 0, 'the timer does not outlive drains that all answered');
  });

  it('no drain, or a bound of 0: nothing to wait for', async () => {
    const clock = new FakeClock();
    let asked = false;
    assert.equal(await drainedWithin(clock, 1_000, null), true);
    assert.equal(
      await drainedWithin(clock, 0, async () => {
        asked = true;
        return false;
      }),
      true,
    );
    assert.equal(asked, false, 'a bound of 0 does not even ask');
  });

  it('a drain that says it cannot know, throws, or rejects: not stopped', async () => {
    const clock = new FakeClock();
    assert.equal(await drainedWithin(clock, 1_000, async () => false), false);
    assert.equal(
      await drainedWithin(clock, 1_000, () => {
        throw new Error('boom');
      }),
      false,
    );
    assert.equal(await drainedWithin(clock, 1_000, () => Promise.reject(new Error('boom'))), false);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('a drain past its bound: not stopped, at the bound', async () => {
    const clock = new FakeClock();
    let answer: boolean | null = null;
    void drainedWithin(clock, 1_000, () => new Promise(() => {})).then((r) => (answer = r));
    await clock.advance(999);
    assert.equal(answer, null);
    await clock.advance(1);
    assert.equal(answer, false);
  });

  it('held until the last renewal (as sent) + the lease duration', () => {
    assert.equal(couldHaveExpiredAtMono(5_000, 15_000), 20_000);
  });
});
