import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { KeyedDrain, type DrainWording } from './keyed-drain.js';

const WORDING: DrainWording<string> = {
  stillHeld: (k, t) => `held ${k} ${t}`,
  notEndedLast: (k, t, e) => `not last ${k} ${t} ${e ?? '-'}`,
  stopped: (k, t) => `ok ${k} ${t}`,
};

describe('KeyedDrain: the drain record both sidecars keep', () => {
  it('a report ends the wait of its own key only, in the caller’s words', async () => {
    const clock = new FakeClock();
    const d = new KeyedDrain(clock, WORDING);
    d.began('a', 3);
    d.began('b', 4);
    assert.deepEqual(
      d.report(undefined, () => ({ key: 'a', token: 3 })),
      { code: 409, body: 'held a 3' },
    );
    d.end('a', 3);
    d.end('b', 4);
    const waits: Record<string, boolean | null> = { a: null, b: null };
    void d.wait('a', 3, 1_000).then((v) => (waits.a = v));
    void d.wait('b', 4, 1_000).then((v) => (waits.b = v));
    assert.deepEqual(
      d.report(undefined, () => ({ key: 'b', token: 3 })),
      { code: 409, body: 'not last b 3 4' },
    );
    assert.deepEqual(
      d.report(undefined, () => ({ key: 'c', token: 1 })),
      { code: 409, body: 'not last c 1 -' },
    );
    assert.deepEqual(
      d.report(undefined, () => ({ key: 'a', token: 3 })),
      { code: 200, body: 'ok a 3' },
    );
    await clock.advance(0);
    assert.deepEqual(waits, { a: true, b: null }, "a's report does not end b's drain");
    await clock.advance(1_000);
    assert.deepEqual(waits, { a: true, b: false });
  });

  it('an answer from the request is given as it is; a new end of the same key owes a new report', () => {
    const d = new KeyedDrain(new FakeClock(), WORDING);
    assert.deepEqual(
      d.report(undefined, () => ({ code: 400, body: 'bad' })),
      { code: 400, body: 'bad' },
    );
    d.end('a', 1);
    assert.equal(d.report(undefined, () => ({ key: 'a', token: 1 })).code, 200);
    assert.equal(d.pending('a', 1), false);
    d.began('a', 2);
    d.end('a', 2);
    assert.equal(d.pending('a', 2), true);
    assert.equal(d.reportedStopped('a', 1), false, 'the old report is not carried over');
  });
});
