import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { StandBack } from './stand-back.js';
import { FakeClock } from '../testing/fake-clock.js';

describe('StandBack', () => {
  it('is eligible until told to stand aside, then for exactly that long, telling its subscribers each change', async () => {
    const clock = new FakeClock();
    const s = new StandBack(clock);
    let changes = 0;
    s.subscribe(() => changes++);
    assert.equal(s.eligible(), true);
    assert.equal(s.standAside(), null);
    s.standBack('the command failed 3 times in a row', 15_000);
    assert.equal(s.eligible(), false);
    assert.deepEqual(s.standAside(), { reason: 'the command failed 3 times in a row', since: clock.now() });
    assert.equal(changes, 1);
    await clock.advance(14_999);
    assert.equal(s.eligible(), false);
    await clock.advance(1);
    assert.equal(s.eligible(), true);
    assert.equal(changes, 2);
    s.standBack('again', 1_000);
    s.close();
    await clock.advance(5_000);
    assert.equal(s.eligible(), false, 'a closed one keeps its state: the runner is stopping');
  });
});
