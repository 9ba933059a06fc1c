/**
 * `leasehold status --status-dir DIR` reads a file a neighbour may have put there: whatever it
 * is, status answers with one error line for the candidate instead of hanging.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, runOnce, tempDir } from '../support/cli.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1s', '--retry-period', '500ms'];

it('a FIFO planted as status.json is an error line, not a status that never returns', async (t) => {
  const dir = tempDir('leasehold-status-dir-');
  t.after(() => dir.cleanup());
  const db = join(dir.path, 'leases.db');
  assert.equal((await runOnce(db, 'planted', 'a', T, ['true'])).code, 0);
  const statusDir = join(dir.path, 'status');
  mkdirSync(statusDir);
  // No writer ever opens it: a blocking open for reading would wait forever.
  execFileSync('mkfifo', [join(statusDir, 'status.json')]);
  const r = await runCli(['status', '--db', db, '--lease', 'planted', '--status-dir', statusDir], {}, undefined, 10_000);
  assert.equal(r.code, 0, `status must answer (signal ${String(r.signal)}): ${r.stderr}`);
  assert.match(r.stdout, /^sidecar {2}cannot read \S+status\.json: not a regular file/m);
});
