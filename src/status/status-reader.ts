import { describeError } from '../errors.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LeaderStatus } from './leader-status.js';

export interface LeadershipView {
  /** True only if status.json says leader AND its validUntil has not passed. */
  isLeader: boolean;
  /** The token to present to the protected resource; null unless isLeader. */
  fencingToken: number | null;
  /** Why isLeader is false, for logs. */
  reason: string;
  status: LeaderStatus | null;
}

/**
 * How an app reads the sidecar's status volume safely. Leadership counts only while
 * `validUntil` is in the future: a frozen or dead sidecar stops renewing, and its last
 * "isLeader: true" must expire on its own. Even then the answer can be stale by the time the
 * app acts on it (the app itself may pause), which is why every write to the protected
 * resource must carry the fencing token and the resource must check it.
 */
export function readLeadership(statusDir: string, now: Date = new Date()): LeadershipView {
  let status: LeaderStatus;
  try {
    status = JSON.parse(readFileSync(join(statusDir, 'status.json'), 'utf8')) as LeaderStatus;
    // A sidecar older than the field writes none: it reads as running, as the type promises.
    status = { ...status, stoppedAt: status.stoppedAt ?? null };
  } catch (err) {
    return { isLeader: false, fencingToken: null, reason: `cannot read status: ${describeError(err)}`, status: null };
  }
  if (!status.isLeader) return { isLeader: false, fencingToken: null, reason: `not leader (holder: ${status.holder || 'none'})`, status };
  const validUntil = status.validUntil ? Date.parse(status.validUntil) : NaN;
  if (!Number.isFinite(validUntil) || validUntil <= now.getTime()) {
    return { isLeader: false, fencingToken: null, reason: `status expired at ${status.validUntil}: the sidecar may be frozen`, status };
  }
  if (typeof status.fencingToken !== 'number') return { isLeader: false, fencingToken: null, reason: 'status has no fencing token', status };
  return { isLeader: true, fencingToken: status.fencingToken, reason: 'leader', status };
}
