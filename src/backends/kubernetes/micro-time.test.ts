import { it } from 'node:test';
import assert from 'node:assert/strict';
import { formatMicroTime, parseMicroTime } from './micro-time.js';

it('formats exactly six fractional digits, in UTC', () => {
  assert.equal(formatMicroTime(new Date('2026-12-02T09:15:24.123Z')), '2026-12-02T09:15:24.123000Z');
  assert.equal(formatMicroTime(new Date('2026-12-02T09:15:24Z')), '2026-12-02T09:15:24.000000Z');
  assert.match(formatMicroTime(new Date()), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
});

it('parses MicroTime, Time and absent values', () => {
  assert.equal(parseMicroTime('2026-12-02T09:15:24.123456Z')?.toISOString(), '2026-12-02T09:15:24.123Z');
  assert.equal(parseMicroTime('2026-12-02T09:15:24Z')?.toISOString(), '2026-12-02T09:15:24.000Z');
  assert.equal(parseMicroTime(undefined), null);
  assert.equal(parseMicroTime(''), null);
  assert.equal(parseMicroTime('yesterday'), null);
});
