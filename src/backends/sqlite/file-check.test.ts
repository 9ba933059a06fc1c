import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkLocalFilesystem, checkSqliteFile } from './file-check.js';

describe('a database file on a network filesystem', () => {
  const fake = (type: number) => () => ({ type });
  for (const [name, type] of [
    ['nfs', 0x6969],
    ['cifs', 0xff534d42],
    ['smb2', 0xfe534d42],
    ['fuse', 0x65735546],
    ['9p', 0x01021997],
  ] as const) {
    it(`refuses ${name}, naming it and the way out`, () => {
      assert.throws(
        () => checkLocalFilesystem('/shared/leases.db', false, fake(type)),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'LEASEHOLD_ERR_STORE_OPEN');
          assert.match(err.message, new RegExp(`is on a network filesystem \\(${name}\\).*Local mode is one machine.*allowNetworkFilesystem: true`));
          return true;
        },
      );
    });
  }

  it('accepts it when told every candidate runs on this machine', () => {
    checkLocalFilesystem('/shared/leases.db', true, fake(0x6969));
  });

  it('accepts local filesystems (ext4, tmpfs, overlay, xfs, btrfs)', () => {
    for (const type of [0xef53, 0x01021994, 0x794c7630, 0x58465342, 0x9123683e]) checkLocalFilesystem('/x/leases.db', false, fake(type));
  });

  it('looks at the nearest existing directory when the file does not exist yet', () => {
    checkLocalFilesystem(join(tmpdir(), 'no', 'such', 'dir', 'leases.db'), false);
  });
});

// A library caller never typed a flag: the message names the setting in words, and `field`
// lets the CLI put its --db in front.
it('tells a library caller about the database file in words, with no CLI flag in the message', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-dbcheck-'));
  try {
    writeFileSync(join(dir, 'notes.txt'), 'not a database, long enough to have a header\n');
    const refusals: [() => void, RegExp][] = [
      [() => checkSqliteFile(dir), /^the database file .* is not a regular file$/],
      [() => checkSqliteFile(join(dir, 'notes.txt')), /^the database file .*notes\.txt is not an SQLite database/],
      [() => checkLocalFilesystem(join(dir, 'l.db'), false, () => ({ type: 0x6969 })), /^the database file .* is on a network filesystem \(nfs\)/],
    ];
    for (const [refuse, pattern] of refusals) {
      assert.throws(refuse, (err: Error & { code?: string; field?: string }) => {
        assert.equal(err.code, 'LEASEHOLD_ERR_STORE_OPEN');
        assert.match(err.message, pattern);
        assert.doesNotMatch(err.message, /--[a-z]/);
        assert.equal(err.field, 'db');
        return true;
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
