/**
 * The status-file contract under readers that poll in a tight loop, across many handoffs
 * between real sidecar processes: is-leader "true" is never visible with an empty or old
 * fencing-token, and the shell recipe in docs/status-files.md only ever yields a real token.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, start, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const HANDOFFS = 12;

/** The plain-file recipe of docs/status-files.md, in a loop: prints each token it would lead with. */
const SHELL_READER = `
while [ ! -e "$STOP" ]; do
  for d in "$@"; do
    t1=$(cat "$d/fencing-token"); l=$(cat "$d/is-leader"); t2=$(cat "$d/fencing-token")
    if [ "$l" = true ] && [ -n "$t1" ] && [ "$t1" = "$t2" ]; then echo "$d $t1"; fi
  done
done
`;

describe('status files under a reader polling in a tight loop', () => {
  const procs: Proc[] = [];
  let cands: Candidate[] = [];
  const dir = scratchDir(() => [...procs, ...cands]);

  it(`is-leader "true" always comes with its term's token, over ${HANDOFFS} handoffs`, { timeout: 180_000 }, async () => {
    const backend = ['--db', join(dir.path, 'leases.db'), '--lease', 'order'];
    cands = ['a', 'b'].map((id) => startSidecar(dir.path, id, backend, T));
    const statusDirs = cands.map((c) => c.statusDir);
    const poller = start(process.execPath, ['--import', 'tsx', join(REPO, 'test/support/status-poller.ts'), ...statusDirs]);
    const stop = join(dir.path, 'stop');
    const shell = start('sh', ['-c', SHELL_READER, 'reader', ...statusDirs], { STOP: stop });
    procs.push(poller, shell);

    let leader = await waitFor('first leader', () => validLeaders(cands)[0], 20_000);
    for (let i = 0; i < HANDOFFS; i++) {
      const prev = leader;
      prev.c.proc.kill('SIGTERM'); // "not leader", release: the other takes over at once
      await prev.c.proc.exited;
      leader = await waitFor(`leader after handoff ${i}`, () => validLeaders(cands).find((l) => l.c !== prev.c), 15_000);
      assert.ok(leader.token > prev.token);
      cands = cands.map((c) => (c === prev.c ? startSidecar(dir.path, c.id, backend, T) : c));
    }

    poller.child.stdin!.end();
    const { code } = await poller.exited;
    assert.equal(code, 0, poller.stderr());
    const report = JSON.parse(poller.stdout()) as { reads: number; leaderReads: number; violations: string[] };
    assert.deepEqual(report.violations, [], `${report.violations.length} inconsistent reads of ${report.reads}`);
    assert.ok(report.leaderReads > 100, `the poller saw a leader only ${report.leaderReads} times`);

    const { writeFileSync } = await import('node:fs');
    writeFileSync(stop, '');
    await shell.exited;
    const yielded = shell.stdout().trim().split('\n').filter(Boolean);
    assert.ok(yielded.length > 0, 'the shell recipe never saw a leader');
    for (const line of yielded) assert.match(line, / \d+$/, `the shell recipe yielded ${JSON.stringify(line)}`);
    console.log(`${report.reads} polls, ${report.leaderReads} while leading; the shell recipe led ${yielded.length} times`);
  });
});
