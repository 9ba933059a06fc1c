/**
 * One sidecar per status directory, on real processes: a second sidecar (or run) given a
 * directory a running sidecar writes is refused with one line, exit 2, having written nothing;
 * a sidecar killed with SIGKILL leaves nothing that blocks the next; of two started at once on
 * one directory, exactly one runs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { readStatus } from '../support/health-apps.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];

describe('a status directory another running sidecar writes', { skip: process.platform !== 'linux' && 'the claim is Linux’s' }, () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const sidecarArgs = (statusDir: string, identity: string, db = join(dir.path, 'leases.db')) => [
    'sidecar',
    '--db',
    db,
    '--lease',
    'owner',
    '--identity',
    identity,
    '--status-dir',
    statusDir,
    '--listen',
    'off',
    ...T,
  ];
  const running = async (statusDir: string, identity: string) => {
    const p = startCli(sidecarArgs(statusDir, identity));
    procs.push(p);
    await waitFor(`${identity} writing ${statusDir}`, () => readStatus(statusDir)?.identity === identity, 20_000);
    return p;
  };
  const refusal = (statusDir: string) =>
    `leasehold: --status-dir: the status directory ${statusDir} is written by another running sidecar: give each sidecar a status directory of its own\n`;

  it('is refused to a second sidecar and to a run: one line, exit 2, nothing written', { timeout: 60_000 }, async () => {
    const statusDir = join(dir.path, 'shared');
    await running(statusDir, 'first');
    // The first sidecar goes on writing its own files (the leader's token and holder once it
    // leads, each renewal through a temporary file): compare once it leads, without its
    // temporary files, so that only what the refused processes could have written differs.
    await waitFor('first leading', () => readStatus(statusDir)?.isLeader === true && existsSync(join(statusDir, 'holder')), 20_000);
    const listing = () =>
      readdirSync(statusDir)
        .filter((f) => !/^\..*\.tmp$/.test(f))
        .sort();
    const files = listing();
    const otherDb = join(dir.path, 'other.db');
    const second = await runCli(sidecarArgs(statusDir, 'second', otherDb));
    assert.equal(second.code, 2, second.stderr);
    assert.equal(second.stderr, refusal(statusDir));
    const run = await runCli(['run', '--once', '--db', otherDb, '--lease', 'owner', '--status-dir', statusDir, ...T, '--', 'true']);
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stderr, refusal(statusDir));
    assert.equal(existsSync(otherDb), false, 'no store was opened');
    assert.deepEqual(listing(), files, 'nothing was written into the directory');
    assert.equal(readStatus(statusDir)?.identity, 'first');
  });

  it('a sidecar killed with SIGKILL does not block the next one on its directory', { timeout: 60_000 }, async () => {
    const statusDir = join(dir.path, 'after-kill');
    const killed = await running(statusDir, 'killed');
    killed.kill('SIGKILL');
    await killed.exited;
    await running(statusDir, 'next');
  });

  it('of two sidecars started at once on one directory, exactly one runs', { timeout: 120_000 }, async () => {
    for (let round = 0; round < 5; round++) {
      const statusDir = join(dir.path, `race-${round}`, 'status');
      const pair = ['x', 'y'].map((id) => {
        const p = startCli(sidecarArgs(statusDir, `${id}${round}`));
        procs.push(p);
        return { id: `${id}${round}`, p };
      });
      const loser = await waitFor('one of them to exit', () => pair.find((c) => c.p.child.exitCode !== null), 20_000);
      const winner = pair.find((c) => c !== loser)!;
      assert.equal(loser.p.child.exitCode, 2, loser.p.stderr());
      assert.equal(loser.p.stderr(), refusal(statusDir));
      await waitFor(`${winner.id} writing the directory`, () => readStatus(statusDir)?.identity === winner.id, 20_000);
      assert.equal(winner.p.child.exitCode, null, 'the winner runs on');
      winner.p.kill('SIGTERM');
      await winner.p.exited;
    }
  });
});
