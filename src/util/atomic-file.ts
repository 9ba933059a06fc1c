import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

let counter = 0;

/**
 * Replaces `dir/name` atomically: a reader sees the old content or the new, never a torn file.
 * Writes a temp file in the same directory (rename is atomic only within one filesystem),
 * fsyncs it, then renames it over the target. Mode 0644 so an app container running as
 * another user can read it.
 */
export function writeFileAtomic(dir: string, name: string, content: string): void {
  const tmp = join(dir, `.${name}.${process.pid}.${counter++}.tmp`);
  const fd = openSync(tmp, 'w', 0o644);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
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

/** Makes renames in `dir` durable (they live in the directory's own data). */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
