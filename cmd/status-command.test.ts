import { it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryLeaseStore } from '../src/testing/memory-store.js';
import { formatReport, readReport } from './status-command.js';

const now = new Date('2026-12-02T09:00:00.000Z');

it('a lease duration that is not a number, or past what a Date holds, is an unknown expiry on any store', async () => {
  const store = new MemoryLeaseStore();
  for (const seconds of [NaN, 1e308, Infinity]) {
    store.put('x', { holderIdentity: 'peer', leaseDurationSeconds: seconds, acquireTime: null, renewTime: now, leaseTransitions: 3 });
    const report = await readReport(store, 'x', now);
    assert.equal(report.expiresAt, null, String(seconds));
    assert.match(formatReport(report, now), /^expires {2}-$/m);
  }
});

it('the text report escapes a holder from any store, as the status files do', () => {
  const text = formatReport(
    { lease: 'x', backend: 'kubernetes', location: 'ns/x', found: true, state: 'held', holder: 'a\nstate    released\u001b[2J', fencingToken: 1 },
    now,
  );
  assert.ok(!text.includes('\u001b'), text);
  assert.equal(text.match(/^state/gm)?.length, 1);
  assert.match(text, /^holder {3}a\\u000astate {4}released\\u001b\[2J$/m);
});

it('the text report escapes bidi and zero-width format characters, which reorder or hide what the screen shows', () => {
  const holder = 'evil\u202egnp.exe\u2066x\u2069\u200b\u200f\ufeff\u{e0041}';
  const text = formatReport({ lease: 'x', backend: 'sqlite', location: 'l.db', found: true, state: 'held', holder, fencingToken: 1 }, now);
  assert.ok(!/\p{Cf}/u.test(text), JSON.stringify(text));
  assert.match(text, /^holder {3}evil\\u202egnp\.exe\\u2066x\\u2069\\u200b\\u200f\\ufeff\\u\{e0041\}$/m);
});
