/**
 * One sidecar per status directory. Two writing one directory take turns on its files, and the
 * app reads one's "not leader" while the other leads. So a sidecar claims its directory before
 * it writes there, and one that finds the directory claimed refuses to start.
 *
 * The claim is a listening Unix socket bound by path inside the directory
 * (`.leasehold-claim.<16 random hex digits>.sock`): binding one needs write access to the
 * directory, which whoever could squat it would need, and then they could rewrite every status
 * file anyway. (It was a name in Linux's abstract namespace, which any local user could bind
 * first, and the sidecar then refused to start, blaming "another running sidecar".)
 *
 * A claimant binds its own socket, then connects to every other claim socket in the directory.
 * A socket answers with one byte: `H`, its claim is held, or `P`, its claimant is still looking.
 * One held (or one that accepts and says nothing: a stopped sidecar) refuses the claimant,
 * which removes its own. Of two still looking, the one whose name sorts later gives way, and
 * the other looks again until it finds no one: only a look that finds no other socket
 * listening makes a claim held. Each looks only after it listens, so of two claimants the later
 * to look sees the other: never two claims. A socket nobody listens on is a dead sidecar's (the
 * kernel refuses connections to it at once, SIGKILL included; a stopped process's socket still
 * accepts): it does not block, and is removed once old enough that it cannot be one just bound
 * and not yet listening.
 *
 * The directory is reached through a descriptor (`/proc/self/fd/N/...`): any path to it, links
 * or bind mounts, finds the same sockets, and a long path still fits a socket address's 108
 * bytes. Sockets bound by path reach across network namespaces, as the directory does. Linux
 * only: elsewhere nothing is claimed.
 */
import { createConnection, createServer, type Server } from 'node:net';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, lstatSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { StatusDirError, StatusDirInUseError, describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { makeDirs } from '../util/make-dirs.js';

/** A claim socket's name: the random part keeps each claimant's own. */
const CLAIM_SOCKET = /^\.leasehold-claim\.[0-9a-f]{16}\.sock$/;

/**
 * A claim socket nobody listens on and older than this is a dead sidecar's, and is removed. A
 * younger one may be a claimant's between its bind and its listen (microseconds): left alone.
 */
const DEAD_AFTER_MS = 10_000;

function inUse(dir: string): StatusDirInUseError {
  return new StatusDirInUseError(`the status directory ${dir} is written by another running sidecar: give each sidecar a status directory of its own`);
}

/** The claim sockets in the directory open as `fd`. */
function claimSockets(fd: number): string[] {
  return readdirSync(`/proc/self/fd/${fd}`).filter((name) => CLAIM_SOCKET.test(name));
}

/**
 * Throws StatusDirInUseError when a running sidecar holds a claim on `dir`, an existing
 * directory: its claim sockets looked up in /proc/net/unix, writing nothing, so a start refused
 * for it has written nothing either. A hint only (this network namespace's sockets; two
 * sidecars starting at once both pass it): the claim itself (claimStatusDir) decides.
 */
export function checkStatusDirFree(dir: string): void {
  if (process.platform !== 'linux') return;
  let names: string[];
  let table: string;
  try {
    const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      names = claimSockets(fd);
    } finally {
      closeSync(fd);
    }
    if (names.length === 0) return;
    table = readFileSync('/proc/net/unix', 'latin1');
  } catch {
    return;
  }
  // "Num RefCount Protocol Flags Type St Inode Path": a bound socket's path is the last field.
  for (const line of table.split('\n')) {
    if (names.some((name) => line.endsWith(`/${name}`))) throw inUse(dir);
  }
}

/** What a claim socket says: nobody listens, its claimant is still looking, or its claim is held. */
type Answer = 'dead' | 'looking' | 'held';

/**
 * How long a connected claim socket may take to say `P`: past it (a stopped sidecar accepts
 * through the kernel and never writes) the claim counts as held.
 */
const ANSWER_MS = 1_000;

