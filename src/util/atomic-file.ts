import { closeSync, constants, fchmodSync, fchownSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/** Create only; fail if the name exists (as a file or a link, even a dangling one); never follow a link. */
const CREATE_EXCLUSIVE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Replaces `dir/name` atomically: a reader sees the old content or the new, never a torn file.
 *
 * The temp file is in the same directory (rename is atomic only within one filesystem), has
 * an unguessable name, and is created exclusively: anyone who can write the directory (the
 * app container shares it) cannot make this process, often root, write through a link they
 * planted. rename() then replaces `name` itself, even if `name` is a link, never its target.
 * Mode 0644 whatever the umask, so an app running as another user can read it; a secret gets a
 * narrower `mode`, which the file has from its creation, before a byte is written. `gid`, when
 * given, is the file's group instead of the one it was created with (a setgid directory's).
 * `durable` false: the content is not synced to the disk before the rename, for a file that
 * speaks only of now, which every reader after a power loss must find out of date anyway
 * (shards.json: its validUntil has passed; empty or torn, it reads as nothing owned).
 */
export function writeFileAtomic(dir: string, name: string, content: string, mode = 0o644, gid?: number, durable = true): void {
  const tmp = join(dir, `.${name}.${randomBytes(12).toString('hex')}.tmp`);
  const fd = openSync(tmp, CREATE_EXCLUSIVE, mode);
  try {
    // Before the mode: a chown may clear mode bits, never set them.
    if (gid !== undefined) fchownSync(fd, process.geteuid!(), gid);
    fchmodSync(fd, mode);
    writeWhole(fd, Buffer.from(content));
    if (durable) fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(tmp, join(dir, name));
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Writes all of `data`, or throws. write() may take fewer bytes than it was given and report
 * no error (a file-size limit takes the bytes up to it): the rest is written again, where
 * the limit then fails with EFBIG, so a file cut short is never renamed into place.
 */
function writeWhole(fd: number, data: Buffer): void {
  for (let done = 0; done < data.length;) {
    const n = writeSync(fd, data, done, data.length - done);
    if (n <= 0) throw new Error(`write took ${done} of ${data.length} bytes and then none`);
    done += n;
  }
}

/** Makes renames in `dir` durable (they live in the directory's own data). */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
