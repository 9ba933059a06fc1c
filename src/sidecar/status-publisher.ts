import { accessSync, closeSync, constants, lstatSync, openSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { StatusDirError, describeError } from '../errors.js';
import { fsyncDir, writeFileAtomic } from '../util/atomic-file.js';
import { escapeControl } from '../util/escape-control.js';
import { kernelFilesystem, makeDirs } from '../util/make-dirs.js';
import { checkStatusDirFree } from './status-dir-claim.js';
import type { LeaderStatus } from '../status/leader-status.js';

/**
 * Proves an existing directory writable by creating and removing an empty file: access() lets
 * root "write" where no file can be made (/proc/self/fd). The name is unguessable and the file
 * is created exclusively without following links, so nothing is written through a planted link.
 */
function probeWritable(dir: string, display: string): void {
  const probe = join(dir, `.probe.${randomBytes(12).toString('hex')}.tmp`);
  try {
    closeSync(openSync(probe, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600));
    rmSync(probe);
  } catch (err) {
    // Its own error: an ENOENT here (in /proc) must not read as "the directory is missing".
    throw new StatusDirError(`the status directory ${display} is not writable: ${describeError(err)}`, { cause: err });
  }
}

/**
 * A name that stat() finds missing but that exists as a link points nowhere: mkdir cannot make
 * a directory there (EEXIST), so the status directory could never be created. Said as itself.
 */
function refuseDanglingLink(dir: string, probe: string): void {
  let target: string;
  try {
    if (!lstatSync(probe).isSymbolicLink()) return;
    target = readlinkSync(probe);
  } catch {
    return;
  }
  const what = probe === resolve(dir) ? `is a symbolic link to ${target}` : `cannot be created: ${probe} is a symbolic link to ${target}`;
  throw new StatusDirError(`the status directory ${dir} ${what}, which does not exist: create that directory, or name an existing one`);
}

/**
 * Checks, before the store is opened or anything is created, that `dir` exists as a writable
 * directory (an empty probe file, removed at once) that no other running sidecar writes
 * (status-dir-claim.ts), or could be created. Throws StatusDirError naming the path and the
 * reason (StatusDirInUseError for another sidecar's).
 */
export function checkStatusDir(dir: string): void {
  let probe = resolve(dir);
  for (;;) {
    try {
      const st = statSync(probe);
      if (!st.isDirectory()) {
        throw new StatusDirError(
          probe === resolve(dir)
            ? `the status directory ${dir} is not a directory`
            : `the status directory ${dir} cannot be created: ${probe} is not a directory`,
        );
      }
      accessSync(probe, constants.W_OK | constants.X_OK);
      if (probe === resolve(dir)) {
        // Before the probe file: a directory another sidecar writes is refused untouched.
        checkStatusDirFree(dir);
        probeWritable(probe, dir);
      }
      const kernel = probe === resolve(dir) ? undefined : kernelFilesystem(probe);
      if (kernel) {
        throw new StatusDirError(`the status directory ${dir} cannot be created: ${probe} is a ${kernel} filesystem, where the kernel makes every entry`);
      }
      return;
    } catch (err) {
      if (err instanceof StatusDirError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') refuseDanglingLink(dir, probe);
      if ((code === 'ENOENT' || code === 'ENOTDIR') && dirname(probe) !== probe) {
        probe = dirname(probe);
        continue;
      }
      throw new StatusDirError(`the status directory ${dir} is not writable: ${describeError(err)}`, { cause: err });
    }
  }
}

/**
 * Creates the status directory and proves it writable by writing and removing a probe file, by
 * the status files' own atomic write. StatusDirError naming the directory otherwise.
 */
export function prepareStatusDir(dir: string): void {
  try {
    makeDirs(dir);
    writeFileAtomic(dir, '.probe', '');
    rmSync(join(dir, '.probe'));
  } catch (err) {
    throw new StatusDirError(`the status directory ${dir} is not writable: ${describeError(err)}`, { cause: err });
  }
}

/** False only when `path` is no file an app could read a word from (absent, or a directory). */
function mayHoldText(path: string): boolean {
  try {
    return !lstatSync(path).isDirectory();
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/**
 * Writes the shared-volume files: status.json, is-leader, fencing-token, holder. Each is
 * replaced atomically, in an order that keeps every moment a polling reader can see
 * consistent (is-leader "true" always goes with this term's token in fencing-token):
 * - leaving a term (a step-down, or a new token): is-leader "false" and status.json first,
 *   before anything else changes, so a step-down reaches the app at once;
 * - starting a term: fencing-token (and holder, status.json) first, is-leader "true" last.
 */
export class StatusPublisher {
  readonly dir: string;
  private last = '';
  /**
   * The token of the term is-leader says "true" for on disk; null while it says "false".
   * Undefined until this publisher first wrote "false": the files may be a previous process's
   * (a sidecar restarted beside its app), leading for a term of its own, so the first publish
   * leaves that term as any step-down does, is-leader "false" first.
   */
  private leading: number | null | undefined = undefined;
  /**
   * Whether status.json, and is-leader, as they are on disk, may say that a term leads: as last
   * written (a write that threw left the file as it was: the rename is the last step), and
   * before that whatever an earlier process may have left, unless there is no such file.
   */
  private jsonMaySayLeader = true;
  private flagMaySayLeader = true;
  /** The last term a file was written to say leads (status.json or is-leader): one the app may have started work for. */
  private shown: number | null = null;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** Creates the directory and proves it writable by writing and removing a probe file. */
  prepare(): void {
    prepareStatusDir(this.dir);
    this.jsonMaySayLeader = mayHoldText(join(this.dir, 'status.json'));
    this.flagMaySayLeader = mayHoldText(join(this.dir, 'is-leader'));
  }

  /**
   * Whether an app reading the files may be told that some term leads (validUntil aside). When
   * not, a step-down that could not be written still reached every reader of the files: a term
   * begun but never written (a volume full as it took the lease) can be released at once.
   */
  mayShowLeader(): boolean {
    return this.jsonMaySayLeader || this.flagMaySayLeader;
  }

  /** Whether the files were ever written to say that term `token` leads, so its app may have begun its work. */
  showed(token: number): boolean {
    return this.shown === token;
  }

  /** Writes the files if anything but updatedAt changed. Returns whether it wrote. */
  publish(status: LeaderStatus): boolean {
    const key = JSON.stringify({ ...status, updatedAt: '' });
    if (key === this.last) return false;
    // Until every file is written, the disk holds neither the last state nor this one (a
    // failure part-way may leave status.json saying leader): the next publish must write,
    // even a state equal to the one before, or a step-down would be skipped as "unchanged".
    this.last = '';
    const json = JSON.stringify(status, null, 2) + '\n';
    const token = status.isLeader ? status.fencingToken : null;
    const leaving = this.leading !== null && token !== this.leading;
    if (leaving) {
      // "not leader" first, before anything else changes.
      writeFileAtomic(this.dir, 'is-leader', 'false\n');
      this.flagMaySayLeader = false;
      this.leading = null;
      if (token === null) {
        writeFileAtomic(this.dir, 'status.json', json);
        this.jsonMaySayLeader = false;
      }
    }
    writeFileAtomic(this.dir, 'fencing-token', status.fencingToken === null ? '' : `${status.fencingToken}\n`);
    writeFileAtomic(this.dir, 'holder', status.holder ? `${escapeControl(status.holder)}\n` : '');
    if (!(leaving && token === null)) {
      // From here the disk may say this token leads (status.json first): should a write below
      // fail, the next step-down still writes is-leader "false" before anything else.
      this.leading = token;
      // A write that throws has not renamed its file into place (the rename is its last step):
      // the file says what it said before.
      writeFileAtomic(this.dir, 'status.json', json);
      this.jsonMaySayLeader = status.isLeader;
      if (token !== null) this.shown = token;
      // "true" only after its token is in place.
      writeFileAtomic(this.dir, 'is-leader', token !== null ? 'true\n' : 'false\n');
      this.flagMaySayLeader = token !== null;
    }
    fsyncDir(this.dir);
    this.last = key;
    return true;
  }
}
