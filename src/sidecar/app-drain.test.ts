import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AppDrain, maxDrainMs } from './app-drain.js';
import { FakeClock } from '../testing/fake-clock.js';

describe('AppDrain: the app says which term stopped', () => {
  it('a report for the term that ended ends the wait; a late one for an older term or the term still led does not', async () => {
    const clock = new FakeClock();
    const d = new AppDrain(clock);
    d.started(4);
    assert.equal(d.report('4').code, 409, 'still leading term 4');
    d.stopped();
    d.started(6);
    d.stopped();
    let done: boolean | null = null;
    void d.wait(1_000).then((v) => (done = v));
    assert.equal(d.report('4').code, 409, 'term 4 is not the one that ended last');
    assert.match(d.report('4').body, /not the term that ended last here \(6\)/);
    await clock.advance(500);
    assert.equal(done, null);
    assert.equal(d.report('6').code, 200);
    assert.equal(d.report('6').code, 200, 'repeating it is harmless');
    await clock.advance(0);
    assert.equal(done, true);
    assert.equal(d.pending, null);
  });

  it('a report that came before the wait counts; without one the wait ends false at its bound', async () => {
    const clock = new FakeClock();
    const d = new AppDrain(clock);
    d.started(1);
    d.stopped();
    assert.equal(d.report('1').code, 200);
    assert.equal(await d.wait(1_000), true);
    d.started(2);
    d.stopped();
    let done: boolean | null = null;
    void d.wait(1_000).then((v) => (done = v));
    await clock.advance(999);
    assert.equal(done, null);
    await clock.advance(1);
    assert.equal(done, false);
  });

  it('refuses a token that is not digits', () => {
    const d = new AppDrain(new FakeClock());
    for (const raw of [null, '', ' 1', '0x1', '-1', '1.0', '12345678901234567']) assert.equal(d.report(raw).code, 400, String(raw));
  });

  it('maxDrainMs: renew-deadline/2 − retry-period', () => {
    assert.equal(maxDrainMs({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }), 3_000);
    assert.equal(maxDrainMs({ leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 }), 1_000);
  });
});
