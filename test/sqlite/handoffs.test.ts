import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { waitFor } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const HANDOFFS = 12;

describe('fencing tokens over many handoffs among three sidecar processes', () => {
  const dir = scratchDir(() => cands);
  const db = join(dir.path, 'leases.db');
  const backend = ['--db', db, '--lease', 'handoffs'];
  let cands: Candidate[] = [];

  it(`strictly increase over ${HANDOFFS} handoffs (SIGTERM and SIGKILL), and survive every process restarting`, { timeout: 180_000 }, async () => {
    cands = ['a', 'b', 'c'].map((id) => startSidecar(dir.path, id, backend, T));
    const tokens: number[] = [];
    let leader = await waitFor('first leader', () => validLeaders(cands)[0], 20_000);
    tokens.push(leader.token);
    for (let i = 0; i < HANDOFFS; i++) {
      // Every third handoff is a crash (takeover after expiry), the rest graceful releases.
      const signal = i % 3 === 0 ? 'SIGKILL' : 'SIGTERM';
      const prev = leader;
      prev.c.proc.kill(signal);
      await prev.c.proc.exited;
      leader = await waitFor(`leader after ${signal} #${i}`, () => validLeaders(cands).find((l) => l.c !== prev.c), 15_000);
      assert.ok(leader.token > prev.token, `after ${signal}: token ${leader.token} must exceed ${prev.token}`);
      tokens.push(leader.token);
      // Restart the stopped candidate under its identity, so three always compete.
      cands = cands.map((c) => (c === prev.c ? startSidecar(dir.path, c.id, backend, T) : c));
    }
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `tokens ${tokens.join(',')}`);

    // Stop everyone, the standbys first (a standby still running when the leader releases
    // would rightly take one more term), then the leader, which releases; then restart from
    // nothing: the token continues.
    const standbys = cands.filter((c) => c !== leader.c);
    for (const c of standbys) c.proc.kill('SIGTERM');
    await Promise.all(standbys.map((c) => c.proc.exited));
    leader.c.proc.kill('SIGTERM');
    await leader.c.proc.exited;
    const store = new SqliteLeaseStore(db);
    const released = (await store.get('handoffs'))!.record;
    await store.close();
    assert.equal(released.holderIdentity, '');
    assert.equal(released.leaseTransitions, tokens.at(-1), 'release keeps the token');
    cands = ['d', 'e'].map((id) => startSidecar(dir.path, id, backend, T));
    const fresh = await waitFor('leader after full restart', () => validLeaders(cands)[0], 20_000);
    assert.equal(fresh.token, tokens.at(-1)! + 1, 'never reused after a release and a restart of every process');
    console.log(`tokens: ${tokens.join(' → ')} → ${fresh.token}`);
  });
});
