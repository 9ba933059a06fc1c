import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, start, waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

const PY = join(REPO, 'test/support/tutorial_candidate.py');

async function python(db: string, id: string, durationS: number, lease = 'shared') {
  const p = start('python3', [PY, db, lease, id, String(durationS)]);
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

  it(
    'a successor claim in the row: Python candidates, which know nothing of the column, create, take over and renew as before',
    { timeout: 30_000 },
    async () => {
      const file = join(dir.path, 'claims.db');
      const store = new SqliteLeaseStore(file);
      try {
        // A row Python creates has no claim.
        assert.deepEqual(await python(file, 'py', 2, 'c'), { acquired: true, token: 1, reason: 'acquired empty lease' });
        const made = (await store.get('c'))!;
        assert.equal(Object.hasOwn(made.record, 'successor'), false);
        // leasehold releases it naming a successor; Python takes the free lease over it.
        const claim = { identity: 'lh-b', claimedAt: new Date() };
        await store.update('c', { ...made.record, holderIdentity: '', successor: claim }, made.version);
        assert.deepEqual(await python(file, 'py2', 2, 'c'), { acquired: true, token: 2, reason: 'took over' });
        assert.equal((await python(file, 'py2', 2, 'c')).reason, 'renewed');
        const now = (await store.get('c'))!;
        assert.equal(now.record.holderIdentity, 'py2');
        assert.equal(now.record.leaseTransitions, 2);
        assert.deepEqual(now.record.successor, claim, 'the claim is left as it was: it gives nobody the lease');
        // And leasehold's compare-and-swap on the row Python wrote still holds.
        await store.update('c', { ...now.record, successor: null }, now.version);
        assert.equal(Object.hasOwn((await store.get('c'))!.record, 'successor'), false);
      } finally {
        await store.close();
      }
    },
  );
});
