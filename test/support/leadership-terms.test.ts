import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { termViolations, termsFromLog } from './leadership-terms.js';

// The chaos suite's overlap check must be able to fail: these logs are written by hand.
const line = (time: string, msg: string, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ time: `2026-12-02T10:00:${time}Z`, level: 'info', msg, ...fields });

describe('leadership terms from sidecar logs', () => {
  test('a term ends at its latest validUntil, or earlier at a step-down', () => {
    const log = [
      line('00.000', 'became leader', { token: 3, validUntil: '2026-12-02T10:00:01.500Z' }),
      line('00.400', 'renewed', { token: 3, validUntil: '2026-12-02T10:00:01.900Z' }),
      line('00.900', 'stopped leading', { token: 3, reason: 'shutdown' }),
      line('05.000', 'became leader', { token: 5, validUntil: '2026-12-02T10:00:06.500Z' }),
      line('05.400', 'renewed', { token: 5, validUntil: '2026-12-02T10:00:06.900Z' }),
      '{"time":"2026-12-02T10:00:05.8', // cut off by SIGKILL
    ].join('\n');
    assert.deepEqual(termsFromLog('a', log), [
      { id: 'a', token: 3, start: Date.parse('2026-12-02T10:00:00.000Z'), end: Date.parse('2026-12-02T10:00:00.900Z') },
      { id: 'a', token: 5, start: Date.parse('2026-12-02T10:00:05.000Z'), end: Date.parse('2026-12-02T10:00:06.900Z') },
    ]);
  });

  const t = (id: string, token: number, start: number, end: number) => ({ id, token, start, end });
  const cases = [
    { name: 'back-to-back terms are fine', terms: [t('a', 1, 0, 100), t('b', 2, 100, 200)], violations: [] },
    {
      name: 'a frozen leader whose validity outlives the next start',
      terms: [t('a', 1, 0, 150), t('b', 2, 100, 200)],
      violations: [/overlapping leadership: a token 1 .* and b token 2/],
    },
    {
      name: 'a term inside another',
      terms: [t('a', 1, 0, 500), t('b', 2, 100, 200), t('c', 3, 300, 600)],
      violations: [/a token 1 .* and b token 2/, /a token 1 .* and c token 3/],
    },
    { name: 'a token that did not grow', terms: [t('a', 4, 0, 100), t('b', 4, 200, 300)], violations: [/tokens did not increase/] },
    { name: 'one candidate re-acquiring is not an overlap with itself', terms: [t('a', 1, 0, 100), t('a', 2, 50, 150)], violations: [] },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const got = termViolations(c.terms);
      assert.equal(got.length, c.violations.length, got.join('\n'));
      c.violations.forEach((re, i) => assert.match(got[i]!, re));
    });
  }
});
