import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, NODE_FLAGS, runCli, start, tempDir } from '../support/cli.js';

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

/**
 * Bytes Node cannot decode: a shell builds them (Node would encode a string as UTF-8) and starts
 * leasehold with them; CMD, a shell too, writes back what it got, NUL-separated.
 */
describe('leasehold run hands CMD bytes that are not UTF-8 as they are', () => {
  const every = Buffer.from(Array.from({ length: 255 }, (_, i) => i + 1));
  const words = [Buffer.from([0xff, 0xfe]), Buffer.from('café \x80\n\n', 'latin1'), every, Buffer.from('plain')];
  const weird = Buffer.from([0xff, 0x78, 0xfe, 0x0a]);

  it('in its arguments and in the values of its environment', { timeout: 60_000 }, async () => {
    const out = join(dir.path, 'bytes.out');
    const env = join(dir.path, 'bytes.env');
    const launcher = [
      // Each word from a printf format; the "." keeps trailing newlines a substitution would drop.
      ...words.map((w, i) => `w${i}=$(printf '${octal(w)}.'); w${i}=\${w${i}%.}`),
      `WEIRD=$(printf '${octal(weird)}.'); export WEIRD="\${WEIRD%.}"`,
      `exec "$@" ${words.map((_, i) => `"$w${i}"`).join(' ')}`,
    ].join('\n');
    const writer = `for a; do printf '%s\\0' "$a"; done > '${out}'; printf '%s' "$WEIRD" > '${env}'`;
    const p = start('/bin/sh', [
      '-c',
      launcher,
      'launcher',
      process.execPath,
      ...NODE_FLAGS,
      CLI,
      'run',
      '--once',
      '--db',
      join(dir.path, 'leases.db'),
      '--lease',
      'bytes',
      '--identity',
      'bytes-1',
      '--listen',
      'off',
      ...T,
      '--',
      '/bin/sh',
      '-c',
      writer,
      'sh',
    ]);
    const timer = setTimeout(() => p.kill('SIGKILL'), 50_000);
    const r = await p.exited;
    clearTimeout(timer);
    assert.equal(r.code, 0, p.stderr());
    const got = readFileSync(out);
    assert.deepEqual(split(got), words, 'the words, byte for byte');
    assert.deepEqual(readFileSync(env), weird, 'the variable, byte for byte');
  });
});

/** A printf format for these bytes: each as a three-digit octal escape. */
function octal(bytes: Buffer): string {
  return [...bytes].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
}

/** NUL-terminated words. */
function split(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length;) {
    const end = bytes.indexOf(0, at);
    out.push(bytes.subarray(at, end));
    at = end + 1;
  }
  return out;
}
