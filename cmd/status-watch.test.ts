import { it } from 'node:test';
import assert from 'node:assert/strict';
import { changeKey, formatWatchLine } from './status-watch.js';

const at = new Date('2026-12-02T09:00:00.000Z');
const base = { lease: 'x', backend: 'sqlite', location: 'l.db', found: true, state: 'held' as const, holder: 'a', fencingToken: 3 };

it('a watch line escapes a holder from any store, as the one-shot report does', () => {
  const line = formatWatchLine({ ...base, holder: 'a\nheld\u001b[2J\u202e', expiresAt: '2026-12-02T09:00:15.000Z' }, at);
  assert.equal(line, '2026-12-02T09:00:00.000Z  held      holder a\\u000aheld\\u001b[2J\\u202e  token 3  expires 2026-12-02T09:00:15.000Z\n');
});

it('a renewal (a later expiry alone) is no change; a new holder, token or state is', () => {
  const k = changeKey({ ...base, expiresAt: '2026-12-02T09:00:15.000Z' });
  assert.equal(changeKey({ ...base, expiresAt: '2026-12-02T09:00:17.000Z', renewedAt: '2026-12-02T09:00:02.000Z' }), k);
  for (const other of [{ holder: 'b' }, { fencingToken: 4 }, { state: 'expired' as const }, { state: 'released' as const, holder: '' }]) {
    assert.notEqual(changeKey({ ...base, ...other }), k, JSON.stringify(other));
  }
  assert.equal(
    formatWatchLine({ lease: 'x', backend: 'sqlite', location: 'l.db', found: false }, at),
    '2026-12-02T09:00:00.000Z  absent    lease x not found in sqlite store l.db\n',
  );
});

it('--status-dir: the candidate standing aside, campaigning again, leading or stopped is a change, shown escaped', () => {
  const candidate = { statusDir: '/s', identity: 'me', isLeader: false, standingAside: null, stoppedAt: null };
  const k = changeKey({ ...base, candidate });
  const aside = { reason: 'app unhealthy: status 503: \u001b[2J', since: '2026-12-02T08:59:00.000Z' };
  const changed = [
    { ...candidate, standingAside: aside },
    { ...candidate, isLeader: true },
    { ...candidate, stoppedAt: '2026-12-02T08:59:30.000Z' },
    { statusDir: '/s', error: 'cannot read /s/status.json: ENOENT' },
  ];
  for (const c of changed) assert.notEqual(changeKey({ ...base, candidate: c }), k, JSON.stringify(c));
  assert.equal(
    formatWatchLine({ ...base, expiresAt: '2026-12-02T09:00:15.000Z', candidate: { ...candidate, standingAside: aside } }, at),
    '2026-12-02T09:00:00.000Z  held      holder a  token 3  expires 2026-12-02T09:00:15.000Z  sidecar me: standing aside since 2026-12-02T08:59:00.000Z: app unhealthy: status 503: \\u001b[2J\n',
  );
  // A stopped sidecar's last file is not a standby's, even if it stood aside when it stopped.
  assert.match(
    formatWatchLine({ ...base, candidate: { ...candidate, standingAside: aside, stoppedAt: '2026-12-02T08:59:30.000Z' } }, at),
    /sidecar me: stopped at 2026-12-02T08:59:30\.000Z, not campaigning\n$/,
  );
});
