import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { readLeadership } from '../../src/status/status-reader.js';
import { FencedSqliteResource } from '../../src/fencing/fenced-resource.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };

describe('a leader paused past its lease (SIGSTOP) wakes up stale', () => {
  const dir = scratchDir(() => cands);
  const db = join(dir.path, 'leases.db');
  const cands: Candidate[] = [];

  it('its status says not leader and the fenced resource rejects its old token', { timeout: 60_000 }, async () => {
    const resource = new FencedSqliteResource(join(dir.path, 'resource.db'));
    for (const id of ['a', 'b']) cands.push(startSidecar(dir.path, id, ['--db', db, '--lease', 'stale'], T));
    const old = await waitFor('a leader', () => validLeaders(cands)[0], 20_000);
    // The old leader's app reads its token and writes once, legitimately.
    const oldView = readLeadership(old.c.statusDir);
    assert.equal(oldView.isLeader, true);
    assert.equal(resource.write('A: first value', old.c.id, oldView.fencingToken!).accepted, true);

    // It is about to write again when its whole pod freezes (GC pause, VM stall).
    old.c.proc.kill('SIGSTOP');
    const next = await waitFor('another leader', () => validLeaders(cands).find((l) => l.c !== old.c), 15_000);
    assert.ok(next.token > oldView.fencingToken!);
    const fresh = resource.write('B: fresh value', next.c.id, next.token);
    assert.equal(fresh.accepted, true);

    old.c.proc.kill('SIGCONT');
    // The moment it resumes, its status is already unusable: validUntil has passed.
    const woke = readLeadership(old.c.statusDir);
    assert.equal(woke.isLeader, false, woke.reason);
    // Its app still holds the old token and finishes the write it started: rejected.
    const stale = resource.write('A: STALE value', old.c.id, oldView.fencingToken!);
    assert.equal(stale.accepted, false);
    assert.match(stale.reason, new RegExp(`fencing token ${oldView.fencingToken} is behind the highest token this resource has accepted \\(${next.token}\\)`));
    assert.deepEqual(resource.read(), { value: 'B: fresh value', writtenBy: next.c.id, fencingToken: next.token });
    // And the sidecar itself notices and says so explicitly.
    await waitFor(
      'old leader to write isLeader false',
      () => {
        const v = readLeadership(old.c.statusDir);
        return v.status?.isLeader === false;
      },
      10_000,
    );
    assert.equal(validLeaders(cands).length, 1);
    resource.close();
  });
});
