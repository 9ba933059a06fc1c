/**
 * One sidecar per status directory. Two writing one directory take turns on its files, and the
 * app reads one's "not leader" while the other leads. So a sidecar claims its directory before
 * it writes there, and one that finds the directory claimed refuses to start.
 *
 * The claim is a listening Unix socket in Linux's abstract namespace, named after the
 * directory's device and inode (not its path: two paths, links or bind mounts, can name one
 * directory). The kernel makes it what a lock file cannot be:
 * - atomic: of two sidecars binding the name at once, exactly one succeeds;
 * - never stale: the kernel frees the name when its process dies, SIGKILL included, so a
 *   crashed sidecar does not block the next start, and no PID is recorded that another
 *   process could come to wear.
 * Its reach is one network namespace: every container of a pod shares one, as do the processes
 * of a host; sidecars in different network namespaces that share a host directory are not
 * seen (docs/status-files.md). Abstract sockets are Linux's: elsewhere nothing is claimed.
 */
import { createServer, type Server } from 'node:net';
import { readFileSync, statSync } from 'node:fs';
import { StatusDirError, StatusDirInUseError, describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { makeDirs } from '../util/make-dirs.js';

/** An abstract socket's name fills sun_path's 108 bytes but for its leading NUL. */
const NAME_BYTES = 107;

/**
 * The claim's name for the directory at `dir` (which must exist), without the leading NUL. It
 * fills the whole address, padded with dots: Node 20 binds a shorter name padded with NULs to
 * that length, and Node 22 and later bind it as given; a full-length name is one address for
 * both, so sidecars on different Node versions still see each other's claims.
 */
export function claimName(dir: string): string {
  const st = statSync(dir, { bigint: true });
  return `leasehold/status-dir/${st.dev}/${st.ino}/`.padEnd(NAME_BYTES, '.');
}

function inUse(dir: string): StatusDirInUseError {
  return new StatusDirInUseError(`the status directory ${dir} is written by another running sidecar: give each sidecar a status directory of its own`);
}

/**
 * Throws StatusDirInUseError when a running sidecar holds the claim on `dir`, an existing
 * directory: read from /proc/net/unix, writing nothing, so a start refused for it has written
 * nothing either. A hint only: two sidecars starting at once both pass it, and the claim itself
 * (claimStatusDir) decides between them.
 */
export function checkStatusDirFree(dir: string): void {
  if (process.platform !== 'linux') return;
  let table: string;
  let name: string;
  try {
    name = `@${claimName(dir)}`;
    table = readFileSync('/proc/net/unix', 'latin1');
  } catch {
    return;
  }
  // "Num RefCount Protocol Flags Type St Inode Path": a bound socket's path is the last field.
  for (const line of table.split('\n')) if (line.endsWith(` ${name}`)) throw inUse(dir);
}

/** A status directory claimed by this process until release(). */
export class StatusDirClaim {
  private constructor(private readonly server: Server | null) {}

  /**
   * Claims `dir`, an existing directory. Throws StatusDirInUseError when another process holds
   * it. Where it cannot be claimed at all (not Linux, sockets refused), returns an empty claim
   * and `unclaimed` says why: the sidecar runs as before, without the check.
   */
  static async take(dir: string, unclaimed: (why: string) => void = () => {}): Promise<StatusDirClaim> {
    if (process.platform !== 'linux') return new StatusDirClaim(null);
    const server = createServer((socket) => socket.destroy());
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ path: `\0${claimName(dir)}` }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw inUse(dir);
      unclaimed((err as Error).message);
      return new StatusDirClaim(null);
    }
    // The claim must not keep a process alive that has nothing else left to do.
    server.unref();
    return new StatusDirClaim(server);
  }

  /** Frees the name for the next sidecar. */
  async release(): Promise<void> {
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * A sidecar's start: creates the status dir if needed (the claim names it by its inode), then
 * claims it (StatusDirInUseError when another sidecar writes it). Where no claim can be made,
 * says so on `log` and goes on.
 */
export async function claimStatusDir(dir: string, log: Logger): Promise<StatusDirClaim> {
  try {
    makeDirs(dir);
  } catch (err) {
    throw new StatusDirError(`the status directory ${dir} cannot be created: ${describeError(err)}`, { cause: err });
  }
  return StatusDirClaim.take(dir, (why) =>
    log.warn('the status directory cannot be claimed: another sidecar writing it would not be refused', { dir, error: why }),
  );
}
