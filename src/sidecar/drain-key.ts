/**
 * The credential of `POST /leader/stopped`: a random key the sidecar writes into its status
 * directory at start (`drain-key`), which only those the directory's owner allows can read
 * (drainKeyOwnership). In a pod that is the containers that mount the status volume; on the network, /leader hands out the token of
 * a term to anyone, so the token alone cannot say who is asking (docs/drain.md, "Who may end a
 * drain"). Without a status directory there is no key to share, and nothing can end a drain.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { statSync } from 'node:fs';
import { StatusDirError, describeError } from '../errors.js';
import { fsyncDir, writeFileAtomic } from '../util/atomic-file.js';

export const DRAIN_KEY_FILE = 'drain-key';

/** What the key file is made as: its mode, and the group it is given. */
export interface KeyOwnership {
  mode: number;
  gid: number;
}

/** Who this process is: its effective user and group, and its supplementary groups. */
export interface ProcessIds {
  uid: number;
  gid: number;
  groups: readonly number[];
}

const ownIds = (): ProcessIds => ({ uid: process.geteuid!(), gid: process.getegid!(), groups: process.getgroups!() });

/**
 * Who may read the key follows who owns the status directory. The app reads it as the
 * sidecar's user or through a group (a pod's fsGroup makes an emptyDir setgid, owned by root,
 * and gives every container that group), so a directory owned by this user or by root gets a
 * key of mode 0640: its group is the directory's when the directory is setgid and this process
 * is in that group, else this process's own. The owner's settings on their directory, its
 * default ACL included, apply as they chose.
 *
 * A directory owned by anyone else (made before the sidecar by another user, as `/tmp/a` can
 * be) gets a key of mode 0600 in this process's own group: its setgid group would otherwise
 * read the key, and its default ACL would give the users it names the key's group-class bits
 * (an ACL's mask is the mode's group bits: 0 here, so no named user or group reads it). Node
 * has no call to read or remove an ACL, so the mode is what keeps it out.
 */
export function drainKeyOwnership(dir: { uid: number; gid: number; mode: number }, me: ProcessIds = ownIds()): KeyOwnership {
  if (dir.uid !== me.uid && dir.uid !== 0) return { mode: 0o600, gid: me.gid };
  const inGroup = dir.gid === me.gid || me.groups.includes(dir.gid);
  return { mode: 0o640, gid: (dir.mode & 0o2000) !== 0 && inGroup ? dir.gid : me.gid };
}

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
   * Writes `drain-key` (mode and group: drainKeyOwnership) by the status files' own atomic
   * write: a temp file created exclusively without following links, given its group and mode
   * before a byte is written, renamed over whatever is at the name (a planted link is replaced,
   * its target untouched). The key is never logged, nor echoed in any answer.
   */
  publish(): void {
    if (this.dir === undefined) return;
    try {
      const { mode, gid } = drainKeyOwnership(statSync(this.dir));
      writeFileAtomic(this.dir, DRAIN_KEY_FILE, `${this.key}\n`, mode, gid);
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
