import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-file.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-atomic-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomic in a directory others can write', () => {
  it('never writes through a link planted at a temp name (the old names were .<name>.<pid>.<n>.tmp)', () => {
    const status = join(dir, 'status');
    const victim = join(dir, 'victim');
    rmSync(status, { recursive: true, force: true });
    writeFileSync(victim, 'precious\n');
    // Plant links at every name the old scheme would have used for this process.
    mkdirSync(status);
    for (let n = 0; n < 64; n++) symlinkSync(victim, join(status, `.status.json.${process.pid}.${n}.tmp`));
    for (let i = 0; i < 10; i++) writeFileAtomic(status, 'status.json', `{"isLeader":true,"n":${i}}\n`);
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'the link target is untouched');
    assert.equal(readFileSync(join(status, 'status.json'), 'utf8'), '{"isLeader":true,"n":9}\n');
  });

  it('replaces a link planted at the target name instead of following it', () => {
    const victim = join(dir, 'victim2');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, join(dir, 'is-leader'));
    writeFileAtomic(dir, 'is-leader', 'true\n');
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
    assert.equal(lstatSync(join(dir, 'is-leader')).isSymbolicLink(), false);
    assert.equal(readFileSync(join(dir, 'is-leader'), 'utf8'), 'true\n');
  });

  it('gives files mode 0644 whatever the umask, and leaves no temp file behind', () => {
    const old = process.umask(0o077);
    try {
      writeFileAtomic(dir, 'holder', 'x\n');
    } finally {
      process.umask(old);
    }
    assert.equal(statSync(join(dir, 'holder')).mode & 0o777, 0o644);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('.holder.')),
      [],
    );
  });
});
