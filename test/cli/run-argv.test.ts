import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, tempDir } from '../support/cli.js';

/**
 * CMD's arguments reach CMD as typed, whatever leasehold's own flags look like: words a parser may
 * read as numbers (`1.10`, `0x10`, `1e3`, `-0`), empty and spaced words, words that look like
 * flags, a second `--`, and text a shell would expand.
 */
const ARGS = ['1.10', '0x10', '1e3', '-0', '', ' a ', '--x=1', '--lease', 'not-ours', '--', '$HOME', 'é', 'a\nb'];

/** Short timings: a lease that does not exist yet is created after one lease duration. */
const T = ['--lease-duration', '1s', '--renew-deadline', '800ms', '--retry-period', '200ms'];

const dir = tempDir();
after(dir.cleanup);
const script = join(dir.path, 'write-argv.cjs');
writeFileSync(script, "require('node:fs').writeFileSync(process.env.ARGV_OUT, JSON.stringify(process.argv.slice(2)));\n");

/** `leasehold run --once` of a node script that writes its argv as JSON, with `flags` before `--`. */
async function argvSeenByCommand(name: string, flags: string[]): Promise<string[]> {
  const out = join(dir.path, `${name}.json`);
  const r = await runCli(
    [
      'run',
      '--once',
      '--db',
      join(dir.path, 'leases.db'),
      '--lease',
      name,
      '--identity',
      `${name}-1`,
      '--listen',
      'off',
      ...T,
      ...flags,
      '--',
      process.execPath,
      script,
      ...ARGS,
    ],
    { ARGV_OUT: out },
    dir.path,
  );
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(readFileSync(out, 'utf8')) as string[];
}

describe('leasehold run hands CMD its arguments byte for byte', () => {
  it('with a boolean given as a word of its own (--release-on-exit false)', { timeout: 60_000 }, async () => {
    assert.deepEqual(await argvSeenByCommand('parsed', ['--release-on-exit', 'false']), ARGS);
  });

  it('with a boolean given with = (--release-on-exit=false)', { timeout: 60_000 }, async () => {
    assert.deepEqual(await argvSeenByCommand('plain', ['--release-on-exit=false']), ARGS);
  });
});
