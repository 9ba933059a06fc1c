/**
 * `leasehold status --status-dir DIR`: besides the lease in the store, one candidate as its own
 * sidecar sees itself (its status.json): leading, campaigning, or standing aside and why. The
 * store holds only the lease; why a candidate stands aside (its app's health) is known only to
 * that candidate.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { describeError } from '../src/errors.js';
import { escapeForTerminal } from '../src/util/escape-control.js';

/** More than any status.json the sidecar writes; a larger file is not one of its. */
const MAX_STATUS_BYTES = 64 * 1024;

export type CandidateView =
  | { statusDir: string; identity: string; isLeader: boolean; standingAside: { reason: string; since: string } | null; stoppedAt: string | null }
  | { statusDir: string; error: string };

/**
 * Reads a regular file only: opened without blocking, so a FIFO (or a device) planted in the
 * directory is refused at once instead of holding `status` on an open or a read that never ends.
 */
export function readBounded(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw new Error("not a regular file: not a status file of leasehold's");
    const buf = Buffer.alloc(MAX_STATUS_BYTES + 1);
    let n = 0;
    for (let got = -1; got !== 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null);
    if (n > MAX_STATUS_BYTES) throw new Error(`larger than ${MAX_STATUS_BYTES} bytes: not a status file of leasehold's`);
    return buf.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** The candidate its status directory describes; an unreadable or foreign file is told as `error`, not thrown. */
export function readCandidate(statusDir: string): CandidateView {
  const path = join(statusDir, 'status.json');
  try {
    const s = JSON.parse(readBounded(path)) as Record<string, unknown>;
    const aside = s.standingAside as { reason?: unknown; since?: unknown } | null | undefined;
    // stoppedAt is absent from the files of sidecars older than the field: read as running.
    const stoppedAt = s.stoppedAt ?? null;
    if (
      !isString(s.identity) ||
      typeof s.isLeader !== 'boolean' ||
      (aside != null && (!isString(aside.reason) || !isString(aside.since))) ||
      (stoppedAt !== null && !isString(stoppedAt))
    ) {
      throw new Error('not a status file of leasehold');
    }
    return {
      statusDir,
      identity: s.identity,
      isLeader: s.isLeader,
      standingAside: aside ? { reason: aside.reason as string, since: aside.since as string } : null,
      stoppedAt,
    };
  } catch (err) {
    return { statusDir, error: `cannot read ${path}: ${describeError(err)}` };
  }
}

/**
 * One line: `<identity>: leader`, `standby, campaigning`, `standing aside since <time>: <reason>`,
 * or `stopped at <time>` (its last file, not a standby); escaped for a terminal.
 */
export function formatCandidate(c: CandidateView): string {
  if ('error' in c) return escapeForTerminal(c.error);
  const state = c.stoppedAt
    ? `stopped at ${c.stoppedAt}, not campaigning`
    : c.standingAside
      ? `standing aside since ${c.standingAside.since}: ${c.standingAside.reason}`
      : c.isLeader
        ? 'leader'
        : 'standby, campaigning';
  return escapeForTerminal(`${c.identity}: ${state}`);
}
