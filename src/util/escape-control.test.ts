import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jsonForTerminal } from './escape-control.js';

describe('jsonForTerminal', () => {
  it('escapes control, format and line-separator characters as JSON escapes; parses to the same value', () => {
    const cases: [string, string][] = [
      ['plain', '"plain"'],
      ['a\u001b[2J', '"a\\u001b[2J"'],
      ['\u009b31m\u007f', '"\\u009b31m\\u007f"'],
      ['\u202eX\u2028\u2066', '"\\u202eX\\u2028\\u2066"'],
      ['tag \u{E0001}', '"tag \\udb40\\udc01"'],
      ['quote " and \\', '"quote \\" and \\\\"'],
    ];
    for (const [value, json] of cases) {
      assert.equal(jsonForTerminal(value), json, JSON.stringify(value));
      assert.equal((JSON.parse(jsonForTerminal({ v: value })) as { v: string }).v, value);
    }
  });
});
