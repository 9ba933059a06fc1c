import { it } from 'node:test';
import assert from 'node:assert/strict';
import { durationRangeError, formatDuration, parseDuration } from './duration.js';

const cases: [string, number | null][] = [
  ['15s', 15_000],
  ['500ms', 500],
  ['1m30s', 90_000],
  ['1.5s', 1_500],
  ['2h', 7_200_000],
  // Decimal, not float, arithmetic: as floats these are 1004.9999999999999 and 1000.
  ['1.005s', 1_005],
  ['0.001m', 60],
  [' 2s ', 2_000],
  ['15', null],
  ['', null],
  ['-1s', null],
  ['1d', null],
  ['s', null],
  ['1 s', null],
];
for (const [text, want] of cases) {
  it(`parseDuration(${JSON.stringify(text)}) = ${want}`, () => assert.equal(parseDuration(text), want));
}

it('formatDuration round-trips', () => {
  for (const ms of [500, 1_000, 15_000, 90_000, 1_500]) assert.equal(parseDuration(formatDuration(ms)), ms);
});

it('a duration finer than a millisecond is refused, however small the excess', () => {
  for (const text of ['0.5ms', '1.0001s', '1.0000000000000001s', '0.0000001h'])
    assert.match(durationRangeError(parseDuration(text)!) ?? '', /whole number of milliseconds/, text);
});
