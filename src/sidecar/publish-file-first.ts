/**
 * One publication of what the app reads, for the leader sidecar and the shard sidecar alike: the
 * status file first, then HTTP and the streams, so a stream never runs ahead of the file, and
 * never saying more there than the file may (docs/design.md, "A holder must be able to work").
 */
import { describeError } from '../errors.js';
import type { StatusWritable } from './status-writable.js';

/** The part of a status that says why its sidecar stands aside (status.json's, shards.json's). */
interface StandingAsideField {
  standingAside: { reason: string; since: string } | null;
}

/**
 * What HTTP and the streams may say: never more than the file. While its last write failed, the
 * file may say less than the sidecar knows, so `status` is cut (`cut`: no term, no shard held),
 * with the reason for standing aside.
 */
export function notMoreThanTheFile<S extends StandingAsideField>(status: S, writable: StatusWritable | null, cut: (status: S) => S): S {
  const aside = writable?.standAside() ?? null;
  if (aside === null) return status;
  return { ...cut(status), standingAside: status.standingAside ?? { reason: aside.reason, since: aside.since.toISOString() } };
}

export interface FileFirst<S> {
  /** Writes the file; throws when it could not. Null: no file (no status directory, or not started). */
  write: ((status: S) => void) | null;
  /** Hands HTTP and the streams what they may say of `status` (notMoreThanTheFile). */
  send: (status: S) => void;
  writable: StatusWritable | null;
}

/**
 * Writes `status` to the file, then sends it. A failed write makes the sidecar stand aside
 * (StatusWritable logs it once per failure, not per retry). `error`: why the file could not be
 * written, or null. `again`: this write ended a failure, and so carried the old reason for
 * standing aside: the caller publishes once more.
 */
export function publishFileFirst<S>(status: S, o: FileFirst<S>): { error: string | null; again: boolean } {
  let error: string | null = null;
  try {
    o.write?.(status);
  } catch (err) {
    error = describeError(err);
    o.writable?.failed(err);
  }
  o.send(status);
  return { error, again: error === null && (o.writable?.succeeded() ?? false) };
}
