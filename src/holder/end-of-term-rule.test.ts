import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { couldHaveExpiredAtMono, drainedWithin } from './end-of-term-rule.js';

describe('the end-of-term rule, shared by a lease’s gate and each shard’s', () => {
  it('a drain that resolves within its bound: stopped, and its timer does not outlive it', async () => {
    const clock = new FakeClock();
    assert.equal(await drainedWithin(clock, 1_000, async () => {}), true);
    assert.equal(await drainedWithin(clock, 1_000, async () => true), true);
    assert.equal(clock.pendingTimers(), 0);
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
