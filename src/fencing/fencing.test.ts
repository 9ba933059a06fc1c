import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FencedSqliteResource } from './fenced-resource.js';
import { readLeadership } from '../status/status-reader.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-fencing-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('FencedSqliteResource', () => {
  it('accepts equal or higher tokens, rejects lower ones, and remembers across reopening', () => {
    const path = join(dir, 'r.db');
    const r = new FencedSqliteResource(path);
    assert.equal(r.write('v5', 'a', 5).accepted, true);
    assert.equal(r.write('v5b', 'a', 5).accepted, true, 'the same term may write again');
    const stale = r.write('stale', 'old', 3);
    assert.deepEqual([stale.accepted, stale.highest], [false, 5]);
    r.close();
    const again = new FencedSqliteResource(path);
    assert.equal(again.write('still stale', 'old', 4).accepted, false);
    assert.throws(
      () => again.writeOrThrow('x', 'old', 4),
      (e: { code: string }) => e.code === 'LEASEHOLD_ERR_STALE_TOKEN',
    );
    assert.equal(again.write('v6', 'b', 6).accepted, true);
    assert.deepEqual(again.read(), { value: 'v6', writtenBy: 'b', fencingToken: 6 });
    assert.throws(() => again.write('x', 'b', -1), RangeError);
    again.close();
  });
});

describe('readLeadership', () => {
  const now = new Date('2026-12-02T10:00:00Z');
  const write = (name: string, status: object | string) => {
    const d = join(dir, name);
    rmSync(d, { recursive: true, force: true });
    mkdirSync(d);
    writeFileSync(join(d, 'status.json'), typeof status === 'string' ? status : JSON.stringify(status));
    return d;
  };
  const base = { lease: 'l', identity: 'me', holder: 'me', isLeader: true, fencingToken: 4, acquiredAt: null, renewedAt: null, updatedAt: now.toISOString() };
  const cases: [string, string | object | null, boolean, RegExp][] = [
    ['leader, valid until later', { ...base, validUntil: '2026-12-02T10:00:05Z' }, true, /leader/],
    ['leader, but validUntil passed (frozen sidecar)', { ...base, validUntil: '2026-12-02T09:59:59Z' }, false, /expired/],
    ['leader without validUntil', { ...base, validUntil: null }, false, /expired/],
    ['follower', { ...base, isLeader: false, holder: 'other', fencingToken: null, validUntil: null }, false, /not leader \(holder: other\)/],
    ['torn or corrupt file', '{"isLeader": tr', false, /cannot read status/],
    ['no file', null, false, /cannot read status/],
  ];
  for (const [name, status, want, reason] of cases) {
    it(name, () => {
      const d = status === null ? join(dir, 'missing') : write(name.replace(/\W+/g, '-'), status);
      const v = readLeadership(d, now);
      assert.equal(v.isLeader, want);
      assert.equal(v.fencingToken, want ? 4 : null);
      assert.match(v.reason, reason);
    });
  }
  it("an older sidecar's file, without stoppedAt, reads as running (stoppedAt null, as the type says)", () => {
    const v = readLeadership(write('older', { ...base, validUntil: '2026-12-02T10:00:05Z' }), now);
    assert.equal(v.isLeader, true);
    assert.equal(v.status?.stoppedAt, null);
  });
});
