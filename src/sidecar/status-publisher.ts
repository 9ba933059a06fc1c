import { accessSync, constants, mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { StatusDirError, describeError } from '../errors.js';
import { fsyncDir, writeFileAtomic } from '../util/atomic-file.js';
import type { ElectorSnapshot } from '../election/elector.js';
import type { LeaderStatus } from '../status/leader-status.js';

export function toLeaderStatus(s: ElectorSnapshot, now: Date): LeaderStatus {
  return {
    lease: s.lease,
    identity: s.identity,
    holder: s.holder,
    isLeader: s.isLeader,
    fencingToken: s.fencingToken,
    acquiredAt: s.acquiredAt?.toISOString() ?? null,
    renewedAt: s.renewedAt?.toISOString() ?? null,
    validUntil: s.validUntil?.toISOString() ?? null,
    updatedAt: now.toISOString(),
  };
}

/**
 * Checks, without writing anything, that `dir` exists as a writable directory or could be
 * created. Throws StatusDirError naming the path and the reason.
 */
export function checkStatusDir(dir: string): void {
  let probe = resolve(dir);
  for (;;) {
    try {
      const st = statSync(probe);
      if (!st.isDirectory()) {
        throw new StatusDirError(
          probe === resolve(dir) ? `--status-dir ${dir} is not a directory` : `--status-dir ${dir} cannot be created: ${probe} is not a directory`,
        );
      }
      accessSync(probe, constants.W_OK | constants.X_OK);
      return;
    } catch (err) {
      if (err instanceof StatusDirError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === 'ENOENT' || code === 'ENOTDIR') && dirname(probe) !== probe) {
        probe = dirname(probe);
        continue;
      }
      throw new StatusDirError(`--status-dir ${dir} is not writable: ${describeError(err)}`, { cause: err });
    }
  }
}

/**
 * Writes the shared-volume files: status.json, is-leader, fencing-token, holder. Each is
 * replaced atomically; is-leader and status.json go first, so a step-down reaches the app
 * before anything else changes.
 */
export class StatusPublisher {
  readonly dir: string;
  private last = '';

  constructor(dir: string) {
    this.dir = dir;
  }

  /** Creates the directory and proves it writable by writing and removing a probe file. */
  prepare(): void {
    try {
      mkdirSync(this.dir, { recursive: true });
      writeFileAtomic(this.dir, '.probe', '');
      rmSync(join(this.dir, '.probe'));
    } catch (err) {
      throw new StatusDirError(`--status-dir ${this.dir} is not writable: ${describeError(err)}`, { cause: err });
    }
  }

  /** Writes the files if anything but updatedAt changed. Returns whether it wrote. */
  publish(status: LeaderStatus): boolean {
    const key = JSON.stringify({ ...status, updatedAt: '' });
    if (key === this.last) return false;
    writeFileAtomic(this.dir, 'is-leader', status.isLeader ? 'true\n' : 'false\n');
    writeFileAtomic(this.dir, 'status.json', JSON.stringify(status, null, 2) + '\n');
    writeFileAtomic(this.dir, 'fencing-token', status.fencingToken === null ? '' : `${status.fencingToken}\n`);
    writeFileAtomic(this.dir, 'holder', status.holder ? `${escapeControl(status.holder)}\n` : '');
    fsyncDir(this.dir);
    this.last = key;
    return true;
  }
}

/**
 * Another candidate's identity comes from the store and may hold control characters (only
 * leasehold refuses them in its own): escaped, it stays one line in the plain-text file.
 */
function escapeControl(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
