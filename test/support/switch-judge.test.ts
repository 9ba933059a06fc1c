import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { judgeSwitch, type Admission } from './switch-judge.js';

/** Admissions 100 ms apart, from a string of kinds: `w` webhook, `p` policy, `r` refused, `n` none, `t` twice. */
const seq = (kinds: string): Admission[] =>
  [...kinds].map((k, i) => ({ at: i * 100, by: ({ w: 'webhook', p: 'policy', r: 'refused', n: 'none', t: 'twice' } as const)[k as 'w'] }));

describe('judgeSwitch', () => {
  it('a switch with no gap: window 0', () => {
    assert.deepEqual(judgeSwitch(seq('wwwppp'), 'webhook', 'policy', []), { problem: null, windowMs: 0, inWindow: 'nothing else' });
  });

  it('a window of allowed kinds: measured from the first not by the old injector to the last not by the new', () => {
    assert.deepEqual(judgeSwitch(seq('wwrrnwppp'), 'webhook', 'policy', ['refused', 'none']), {
      problem: null,
      windowMs: 300,
      inWindow: 'refused 2, none 1',
    });
  });

  it('a kind the window may not hold, anywhere in it, is named', () => {
    assert.match(judgeSwitch(seq('wwrnpp'), 'webhook', 'policy', ['refused']).problem ?? '', /without the sidecar/);
    assert.match(judgeSwitch(seq('wwtpp'), 'webhook', 'policy', ['refused', 'none']).problem ?? '', /two sidecars/);
    assert.match(judgeSwitch(seq('pprww'), 'policy', 'webhook', []).problem ?? '', /^an admission refused/);
  });

  it('a switch that never ends, never begins, or was never tried is refused', () => {
    assert.match(judgeSwitch(seq('wwwrr'), 'webhook', 'policy', ['refused']).problem ?? '', /the last admission was refused, not by the policy/);
    assert.match(judgeSwitch(seq('wwww'), 'webhook', 'policy', []).problem ?? '', /the last admission was webhook, not by the policy/);
    assert.match(judgeSwitch(seq('rwpp'), 'webhook', 'policy', ['refused']).problem ?? '', /the first admission was refused, not by the webhook/);
    assert.equal(judgeSwitch([], 'webhook', 'policy', []).problem, 'no admission tried');
  });
});