/** Connects to the claim socket at `path` and reads its one byte. */
function ask(path: string): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = createConnection({ path });
    let connected = false;
    const done = (answer: Answer) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done('held'), ANSWER_MS);
    timer.unref();
    socket.once('connect', () => (connected = true));
    socket.once('data', (chunk: Buffer) => done(chunk[0] === LOOKING ? 'looking' : 'held'));
    // Closed before a byte: its claimant is closing it (giving way, or stopping): not a claim.
    socket.once('end', () => done('dead'));
    socket.once('error', (err: NodeJS.ErrnoException) => {
      // Refused or gone: nobody listens; reset: its listener closed it, as above. Anything else
      // (a socket we may not connect to): a claim we cannot prove dead counts as held.
      const closing = err.code === 'ECONNRESET' || (connected && err.code === 'EPIPE');
      done(closing || err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? 'dead' : 'held');
    });
  });
}

const LOOKING = 0x50; // 'P'
const HELD = 0x48; // 'H'

/** How many times a claimant looks again while others still look, and how long it waits between. */
const LOOKS = 50;
const LOOK_AGAIN_MS = 20;

/** A status directory claimed by this process until release(). */
export class StatusDirClaim {
  private constructor(
    private readonly server: Server | null,
    /** The directory's descriptor, kept open to remove the socket through it at release. */
    private readonly fd: number | null,
    private readonly name: string | null,
  ) {}

  /**
   * Claims `dir`, an existing directory. Throws StatusDirInUseError when another process holds
   * it. Where it cannot be claimed at all (not Linux, no socket can be bound there), returns an
   * empty claim and `unclaimed` says why: the sidecar runs as before, without the check.
   */
  static async take(dir: string, unclaimed: (why: string) => void = () => {}): Promise<StatusDirClaim> {
    if (process.platform !== 'linux') return new StatusDirClaim(null, null, null);
    let fd: number;
    try {
      fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    } catch (err) {
      unclaimed(describeError(err));
      return new StatusDirClaim(null, null, null);
    }
    const name = `.leasehold-claim.${randomBytes(8).toString('hex')}.sock`;
    const at = (n: string) => `/proc/self/fd/${fd}/${n}`;
    let held = false;
    const server = createServer((socket) => {
      socket.on('error', () => {});
      socket.end(Buffer.from([held ? HELD : LOOKING]));
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        // Any user may connect (a socket's connect needs write permission on its file): a
        // sidecar of another user must see this claim, not mistake it for a dead one.
        server.listen({ path: at(name), writableAll: true }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      closeSync(fd);
      unclaimed((err as Error).message);
      return new StatusDirClaim(null, null, null);
    }
    // The claim must not keep a process alive that has nothing else left to do.
    server.unref();
    const claim = new StatusDirClaim(server, fd, name);
    try {
      for (let look = 0; ; look++) {
        let othersLooking = false;
        for (const other of claimSockets(fd)) {
          if (other === name) continue;
          const answer = await ask(at(other));
          if (answer === 'held') throw inUse(dir);
          if (answer === 'dead') removeIfDead(at(other));
          // Of two still looking, the later name gives way; the earlier waits for it to go.
          else if (other < name) throw inUse(dir);
          else othersLooking = true;
        }
        if (!othersLooking) break;
        if (look >= LOOKS) throw inUse(dir);
        await new Promise((resolve) => setTimeout(resolve, LOOK_AGAIN_MS));
      }
      held = true;
    } catch (err) {
      await claim.release();
      throw err;
    }
    return claim;
  }

  /** Removes the socket and stops listening: the directory is free for the next sidecar. */
  async release(): Promise<void> {
    const { server, fd, name } = this;
    if (!server || fd === null || name === null) return;
    rmSync(`/proc/self/fd/${fd}/${name}`, { force: true });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    closeSync(fd);
  }
}

/** Removes a claim socket nobody listens on once it is old enough to be a dead sidecar's. */
function removeIfDead(path: string): void {
  try {
    if (Date.now() - lstatSync(path).ctimeMs > DEAD_AFTER_MS) rmSync(path, { force: true });
  } catch {
    // Gone already, or not ours to remove: it does not block either way.
  }
}

/**
 * A sidecar's start: creates the status dir if needed, then claims it (StatusDirInUseError
 * when another sidecar writes it). Where no claim can be made, says so on `log` and goes on.
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
