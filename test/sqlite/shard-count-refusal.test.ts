/**
 * `leasehold sidecar --shards` through main() in this process, on a real SQLite file: a member
 * whose group comes to say another shard count (a start race with another --shards, or the group
 * recreated) ends the command with that refusal, exit 2, instead of running on as a member of
 * nothing with probes that fail.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { main } from '../../cmd/main.js';
import type { CliIo } from '../../cmd/cli-io.js';

/** Polls `cond` on the real clock (a process-level test: the member runs on real time). */
async function until(what: string, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it('a member whose group comes to say another shard count exits 2 with that refusal, and its last shards.json says it stopped', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-sidecar-shards-'));
  const signals = new EventEmitter();
  const stderr: string[] = [];
  const io: CliIo = {
    stdout: () => {},
    stderr: (text) => stderr.push(text),
    signals,
    exit: (code) => assert.fail(`main asked for an exit at once (${code})`),
  };
  const db = join(dir, 'leases.db');
  const statusDir = join(dir, 'status');
  const timings = ['--lease-duration', '1500ms', '--renew-deadline', '1s', '--retry-period', '200ms'];
  const argv = ['sidecar', '--db', db, '--lease', 'g', '--shards', '4', '--status-dir', statusDir, '--listen', '127.0.0.1:0', ...timings];
  const running = main(argv, {}, io);
  let settled: number | undefined;
  void running.then((code) => (settled = code));
  try {
    const owned = () => {
      try {
        return (JSON.parse(readFileSync(join(statusDir, 'shards.json'), 'utf8')) as { owned: unknown[] }).owned.length;
      } catch {
        return -1;
      }
    };
    await until('the member to own its 4 shards', () => owned() === 4 || settled !== undefined);
    assert.equal(settled, undefined, `main returned early: ${stderr.join('')}`);
    const file = new Database(db);
    try {
      file.prepare(`UPDATE lease_groups SET shards = 5 WHERE group_name = 'g' AND kind = 'group'`).run();
    } finally {
      file.close();
    }
    await until('main to return', () => settled !== undefined);
    assert.equal(settled, 2, stderr.join(''));
    const refusal = stderr.at(-1)!;
    assert.match(refusal, /5 shards/, 'the refusal names the count the group says');
    assert.equal(refusal.trim().split('\n').length, 1, 'one line');
    const last = JSON.parse(readFileSync(join(statusDir, 'shards.json'), 'utf8')) as { owned: unknown[]; stoppedAt: string | null };
    assert.deepEqual(last.owned, []);
    assert.ok(last.stoppedAt !== null, 'the last shards.json says it stopped');
  } finally {
    if (settled === undefined) {
      signals.emit('SIGTERM');
      await running;
    }
    rmSync(dir, { recursive: true, force: true });
  }
});
