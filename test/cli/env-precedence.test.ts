import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runCli, tempDir } from '../support/cli.js';

/**
 * A flag on the command line wins over its LEASEHOLD_<FLAG> variable, in every spelling the
 * CLI takes for it (kebab-case, camelCase, with `=` or a separate word, negated): seen in what
 * a real `leasehold run --once` wrote to the SQLite store, read back by `leasehold status`.
 */
const dir = tempDir();
after(dir.cleanup);
const db = join(dir.path, 'leases.db');
const T = ['--renew-deadline', '800ms', '--retry-period', '200ms'];

interface Report {
  state: string;
  holder?: string;
  leaseDurationSeconds?: number;
}

/** Runs `leasehold run --once -- true` for `lease` with `flags` and `env`; returns what `status` reads. */
async function runThenStatus(lease: string, flags: string[], env: Record<string, string>): Promise<Report> {
  const r = await runCli(
    ['run', '--once', '--db', db, '--lease', lease, '--identity', `${lease}-1`, '--listen', 'off', ...T, ...flags, '--', 'true'],
    env,
    dir.path,
  );
  assert.equal(r.code, 0, `run: ${r.stderr}`);
  const s = await runCli(['status', '--json', '--db', db, '--lease', lease], {}, dir.path);
  assert.equal(s.code, 0, `status: ${s.stderr}`);
  return JSON.parse(s.stdout) as Report;
}

describe('the command line wins over LEASEHOLD_<FLAG>, in every spelling', () => {
  const durations: [string, string[]][] = [
    ['--lease-duration 2s', ['--lease-duration', '2s']],
    ['--lease-duration=2s', ['--lease-duration=2s']],
    ['--leaseDuration 2s', ['--leaseDuration', '2s']],
    ['--leaseDuration=2s', ['--leaseDuration=2s']],
  ];
  for (const [i, [name, flags]] of durations.entries()) {
    it(`${name} over LEASEHOLD_LEASE_DURATION=30s`, { timeout: 60_000 }, async () => {
      // Kept, not released: a release writes a lease duration of 1 s.
      const report = await runThenStatus(`duration-${i}`, ['--no-release-on-exit', ...flags], { LEASEHOLD_LEASE_DURATION: '30s' });
      assert.equal(report.leaseDurationSeconds, 2);
    });
  }

  const keeps: [string, string[]][] = [
    ['--no-release-on-exit', ['--no-release-on-exit']],
    ['--release-on-exit=false', ['--release-on-exit=false']],
    ['--no-releaseOnExit', ['--no-releaseOnExit']],
    ['--releaseOnExit=false', ['--releaseOnExit=false']],
  ];
  for (const [i, [name, flags]] of keeps.entries()) {
    it(`${name} over LEASEHOLD_RELEASE_ON_EXIT=true: the lease is kept`, { timeout: 60_000 }, async () => {
      const report = await runThenStatus(`keep-${i}`, ['--lease-duration', '2s', ...flags], { LEASEHOLD_RELEASE_ON_EXIT: 'true' });
      // Not released (a release empties the holder); held, or expired already on a slow machine.
      assert.notEqual(report.state, 'released');
      assert.equal(report.holder, `keep-${i}-1`);
    });
  }
});
