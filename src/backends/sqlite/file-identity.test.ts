import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mountPointAt, unsafeReplacement } from './file-identity.js';

describe('what a replaced database path may be reopened as', () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'leasehold identity ')));
  const db = join(dir, 'l.db');
  const line = (point: string) => `36 25 0:32 /x ${point.replace(/ /g, '\\040')} rw,relatime shared:1 - ext4 /dev/sda1 rw`;
  const opened = { main: '1:10', wal: '1:11', shm: '1:12' };
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the database, its -wal or its -shm among the mount points, spaces escaped as the kernel writes them', () => {
    assert.equal(mountPointAt(db, [line('/'), line(db)].join('\n')), db);
    assert.equal(mountPointAt(db, line(`${db}-shm`)), `${db}-shm`);
    assert.equal(mountPointAt(db, [line('/'), line(dir)].join('\n')), null);
  });

  it('refuses a new file beside the opened -wal or -shm, and a deleted file whose log stayed', () => {
    const none = '';
    assert.match(unsafeReplacement(db, opened, { main: '1:20', wal: '1:11', shm: '1:12' }, none)!, /beside the -wal/);
    assert.match(unsafeReplacement(db, opened, { main: '1:20', wal: '-', shm: '1:12' }, none)!, /beside the -shm/);
    assert.match(unsafeReplacement(db, opened, { main: '-', wal: '1:11', shm: '-' }, none)!, /deleted but its -wal was left/);
    assert.match(unsafeReplacement(db, opened, { main: '1:20', wal: '1:21', shm: '1:22' }, line(db))!, /is a mount point/);
  });

  it('reopens a clean start: deleted with its -wal and -shm, or replaced together with them', () => {
    assert.equal(unsafeReplacement(db, opened, { main: '-', wal: '-', shm: '-' }, ''), null);
    assert.equal(unsafeReplacement(db, opened, { main: '1:20', wal: '1:21', shm: '1:22' }, ''), null);
  });
});
