import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { judgeFencedWrites, type WriteAttempt, type WriteRow } from './fenced-writes-judge.js';

const row = (seq: number, key: string, token: number, writer: string): WriteRow => ({ seq, key, token, writer });
const told = (r: WriteRow, outcome = 'accepted'): WriteAttempt => ({ key: r.key, token: r.token, writer: r.writer, outcome });

describe('judgeFencedWrites', () => {
  const rows = [row(1, 'a', 1, 'm1#0'), row(2, 'b', 1, 'm2#0'), row(3, 'a', 2, 'm2#1'), row(4, 'a', 2, 'm2#2')];
  it('passes tokens that never go down per key, counting outcomes and handovers', () => {
    const v = judgeFencedWrites(rows, [
      ...rows.map((r) => told(r)),
      { key: 'a', token: 1, writer: 'm1#1', outcome: 'stale' },
      { key: 'b', token: 1, writer: 'm2#3', outcome: 'error: busy' },
    ]);
    assert.deepEqual(v, { accepted: 4, stale: 1, errors: 1, keysHandedOver: 1, violations: [] });
  });
  it('finds a stale write that landed: a lower token after a higher one on the same key', () => {
    const landed = row(5, 'a', 1, 'm1#1');
    const v = judgeFencedWrites(
      [...rows, landed],
      [...rows, landed].map((r) => told(r)),
    );
    assert.deepEqual(v.violations, ['key a: token 1 accepted (seq 5, m1#1) after token 2 (seq 3, m2#1)']);
  });
  it('judges by commit order, not by the order rows are given', () => {
    const v = judgeFencedWrites([row(9, 'a', 1, 'late'), row(2, 'a', 3, 'early')], []);
    assert.equal(v.violations.length, 1);
  });
  it('finds an accepted write missing from the resource, and a refused one in it', () => {
    const v = judgeFencedWrites(rows.slice(0, 3), [told(rows[3]!), told(rows[0]!, 'stale')]);
    assert.deepEqual(v.violations, [
      'm2#2 (key a, token 2) was told accepted but is not in the resource',
      'm1#0 (key a, token 1) was told refused but is in the resource',
    ]);
  });
});
