/**
 * The credential of `POST /leader/stopped`: a random key the sidecar writes into its status
 * directory at start (`drain-key`), which only whoever can read that directory has. In a pod that
 * is the containers that mount the status volume; on the network, /leader hands out the token of
 * a term to anyone, so the token alone cannot say who is asking (docs/drain.md, "Who may end a
 * drain"). Without a status directory there is no key to share, and nothing can end a drain.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { StatusDirError, describeError } from '../errors.js';
import { fsyncDir, writeFileAtomic } from '../util/atomic-file.js';

export const DRAIN_KEY_FILE = 'drain-key';
/**
 * Owner read-write, group read: the app reads it as the sidecar's user, in its group, or in the
 * status directory's group (a pod's fsGroup makes an emptyDir setgid, so the file takes that
 * group). Never world-readable: a status directory on a host is shared with its other users.
 */
export const DRAIN_KEY_MODE = 0o640;

/** One answer to a `POST /leader/stopped` whose credential is refused. */
export interface Refusal {
  code: 401 | 403;
  body: string;
  /** For 401: the scheme the client must use (RFC 9110: a 401 names one). */
  challenge?: string;
}

const CHALLENGE = 'Bearer realm="leasehold drain"';
const SCHEME = /^Bearer[ \t]+(\S+)[ \t]*$/i;

const digest = (s: string) => createHash('sha256').update(s).digest();

export class DrainKey {
  /** 32 random bytes as 64 hex digits: a line any client can read and send as is. */
  private readonly key = randomBytes(32).toString('hex');
  private readonly keyDigest = digest(this.key);

  /** @param dir the status directory; undefined: there is none, so every request is refused. */
  constructor(readonly dir: string | undefined) {}

  /**
   * Writes `drain-key` (mode 0640) by the status files' own atomic write: a temp file created
   * exclusively without following links, renamed over whatever is at the name (a planted link is
   * replaced, its target untouched). The key is never logged, nor echoed in any answer.
   */
  publish(): void {
    if (this.dir === undefined) return;
    try {
      writeFileAtomic(this.dir, DRAIN_KEY_FILE, `${this.key}\n`, DRAIN_KEY_MODE);
      fsyncDir(this.dir);
    } catch (err) {
      throw new StatusDirError(`the status directory ${this.dir} is not writable: cannot write ${DRAIN_KEY_FILE}: ${describeError(err)}`, { cause: err });
    }
  }

  /**
   * Null when `authorization` (the request's header) is `Bearer <this key>`, else the refusal.
   * Both sides are hashed first, so the comparison takes the same time whatever was sent and
   * however long it is.
   */
  refuse(authorization: string | undefined): Refusal | null {
    if (this.dir === undefined) {
      return { code: 403, body: 'this sidecar has no --status-dir, so no drain key: nothing can end its drain\n' };
    }
    const m = authorization === undefined ? null : SCHEME.exec(authorization);
    if (!m) {
      return {
        code: 401,
        challenge: CHALLENGE,
        body: `send the drain key: Authorization: Bearer <the content of ${DRAIN_KEY_FILE} in the status directory>\n`,
      };
    }
    if (!timingSafeEqual(digest(m[1]!), this.keyDigest)) {
      return {
        code: 403,
        body: `the drain key is not this sidecar's: read ${DRAIN_KEY_FILE} in its status directory again (a restarted sidecar writes a new one)\n`,
      };
    }
    return null;
  }
}
