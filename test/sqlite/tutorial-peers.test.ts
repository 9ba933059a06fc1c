import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, start, waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';

const PY = join(REPO, 'test/support/tutorial_candidate.py');

async function python(db: string, id: string, durationS: number) {
  const p = start('python3', [PY, db, 'shared', id, String(durationS)]);
  const r = await p.exited;
  assert.equal(r.code, 0, p.stderr());
  return JSON.parse(p.stdout()) as { acquired: boolean; token: number | null; reason: string };
}

describe("the tutorial's Python candidates share one SQLite file with leasehold", () => {
  const dir = scratchDir(() => cands);
  const db = join(dir.path, 'leases.db');
  const cands: Candidate[] = [];

  it('respect each other, and the token keeps growing across both', { timeout: 60_000 }, async () => {
    // leasehold creates the file (its table is the tutorial's plus a defaulted column).
    const lh = startSidecar(dir.path, 'lh', ['--db', db, '--lease', 'shared'], { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' });
    cands.push(lh);
    const first = await waitFor('leasehold to lead', () => validLeaders(cands)[0], 20_000);
    assert.equal(first.token, 1);

    // A Python candidate cannot take a lease leasehold keeps renewing.
    const refused = await python(db, 'py', 2);
    assert.equal(refused.acquired, false, refused.reason);

    // leasehold releases on SIGTERM; Python takes it with the next token.
    lh.proc.kill('SIGTERM');
    await lh.proc.exited;
    const py = await python(db, 'py', 3);
    assert.deepEqual([py.acquired, py.token], [true, 2]);

    // A new leasehold candidate respects the Python holder while it renews...
    const lh2 = startSidecar(dir.path, 'lh2', ['--db', db, '--lease', 'shared'], { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' });
    cands.push(lh2);
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 700));
      assert.equal((await python(db, 'py', 3)).acquired, true, 'python renews');
      assert.equal(validLeaders(cands).length, 0, 'leasehold must not lead while python renews');
    }
    // ...and takes over once Python stops renewing for the lease duration, with token 3.
    const taken = await waitFor('leasehold to take over', () => validLeaders(cands)[0], 10_000);
    assert.equal(taken.token, 3);
    assert.equal((await python(db, 'py', 3)).acquired, false, 'python sees leasehold holding it');
  });
});
